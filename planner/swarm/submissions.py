"""A swarm run's results: the best score per problem, and the submissions the planner makes on an
agent's behalf (its best benchmarked solution, when the agent is moved off, fails or the run stops).

Separate from :mod:`.runner`: what counts as an agent's best, and when it is worth a submission, reads
the ledger only and decides nothing about processes, so the loop just says when.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from solforge.sandbox.api import EvalOptions, EvalRequest

from ..errors import LedgerError
from ..ledger import Ledger
from .facts import OutcomeCache, submission_effective
from .store import SwarmStore

__all__ = ["best_scores", "submit_best", "wait_for_submissions"]

log = logging.getLogger("solforge.planner.swarm")


def best_scores(ledger: Ledger, problems: Iterable[str]) -> dict[str, float]:
    """The best submission's effective score of each of ``problems`` that has one."""
    wanted = set(problems)
    return {
        s.problem: submission_effective(s.score, s.speedup, s.passed, s.total)
        for s in ledger.best_per_problem()
        if s.problem in wanted
    }


def submit_best(
    ledger: Ledger,
    store: SwarmStore,
    outcomes: OutcomeCache,
    on_behalf: set[str],
    *,
    run_id: str,
    agent: str,
    problem: str,
    why: str,
) -> str | None:
    """Submit the agent's best benchmarked solution of its problem if it beats its last submission;
    returns the submit job's id, which joins ``on_behalf`` (the submissions the run waits for)."""
    jobs = [
        j
        for j in outcomes.refresh()
        if j.agent == agent and j.problem == problem and j.kind == "benchmark" and j.passed
    ]
    if not jobs:
        return None
    best = max(jobs, key=lambda j: (j.score, j.finished_at))
    subs = store.agent_submissions(agent, problem)
    if any(s["solution_hash"] == best.solution_hash for s in subs):
        return None
    submitted = max(
        (submission_effective(s["score"], s["speedup"], s["passed"], s["total"]) for s in subs),
        default=None,
    )
    if submitted is not None and submitted >= best.score:
        return None
    raw = store.job_request_json(best.id)
    if raw is None:
        return None
    bench = EvalRequest.model_validate_json(raw)
    options = EvalOptions(target_arch=bench.options.target_arch, cache_dir=bench.options.cache_dir)
    request = EvalRequest(problem=bench.problem, solution=bench.solution, options=options)
    try:
        job = ledger.enqueue(agent, "submit", request)
    except LedgerError as exc:
        log.warning("could not submit for %s: %s", agent, exc)
        return None
    on_behalf.add(job.id)
    store.log_event(
        "swarm.submitted_for_agent",
        agent=agent,
        job_id=job.id,
        run_id=run_id,
        problem=problem,
        benchmark_job=best.id,
        score=round(best.score, 4),
        last_submitted=submitted,
        reason=why,
    )
    return job.id


def wait_for_submissions(
    store: SwarmStore, run_id: str, jobs: set[str], wait_s: float, hurry: threading.Event
) -> None:
    """Wait up to ``wait_s`` for the submit ``jobs`` still open to finish, or until ``hurry`` is set."""
    deadline = time.monotonic() + wait_s
    pending = set(jobs)
    if pending:
        pending = {j for j, *_ in store.open_jobs(run_id) if j in pending}
    if pending and wait_s > 0:
        log.info(
            "swarm %s: waiting up to %.0f s for %d final submissions (--submit-wait-s; Ctrl-C again "
            "to stop waiting)",
            run_id,
            wait_s,
            len(pending),
        )
    while pending and time.monotonic() < deadline and not hurry.is_set():
        pending = {j for j, *_ in store.open_jobs(run_id) if j in pending}
        if pending:
            time.sleep(0.5)
