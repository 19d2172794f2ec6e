-- The ledger's hand-written SQL, one named query per section.
--
-- A section starts with a header line "-- name --" (both backends) or "-- name@sqlite --" /
-- "-- name@postgresql --" (one backend), then a one-line description. Parameters are named
-- (:param, bound by SQLAlchemy for either driver). Three tokens are replaced per backend when the
-- file is loaded (solforge.planner._sql):
--   $NOW       the database's clock as UNIX seconds (float); stable within one statement
--   $LEAST     LEAST on PostgreSQL, MIN on SQLite (the scalar forms)
--   $GREATEST  GREATEST on PostgreSQL, MAX on SQLite
-- Every time the ledger compares or stores is taken from $NOW, never from a worker's clock.

-- insert_agent --
-- Create an agent; token_hash is the SHA-256 hex of its bearer token, or NULL for a local agent.
INSERT INTO agent (name, token_hash, created_at, last_seen_at, disabled)
VALUES (:name, :token_hash, $NOW, NULL, FALSE)
ON CONFLICT (name) DO NOTHING
RETURNING name, created_at, last_seen_at, disabled, token_hash

-- get_agent --
-- One agent by name.
SELECT name, created_at, last_seen_at, disabled, token_hash
FROM agent WHERE name = :name

-- agent_by_token --
-- The enabled agent holding a token (by its hash), marking it seen.
UPDATE agent SET last_seen_at = $NOW
WHERE token_hash = :token_hash AND disabled = FALSE
RETURNING name, created_at, last_seen_at, disabled, token_hash

-- set_agent_token --
-- Replace an agent's token hash (rotate); NULL removes token access.
UPDATE agent SET token_hash = :token_hash WHERE name = :name
RETURNING name, created_at, last_seen_at, disabled, token_hash

-- set_agent_disabled --
-- Disable or enable an agent; a disabled agent cannot authenticate or enqueue.
UPDATE agent SET disabled = :disabled WHERE name = :name
RETURNING name, created_at, last_seen_at, disabled, token_hash

-- ensure_problem --
-- Remember a problem the first time a job names it; fill in its op type and category when known.
INSERT INTO problem (name, op_type, category, first_seen_at)
VALUES (:name, :op_type, :category, $NOW)
ON CONFLICT (name) DO UPDATE SET op_type = COALESCE(excluded.op_type, problem.op_type),
                                 category = COALESCE(excluded.category, problem.category)

-- insert_job --
-- Queue a job.
INSERT INTO job (
    id, agent, kind, problem, solution_name, solution_hash, priority, status, needs_gpu, slot_kind,
    attempts, max_attempts, timeout_s, created_at, run_after, updated_at, cancel_requested
) VALUES (
    :id, :agent, :kind, :problem, :solution_name, :solution_hash, :priority, 'queued', :needs_gpu, :slot_kind,
    0, :max_attempts, :timeout_s, $NOW, $NOW, $NOW, FALSE
)
ON CONFLICT (id) DO NOTHING

-- insert_job_payload --
-- A queued job's request (the result arrives with set_result).
INSERT INTO job_payload (job_id, request_json, result_json) VALUES (:id, :request_json, NULL)
ON CONFLICT (job_id) DO NOTHING

-- get_request --
-- The request a claimed job runs.
SELECT request_json FROM job_payload WHERE job_id = :job_id

-- set_result --
-- Store a finished job's report.
UPDATE job_payload SET result_json = :result_json WHERE job_id = :job_id

-- get_job --
-- One job with its result, only if it belongs to the agent.
SELECT job.*, p.result_json FROM job LEFT JOIN job_payload AS p ON p.job_id = job.id
WHERE job.id = :id AND job.agent = :agent

-- get_job_any --
-- One job regardless of its owner (operators, the worker, tests).
SELECT * FROM job WHERE id = :id

-- queue_position --
-- Queued jobs of the same class ahead of one (by priority and age; fairness can reorder them).
SELECT COUNT(*) AS ahead FROM job
WHERE status = 'queued' AND needs_gpu = :needs_gpu
  AND (priority > :priority OR (priority = :priority AND created_at < :created_at))

