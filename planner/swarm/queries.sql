-- The swarm planner's named queries (same format and tokens as solforge/planner/ledger/queries.sql).

-- insert_swarm_run --
-- Start a run.
INSERT INTO swarm_run (id, status, config_json, created_at, updated_at, ended_at, heartbeat_at, active_s, pid,
                       host, server_url, stop_requested, stop_reason)
VALUES (:id, 'running', :config_json, $NOW, $NOW, NULL, $NOW, 0, :pid, :host, NULL, FALSE, NULL)

-- get_swarm_run --
-- One run.
SELECT *, $NOW AS now FROM swarm_run WHERE id = :id

-- list_swarm_runs --
-- The latest runs, newest first.
SELECT *, $NOW AS now FROM swarm_run ORDER BY created_at DESC, id LIMIT :limit

-- claim_swarm_run --
-- A planner process takes over a run (start or resume): new pid, status running, stop flag cleared.
UPDATE swarm_run SET status = 'running', pid = :pid, host = :host, heartbeat_at = $NOW, updated_at = $NOW,
                     ended_at = NULL, stop_requested = FALSE, stop_reason = NULL, config_json = :config_json
WHERE id = :id

-- swarm_run_heartbeat --
-- The planner's tick: it is alive, and the run has been active this long.
UPDATE swarm_run SET heartbeat_at = $NOW, updated_at = $NOW, active_s = :active_s,
                     server_url = COALESCE(:server_url, server_url)
WHERE id = :id
RETURNING stop_requested, stop_reason

-- set_swarm_run_status --
-- Move a run to a status; terminal statuses stamp ended_at.
UPDATE swarm_run SET status = :status, updated_at = $NOW,
                     ended_at = CASE WHEN :ended THEN $NOW ELSE NULL END,
                     stop_reason = COALESCE(:reason, stop_reason)
WHERE id = :id

-- request_swarm_stop --
-- Ask a run's planner to stop (it polls this flag every tick).
UPDATE swarm_run SET stop_requested = TRUE, stop_reason = :reason, updated_at = $NOW
WHERE id = :id AND status IN ('running', 'stopping')
RETURNING id, pid, host

-- insert_swarm_agent --
-- Add an agent (its ledger identity exists already) to a run.
INSERT INTO swarm_agent (name, run_id, idx, state, problem, pid, workspace, log_path, restarts, started_at,
                         activity_at, phase, note, updated_at)
VALUES (:name, :run_id, :idx, 'idle', NULL, NULL, :workspace, :log_path, 0, NULL, NULL, NULL, NULL, $NOW)

-- swarm_agents --
-- A run's agents, with their ledger last_seen_at (an MCP call authenticates and stamps it).
SELECT a.*, g.last_seen_at AS last_seen_at FROM swarm_agent AS a JOIN agent AS g ON g.name = a.name
WHERE a.run_id = :run_id ORDER BY a.idx

-- save_swarm_agent --
-- Write an agent's state (the run's planner is the only writer of its agents).
UPDATE swarm_agent SET state = :state, problem = :problem, pid = :pid, restarts = :restarts,
                       started_at = :started_at, activity_at = :activity_at, phase = :phase, note = :note,
                       updated_at = $NOW
WHERE name = :name AND run_id = :run_id

-- stop_swarm_agents --
-- Mark every agent of a run stopped (their processes are gone).
UPDATE swarm_agent SET state = 'stopped', pid = NULL, updated_at = $NOW,
                       note = COALESCE(:note, note)
WHERE run_id = :run_id AND state != 'failed'

-- open_swarm_assignment --
-- Give a problem to an agent. The unique indexes refuse a second open assignment of the agent, or of
-- the problem under the same share number.
INSERT INTO swarm_assignment (run_id, agent, problem, share, reason, value, started_at, ended_at, end_reason)
VALUES (:run_id, :agent, :problem, :share, :reason, :value, $NOW, NULL, NULL)
RETURNING id, started_at

-- close_swarm_assignment --
-- End an agent's open assignment.
UPDATE swarm_assignment SET ended_at = $NOW, end_reason = :end_reason
WHERE agent = :agent AND ended_at IS NULL
RETURNING id, problem, share, started_at, ended_at

