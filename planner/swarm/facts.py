"""From ledger rows to the policy's :class:`~solforge.planner.swarm.policy.Snapshot`.

:class:`OutcomeCache` reads the run's evaluated jobs incrementally (by finish time); the functions
below are pure and turn outcomes, assignments and submissions into problem and agent facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .policy import AgentFacts, PolicyConfig, ProblemFacts, effective_score
from .store import AssignmentView, JobOutcomeRow, SwarmStore

__all__ = [
    "JobOutcome",
    "OutcomeCache",
    "agent_facts",
    "problem_facts",
    "submission_effective",
]

RECENT_WINDOW_S = 1800.0
"""A problem's recent gain is how far the run's best rose in this window."""
_OVERLAP_S = 5.0
"""Re-read this much before the newest finish time seen: a commit can land with an earlier stamp."""


@dataclass(frozen=True)
class JobOutcome:
    """One evaluated benchmark or submit job, reduced to what the policy reads."""

    id: str
    agent: str
    problem: str
    kind: str
    solution_hash: str
    finished_at: float
    passed: bool
    """Every workload passed."""
    score: float
    """Mean effective score over the workloads (failed ones 0)."""


def submission_effective(score: float, speedup: float | None, passed: int, total: int) -> float:
    """A submission's effective score: its SOL score, or the speedup's when the device had none."""
    if total <= 0 or passed < total:
        return 0.0
    return effective_score(score if score > 0 else None, speedup)


def reduce_outcomes(rows: Iterable[JobOutcomeRow]) -> dict[str, JobOutcome]:
    """Group per-workload rows by job."""
    grouped: dict[str, list[JobOutcomeRow]] = {}
    for row in rows:
        grouped.setdefault(row.id, []).append(row)
    out: dict[str, JobOutcome] = {}
    for job_id, workloads in grouped.items():
        first = workloads[0]
        evaluated = [w for w in workloads if w.run_status is not None]
        passed = bool(evaluated) and all(w.run_status == "PASSED" for w in evaluated)
        scores = [effective_score(w.sol_score, w.speedup, passed=w.run_status == "PASSED") for w in evaluated]
        out[job_id] = JobOutcome(
            id=job_id,
            agent=first.agent,
            problem=first.problem,
            kind=first.kind,
            solution_hash=first.solution_hash,
            finished_at=first.finished_at,
            passed=passed,
            score=sum(scores) / len(scores) if scores else 0.0,
        )
    return out


class OutcomeCache:
    """The run's evaluated jobs, read incrementally from the ledger."""

    def __init__(self, store: SwarmStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.jobs: dict[str, JobOutcome] = {}
        self._cursor = 0.0

    def refresh(self) -> list[JobOutcome]:
        """Read what finished since the last call; returns every outcome, oldest first."""
        rows = self.store.job_outcomes(self.run_id, after=max(0.0, self._cursor - _OVERLAP_S))
        for job in reduce_outcomes(rows).values():
            self.jobs[job.id] = job
            self._cursor = max(self._cursor, job.finished_at)
        return sorted(self.jobs.values(), key=lambda j: (j.finished_at, j.id))


def _gain_point(jobs: Sequence[JobOutcome], min_gain: float) -> tuple[int, float | None]:
    """(evaluations after the last gain, time of the last gain) over jobs in finish order."""
    best = -1.0
    since = 0
    gained_at: float | None = None
    for job in jobs:
        if job.score > best + min_gain:
            best = job.score
            since = 0
            gained_at = job.finished_at
        else:
            since += 1
    return since, gained_at


def problem_facts(
    problems: Sequence[str],
    outcomes: Sequence[JobOutcome],
    assignments: Sequence[AssignmentView],
    best_scores: dict[str, float],
    *,
    now: float,
) -> list[ProblemFacts]:
    """One :class:`ProblemFacts` per problem of the run."""
    facts = []
    for name in problems:
        jobs = [j for j in outcomes if j.problem == name]
        held = [a for a in assignments if a.problem == name]
        seconds = sum((a.ended_at if a.ended_at is not None else now) - a.started_at for a in held)
        recent = max((j.score for j in jobs if j.passed), default=0.0)
        before = max(
            (j.score for j in jobs if j.passed and j.finished_at < now - RECENT_WINDOW_S), default=0.0
        )
        facts.append(
            ProblemFacts(
                name=name,
                best_score=best_scores.get(name),
                attempts=len(jobs),
                failures=sum(1 for j in jobs if not j.passed),
                agent_seconds=max(0.0, seconds),
                recent_gain=max(0.0, recent - before),
                stalls=sum(1 for a in held if a.end_reason == "stalled"),
                agents_on=sum(1 for a in held if a.ended_at is None),
            )
        )
    return facts


def agent_facts(
    name: str,
    state: str,
    assignment: AssignmentView | None,
    outcomes: Sequence[JobOutcome],
    history: Sequence[AssignmentView],
    config: PolicyConfig,
    *,
    now: float,
) -> AgentFacts:
    """What the policy needs about one agent (its current assignment's progress, what to avoid)."""
    mine = [a for a in history if a.agent == name]
    avoid = frozenset(a.problem for a in mine if a.end_reason == "stalled")
    finished = frozenset(a.problem for a in mine if a.end_reason == "finished")
    if assignment is None:
        return AgentFacts(name=name, state=state, avoid=avoid, finished=finished)  # type: ignore[arg-type]
    jobs = [
        j
        for j in outcomes
        if j.agent == name and j.problem == assignment.problem and j.finished_at >= assignment.started_at
    ]
    since, gained_at = _gain_point(jobs, config.min_gain)
    return AgentFacts(
        name=name,
        state=state,  # type: ignore[arg-type]
        problem=assignment.problem,
        assigned_s=max(0.0, now - assignment.started_at),
        attempts_since_gain=since,
        seconds_since_gain=max(0.0, now - (gained_at if gained_at is not None else assignment.started_at)),
        share=assignment.share,
        avoid=avoid,
        finished=finished,
    )