-- any_claimable --
-- Cheap read before a claim: is any job of this class ready? Saves a write lock when idle.
SELECT id FROM job
WHERE status = 'queued' AND needs_gpu = :needs_gpu AND run_after <= $NOW
  AND (slot_kind IS NULL OR slot_kind = :slot_kind)
LIMIT 1

-- claim_job@sqlite --
-- Claim the next job in one statement (run inside BEGIN IMMEDIATE, which serialises writers).
-- Order (the fairness rule): the agent with the fewest running jobs of this class, then the fewest
-- started within the fairness window, then the job's priority (high first), then age, then id.
UPDATE job SET
    status = 'running', attempts = attempts + 1, started_at = $NOW, heartbeat_at = $NOW,
    deadline_at = $NOW + :lease_s, worker_id = :worker_id, gpu_id = :gpu_id, claim_token = :token,
    updated_at = $NOW, progress_json = NULL, error = NULL
WHERE status = 'queued' AND id = (
    SELECT j.id FROM job AS j
    LEFT JOIN (
        SELECT agent, SUM(running) AS running, SUM(recent) AS recent FROM (
            SELECT agent, 1 AS running, 0 AS recent FROM job WHERE status = 'running' AND needs_gpu = :needs_gpu
            UNION ALL
            SELECT agent, 0, 1 FROM job WHERE needs_gpu = :needs_gpu AND started_at >= $NOW - :fair_window_s
        ) AS counted GROUP BY agent
    ) AS agent_load ON agent_load.agent = j.agent
    WHERE j.status = 'queued' AND j.needs_gpu = :needs_gpu AND j.run_after <= $NOW
      AND (j.slot_kind IS NULL OR j.slot_kind = :slot_kind)
    ORDER BY COALESCE(agent_load.running, 0), COALESCE(agent_load.recent, 0), j.priority DESC, j.created_at, j.id
    LIMIT 1
)
RETURNING id, agent, kind, problem, attempts, max_attempts, timeout_s, claim_token

-- claim_job@postgresql --
-- Claim the next job in one statement: FOR UPDATE SKIP LOCKED lets concurrent workers pass each
-- other's candidate. Same order as on SQLite (the fairness rule).
WITH agent_load AS (
    SELECT agent, SUM(running) AS running, SUM(recent) AS recent FROM (
        SELECT agent, 1 AS running, 0 AS recent FROM job WHERE status = 'running' AND needs_gpu = :needs_gpu
        UNION ALL
        SELECT agent, 0, 1 FROM job WHERE needs_gpu = :needs_gpu AND started_at >= $NOW - :fair_window_s
    ) AS counted GROUP BY agent
), next_job AS (
    SELECT j.id FROM job AS j
    LEFT JOIN agent_load ON agent_load.agent = j.agent
    WHERE j.status = 'queued' AND j.needs_gpu = :needs_gpu AND j.run_after <= $NOW
      AND (j.slot_kind IS NULL OR j.slot_kind = :slot_kind)
    ORDER BY COALESCE(agent_load.running, 0), COALESCE(agent_load.recent, 0), j.priority DESC, j.created_at, j.id
    LIMIT 1
    FOR UPDATE OF j SKIP LOCKED
)
UPDATE job SET
    status = 'running', attempts = job.attempts + 1, started_at = $NOW, heartbeat_at = $NOW,
    deadline_at = $NOW + :lease_s, worker_id = :worker_id, gpu_id = :gpu_id, claim_token = :token,
    updated_at = $NOW, progress_json = NULL, error = NULL
FROM next_job
WHERE job.id = next_job.id AND job.status = 'queued'
RETURNING job.id, job.agent, job.kind, job.problem, job.attempts, job.max_attempts, job.timeout_s,
          job.claim_token

-- lock_gpu@sqlite --
-- The slot's state before leasing it (BEGIN IMMEDIATE already excludes other writers).
SELECT id, status, needs_check FROM gpu WHERE id = :gpu_id