-- close_swarm_assignments --
-- End every open assignment of a run.
UPDATE swarm_assignment SET ended_at = $NOW, end_reason = :end_reason
WHERE run_id = :run_id AND ended_at IS NULL

-- swarm_assignments --
-- A run's assignment history, oldest first.
SELECT *, $NOW AS now FROM swarm_assignment WHERE run_id = :run_id ORDER BY started_at, id

-- swarm_job_outcomes --
-- Evaluated benchmark and submit jobs of a run's agents that finished at or after :after, with their
-- per-workload results (one row per workload; a job without runs has one row of NULLs).
SELECT j.id, j.agent, j.problem, j.kind, j.status, j.solution_hash, j.created_at, j.finished_at,
       r.status AS run_status, r.sol_score, r.speedup
FROM job AS j
JOIN swarm_agent AS a ON a.name = j.agent
LEFT JOIN run AS r ON r.job_id = j.id
WHERE a.run_id = :run_id AND j.kind != 'compile' AND j.status = 'done' AND j.finished_at >= :after
ORDER BY j.finished_at, j.id

-- swarm_open_jobs --
-- Jobs of a run's agents that are not finished.
SELECT j.id, j.agent, j.kind, j.status FROM job AS j JOIN swarm_agent AS a ON a.name = j.agent
WHERE a.run_id = :run_id AND j.status IN ('queued', 'running')

-- swarm_usage --
-- What a run's agents have used: slot-seconds under lease and slot jobs queued.
SELECT
    (SELECT COALESCE(SUM(COALESCE(l.released_at, $NOW) - l.acquired_at), 0)
     FROM lease AS l JOIN job AS j ON j.id = l.job_id JOIN swarm_agent AS a ON a.name = j.agent
     WHERE a.run_id = :run_id) AS slot_seconds,
    (SELECT COUNT(*) FROM job AS j JOIN swarm_agent AS a ON a.name = j.agent
     WHERE a.run_id = :run_id AND j.needs_gpu) AS slot_jobs

-- slot_queue --
-- Queue pressure on the slots: slot jobs queued (of anyone), and slots in service under a live worker.
SELECT
    (SELECT COUNT(*) FROM job WHERE status = 'queued' AND needs_gpu) AS queued,
    (SELECT COUNT(*) FROM gpu AS g JOIN worker AS w ON w.id = g.worker_id
     WHERE g.status = 'available' AND w.stopped_at IS NULL AND w.heartbeat_at > $NOW - :live_s) AS slots

-- job_request --
-- A job's request (its solution) by id.
SELECT request_json FROM job_payload WHERE job_id = :job_id

-- agent_submissions_on --
-- An agent's submissions of one problem.
SELECT id, solution_hash, score, speedup, passed, total, job_id, created_at FROM submission
WHERE agent = :agent AND problem = :problem

-- run_evaluations --
-- A run's slot jobs (benchmarks and submissions) that finished with a report, for the run's summary.
SELECT COUNT(*) AS n FROM job AS j JOIN swarm_agent AS a ON a.name = j.agent
WHERE a.run_id = :run_id AND j.needs_gpu AND j.status = 'done'

-- run_worker_starts --
-- The start events of the workers that held a run's leases (each names its slots' lanes), for the summary.
SELECT detail_json FROM event
WHERE kind = 'worker.started' AND worker_id IN (
    SELECT l.worker_id FROM lease AS l JOIN job AS j ON j.id = l.job_id JOIN swarm_agent AS a ON a.name = j.agent
    WHERE a.run_id = :run_id)

-- run_leases --
-- Every lease a run's jobs held, with its slot and its job's kind and status, for the run's summary.
SELECT l.gpu_id, l.job_id, j.kind, j.status, l.acquired_at, COALESCE(l.released_at, $NOW) AS released_at
FROM lease AS l JOIN job AS j ON j.id = l.job_id JOIN swarm_agent AS a ON a.name = j.agent
WHERE a.run_id = :run_id
ORDER BY l.acquired_at, l.id
