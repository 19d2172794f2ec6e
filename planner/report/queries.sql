-- The report's read-only SQL, in the format of solforge/planner/ledger/queries.sql (see its header).
-- Every query reads only the ledger's own tables, so a report works on any ledger version that has
-- them. :since and :until bound the window in UNIX seconds of the database's clock.

-- report_now --
-- The database's clock.
SELECT $NOW AS now

-- report_jobs --
-- Jobs enqueued in the window, without their payloads.
SELECT id, agent, kind, problem, status, created_at, started_at, finished_at, gpu_id
FROM job
WHERE created_at >= :since AND created_at <= :until
ORDER BY created_at, id

-- report_submissions --
-- Submissions recorded in the window, without their sources.
SELECT id, agent, problem, solution_name, job_id, score, speedup, passed, total, hardware, created_at
FROM submission
WHERE created_at >= :since AND created_at <= :until
ORDER BY created_at, id

-- report_leases --
-- Leases that overlap the window, with their slot's kind and the job's owner.
SELECT l.gpu_id, g.kind, l.acquired_at, l.released_at, j.agent
FROM lease AS l
JOIN gpu AS g ON g.id = l.gpu_id
JOIN job AS j ON j.id = l.job_id
WHERE l.acquired_at <= :until AND (l.released_at IS NULL OR l.released_at >= :since)
ORDER BY l.acquired_at, l.id

-- report_job_traces --
-- The traces of one job's evaluated workloads.
SELECT status, latency_ms, trace_json FROM run WHERE job_id = :job_id ORDER BY id