-- lock_gpu@postgresql --
-- Lock the slot's row for the claim transaction; a slot another worker is leasing right now is skipped.
SELECT id, status, needs_check FROM gpu WHERE id = :gpu_id FOR UPDATE SKIP LOCKED

-- active_lease --
-- The slot's unreleased lease, if any.
SELECT id, job_id, worker_id, deadline_at FROM lease WHERE gpu_id = :gpu_id AND released_at IS NULL

-- insert_lease --
-- Lease a slot for a job; the partial unique index uq_lease_active_gpu refuses a second live lease.
INSERT INTO lease (gpu_id, job_id, worker_id, token, acquired_at, heartbeat_at, deadline_at)
VALUES (:gpu_id, :job_id, :worker_id, :token, $NOW, $NOW, $NOW + :lease_s)
RETURNING id, acquired_at

-- claim_is_live --
-- Whether a claim is still held by its token (not reclaimed, not finished).
SELECT id FROM job WHERE id = :id AND claim_token = :token AND status = 'running'

-- heartbeat_job --
-- Renew a claim (only its holder can) and read whether the owner asked to cancel.
UPDATE job SET heartbeat_at = $NOW, deadline_at = $NOW + :lease_s, updated_at = $NOW,
               progress_json = COALESCE(:progress_json, progress_json)
WHERE id = :id AND claim_token = :token AND status = 'running'
RETURNING cancel_requested

-- heartbeat_lease --
-- Renew the slot lease that goes with a claim.
UPDATE lease SET heartbeat_at = $NOW, deadline_at = $NOW + :lease_s
WHERE job_id = :id AND token = :token AND released_at IS NULL

-- finish_job --
-- Record a job's final state; fenced by the claim token, so a worker that lost its claim changes nothing.
UPDATE job SET status = :status, error = :error, finished_at = $NOW,
               updated_at = $NOW, deadline_at = NULL, progress_json = COALESCE(:progress_json, progress_json)
WHERE id = :id AND claim_token = :token AND status = 'running'
RETURNING agent, kind, problem, solution_name, solution_hash, attempts, max_attempts, gpu_id, worker_id,
          started_at, finished_at

-- retry_job --
-- End an attempt that failed for an infrastructure reason: queue it again after a back-off, or fail
-- it when its attempts are spent, or cancel it when its owner asked. :refund (0 or 1) gives the
-- attempt back (a worker shutting down is not the job's fault). Fenced by the claim token.
UPDATE job SET
    status = CASE WHEN cancel_requested THEN 'cancelled'
                  WHEN attempts - :refund >= max_attempts THEN 'failed'
                  ELSE 'queued' END,
    finished_at = CASE WHEN cancel_requested OR attempts - :refund >= max_attempts THEN $NOW ELSE NULL END,
    claim_token = CASE WHEN cancel_requested OR attempts - :refund >= max_attempts THEN claim_token ELSE NULL END,
    attempts = attempts - :refund,
    error = :error, run_after = $NOW + :backoff_s, deadline_at = NULL, updated_at = $NOW
WHERE id = :id AND claim_token = :token AND status = 'running'
RETURNING status, attempts, max_attempts, agent, gpu_id, worker_id

-- reclaim_expired_jobs --
-- Take back every running job whose claim expired (its worker died, hung or lost the database):
-- queue it again, or fail it when its attempts are spent, or cancel it when its owner asked.
UPDATE job SET
    status = CASE WHEN cancel_requested THEN 'cancelled'
                  WHEN attempts >= max_attempts THEN 'failed'
                  ELSE 'queued' END,
    finished_at = CASE WHEN cancel_requested OR attempts >= max_attempts THEN $NOW ELSE NULL END,
    claim_token = NULL,
    error = 'lease expired: worker ' || COALESCE(worker_id, '?') || ' stopped renewing its claim during attempt '
            || CAST(attempts AS VARCHAR(12)) || ' of ' || CAST(max_attempts AS VARCHAR(12)),
    run_after = $NOW + :backoff_s, deadline_at = NULL, updated_at = $NOW
WHERE status = 'running' AND deadline_at < $NOW
RETURNING id, status, attempts, max_attempts, worker_id, gpu_id, agent, error

-- any_expired --
-- Cheap read before reclaiming: is any claim or lease past its deadline?
SELECT (EXISTS (SELECT 1 FROM job WHERE status = 'running' AND deadline_at < $NOW)
        OR EXISTS (SELECT 1 FROM lease WHERE released_at IS NULL AND deadline_at < $NOW)) AS expired

-- release_job_leases --
-- Release every live lease of a job (used when its claim is reclaimed).
UPDATE lease SET released_at = $NOW, release_reason = :reason
WHERE job_id = :job_id AND released_at IS NULL
RETURNING id, gpu_id, worker_id

-- release_lease --
-- Release the lease that goes with one claim.
UPDATE lease SET released_at = $NOW, release_reason = :reason
WHERE job_id = :job_id AND token = :token AND released_at IS NULL
RETURNING id, gpu_id

-- release_expired_leases --
-- Release leases past their deadline whatever their job (a slot is never held forever).
UPDATE lease SET released_at = $NOW, release_reason = 'expired'
WHERE released_at IS NULL AND deadline_at < $NOW
RETURNING id, gpu_id, job_id, worker_id

-- cancel_queued --
-- Cancel a job that has not started (only its owner can).
UPDATE job SET status = 'cancelled', cancel_requested = TRUE, finished_at = $NOW, updated_at = $NOW,
               error = 'cancelled by its owner before it started'
WHERE id = :id AND agent = :agent AND status = 'queued'
RETURNING id

-- request_cancel --
-- Ask the worker running a job to stop it; it notices on its next heartbeat.
UPDATE job SET cancel_requested = TRUE, updated_at = $NOW
WHERE id = :id AND agent = :agent AND status = 'running' AND cancel_requested = FALSE
RETURNING id, worker_id, gpu_id

-- insert_run --
-- One evaluated workload of a job.
INSERT INTO run (job_id, agent, problem, solution_name, workload_uuid, status, latency_ms, sol_score,
                 speedup, hardware, trace_json, created_at)
VALUES (:job_id, :agent, :problem, :solution_name, :workload_uuid, :status, :latency_ms, :sol_score,
        :speedup, :hardware, :trace_json, $NOW)

-- job_runs --
-- The runs of one job, in the order they were recorded.
SELECT id, job_id, workload_uuid, status, latency_ms, sol_score, speedup, hardware, created_at
FROM run WHERE job_id = :job_id ORDER BY id

-- insert_submission --
-- Record a submission.
INSERT INTO submission (agent, problem, solution_name, solution_hash, job_id, score, speedup, passed, total,
                        hardware, solution_json, created_at)
VALUES (:agent, :problem, :solution_name, :solution_hash, :job_id, :score, :speedup, :passed, :total,
        :hardware, :solution_json, $NOW)
RETURNING id, agent, problem, solution_name, solution_hash, job_id, score, speedup, passed, total,
          hardware, created_at

-- best_per_problem --
-- The best accepted submission of every problem (every workload passed: a rejected one, such as a
-- REWARD_HACK, stays on its agent's record but never on a leaderboard): highest score, then speedup, then earliest.
SELECT id, agent, problem, solution_name, solution_hash, job_id, score, speedup, passed, total, hardware,
       created_at
FROM (
    SELECT s.*, ROW_NUMBER() OVER (
        PARTITION BY problem ORDER BY score DESC, COALESCE(speedup, 0) DESC, created_at, id
    ) AS rn
    FROM submission AS s WHERE passed = total AND total > 0
) AS ranked
WHERE rn = 1
ORDER BY problem

-- leaderboard --
-- A problem's leaderboard: each agent's best accepted submission (every workload passed), best first.
SELECT id, agent, problem, solution_name, solution_hash, job_id, score, speedup, passed, total, hardware,
       created_at
FROM (
    SELECT s.*, ROW_NUMBER() OVER (
        PARTITION BY agent ORDER BY score DESC, COALESCE(speedup, 0) DESC, created_at, id
    ) AS rn
    FROM submission AS s WHERE problem = :problem AND passed = total AND total > 0
) AS ranked
WHERE rn = 1
ORDER BY score DESC, COALESCE(speedup, 0) DESC, created_at, id
LIMIT :limit

-- get_submission --
-- One submission with its solution.
SELECT * FROM submission WHERE id = :id

-- agent_jobs --
-- An agent's latest jobs, without their payloads.
SELECT id, agent, kind, problem, solution_name, solution_hash, priority, status, needs_gpu, slot_kind, error,
       attempts, max_attempts, timeout_s, created_at, run_after, started_at, finished_at, updated_at,
       worker_id, gpu_id, cancel_requested, progress_json
FROM job WHERE agent = :agent ORDER BY created_at DESC, id LIMIT :limit

-- agent_job_counts --
-- An agent's jobs by status.
SELECT status, COUNT(*) AS n FROM job WHERE agent = :agent GROUP BY status

-- agent_submissions --
-- An agent's latest submissions.
SELECT id, agent, problem, solution_name, solution_hash, job_id, score, speedup, passed, total, hardware,
       created_at
FROM submission WHERE agent = :agent ORDER BY created_at DESC, id DESC LIMIT :limit

-- queue_counts --
-- Live jobs by kind and status.
SELECT kind, status, COUNT(*) AS n FROM job WHERE status IN ('queued', 'running') GROUP BY kind, status

-- queue_agents --
-- Queued jobs per agent.
SELECT agent, COUNT(*) AS n FROM job WHERE status = 'queued' GROUP BY agent ORDER BY n DESC, agent

-- queue_oldest --
-- The database's clock and the oldest queued job's age.
SELECT $NOW AS now, MIN(created_at) AS oldest FROM job WHERE status = 'queued'

-- recent_waits --
-- Time from enqueue to (latest) start of the jobs started in the window.
SELECT kind, started_at - created_at AS wait_s FROM job
WHERE started_at IS NOT NULL AND started_at >= $NOW - :window_s
ORDER BY started_at DESC LIMIT 100000

-- recent_finished --
-- Jobs that ended in the window, by kind and final status.
SELECT kind, status, COUNT(*) AS n FROM job
WHERE finished_at IS NOT NULL AND finished_at >= $NOW - :window_s
GROUP BY kind, status

-- gpu_utilisation --
-- Seconds each slot was leased during the window [now - window_s, now], and how many leases touched it.
SELECT g.id, g.host, g.device_index, g.kind, g.name, g.status, g.status_reason,
       COALESCE(SUM($GREATEST(0.0, $LEAST(COALESCE(l.released_at, $NOW), $NOW)
                               - $GREATEST(l.acquired_at, $NOW - :window_s))), 0.0) AS busy_s,
       COUNT(l.id) AS leases
FROM gpu AS g
LEFT JOIN lease AS l
       ON l.gpu_id = g.id AND l.acquired_at < $NOW
      AND (l.released_at IS NULL OR l.released_at > $NOW - :window_s)
GROUP BY g.id, g.host, g.device_index, g.kind, g.name, g.status, g.status_reason
ORDER BY g.id

-- upsert_gpu --
-- Register a slot (or refresh it); it is health-checked before its next lease.
INSERT INTO gpu (id, host, device_index, kind, name, uuid, status, status_reason, needs_check, worker_id,
                 registered_at, checked_at)
VALUES (:id, :host, :device_index, :kind, :name, :uuid, 'available', NULL, TRUE, :worker_id, $NOW, NULL)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, uuid = excluded.uuid, worker_id = excluded.worker_id,
                               needs_check = TRUE

-- get_gpu --
-- One slot.
SELECT * FROM gpu WHERE id = :gpu_id

-- list_gpus --
-- Every slot.
SELECT * FROM gpu ORDER BY id

-- gpu_healthy --
-- A health check passed; returns a slot taken out by a health check (not by an operator) to service.
UPDATE gpu SET needs_check = FALSE, checked_at = $NOW,
    status = CASE WHEN status = 'out_of_service' AND status_reason LIKE 'health:%' THEN 'available' ELSE status END,
    status_reason = CASE WHEN status = 'out_of_service' AND status_reason LIKE 'health:%' THEN NULL
                         ELSE status_reason END
WHERE id = :gpu_id
RETURNING status

-- gpu_out_of_service --
-- Take a slot out of service with the reason (prefixed 'health:' or 'operator:').
UPDATE gpu SET status = 'out_of_service', status_reason = :reason, checked_at = $NOW, needs_check = FALSE
WHERE id = :gpu_id
RETURNING id

-- gpu_in_service --
-- Put a slot back in service; it is health-checked before its next lease.
UPDATE gpu SET status = 'available', status_reason = NULL, needs_check = TRUE
WHERE id = :gpu_id
RETURNING id

-- gpu_needs_check --
-- Health-check a slot before its next lease (after a lease ended abnormally).
UPDATE gpu SET needs_check = TRUE WHERE id = :gpu_id

-- insert_worker --
-- A worker process starts.
INSERT INTO worker (id, host, pid, started_at, heartbeat_at, stopped_at, slots_json, version)
VALUES (:id, :host, :pid, $NOW, $NOW, NULL, :slots_json, :version)

-- heartbeat_worker --
-- A worker is alive.
UPDATE worker SET heartbeat_at = $NOW WHERE id = :id

-- stop_worker --
-- A worker stopped cleanly.
UPDATE worker SET stopped_at = $NOW, heartbeat_at = $NOW WHERE id = :id

-- list_workers --
-- Every worker, latest first.
SELECT * FROM worker ORDER BY started_at DESC

-- insert_event --
-- Append to the event log (in the transaction whose change it records).
INSERT INTO event (at, kind, job_id, gpu_id, worker_id, agent, lease_id, detail_json)
VALUES ($NOW, :kind, :job_id, :gpu_id, :worker_id, :agent, :lease_id, :detail_json)

-- list_events --
-- Events after an id, oldest first.
SELECT * FROM event WHERE id > :after_id ORDER BY id LIMIT :limit

-- list_job_events --
-- One job's events, oldest first.
SELECT * FROM event WHERE job_id = :job_id AND id > :after_id ORDER BY id LIMIT :limit

-- lease_history --
-- Every lease of every slot (or of one), oldest first.
SELECT * FROM lease ORDER BY gpu_id, acquired_at, id

-- db_now --
-- The database's clock.
SELECT $NOW AS now

-- any_agent_token --
-- Whether any enabled agent can authenticate with a token (then HTTP must require one).
SELECT EXISTS (SELECT 1 FROM agent WHERE token_hash IS NOT NULL AND disabled = FALSE) AS any_token

-- submission_by_job --
-- The submission a submit job recorded.
SELECT id, agent, problem, solution_name, solution_hash, job_id, score, speedup, passed, total, hardware,
       created_at
FROM submission WHERE job_id = :job_id

-- problem_bests --
-- Per problem: the best score of anyone and of one agent, and how many submissions.
SELECT problem, MAX(score) AS best, MAX(CASE WHEN agent = :agent THEN score END) AS mine, COUNT(*) AS n
FROM submission GROUP BY problem

-- agent_problems --
-- The problems an agent has queued jobs for.
SELECT DISTINCT problem FROM job WHERE agent = :agent

-- agent_problem_bests --
-- Every agent's best score per problem, over accepted submissions (every workload passed).
SELECT agent, problem, MAX(score) AS best FROM submission WHERE passed = total AND total > 0
GROUP BY agent, problem

-- insert_baseline --
-- Keep a measured baseline; the first measurement of a key stays (every judge measures it alike).
INSERT INTO baseline (baseline_key, problem, workload_uuid, hardware, record_json, worker_id, created_at)
VALUES (:baseline_key, :problem, :workload_uuid, :hardware, :record_json, :worker_id, $NOW)
ON CONFLICT (baseline_key) DO NOTHING

-- baselines_for_problem --
-- Every baseline kept for a problem (all GPU models; a judge uses those whose key it computes).
SELECT record_json FROM baseline WHERE problem = :problem ORDER BY created_at
