"""The ledger's results: problems, submissions, leaderboards, standings and histories."""

from __future__ import annotations

from solforge.problems import Definition, Solution
from solforge.sandbox.api import EvalReport

from ..errors import AgentNotFound, JobNotFound, LedgerError
from . import queue
from .common import LedgerPart, _agent_view, _submission_view, _summary_fields
from .db import Tx
from .models import AgentHistory, AgentStanding, JobSummary, LeaderboardEntry, ProblemStanding, SubmissionView

__all__ = ["LedgerResults"]


class LedgerResults(LedgerPart):
    """The ledger's results: problems, submissions, leaderboards, standings and histories.

    A part of :class:`~solforge.planner.ledger.Ledger`."""

    # -- results -----------------------------------------------------------------------------------

    def register_problem(self, definition: Definition) -> None:
        """Record a problem's op type and category (jobs record problems by name on their own)."""
        category = getattr(definition, "category", None)
        self._run(
            lambda tx: tx.execute(
                "ensure_problem",
                name=definition.name,
                op_type=getattr(definition, "op_type", None),
                category=str(category) if category is not None else None,
            )
        )

    def record_submission(
        self, agent: str, report: EvalReport, solution: Solution, *, job_id: str | None = None
    ) -> SubmissionView:
        """Record a submission from a finished evaluation.

        Workers call this themselves for ``submit`` jobs (in the transaction that finishes the job);
        call it directly to import results evaluated elsewhere.

        Raises
        ------
        AgentNotFound
            No such agent.
        LedgerIntegrityError
            ``job_id`` already has a submission.
        """
        params = queue.submission_params(report, solution, agent=agent)

        def fn(tx: Tx) -> SubmissionView:
            if tx.one("get_agent", name=agent) is None:
                raise AgentNotFound(f"no agent named {agent!r}")
            tx.execute("ensure_problem", name=report.problem, op_type=None, category=None)
            row = tx.one("insert_submission", job_id=job_id, **params)
            assert row is not None
            queue.event(
                tx,
                "submission.recorded",
                job_id=job_id,
                agent=agent,
                submission_id=int(row["id"]),
                problem=report.problem,
                score=float(row["score"]),
            )
            return _submission_view(row)

        return self._run(fn)

    def get_submission_solution(self, submission_id: int) -> Solution:
        """The full solution of a submission (leaderboards list them without sources)."""
        row = self._run(lambda tx: tx.one("get_submission", id=submission_id), write=False)
        if row is None:
            raise LedgerError(f"no submission {submission_id}")
        return Solution.model_validate_json(row["solution_json"])

    def leaderboard(self, problem: str, *, limit: int = 20) -> list[LeaderboardEntry]:
        """A problem's leaderboard: each agent's best accepted submission, by score, then speedup, then age.

        Accepted: every workload passed. A rejected submission (a wrong answer, a REWARD_HACK) stays in
        the agent's history but never ranks.
        """
        rows = self._run(lambda tx: tx.all("leaderboard", problem=problem, limit=max(1, limit)), write=False)
        return [LeaderboardEntry(rank=i + 1, **_submission_view(r).model_dump()) for i, r in enumerate(rows)]

    def submission_for_job(self, job_id: str, agent: str) -> LeaderboardEntry | None:
        """The submission a finished submit job of ``agent`` recorded, ranked against every agent's best.

        ``rank`` is 1 + the number of *other* agents whose best submission for the problem beats
        this one (by score, then speedup). None until the job is done (or if it was not a submit job).

        Raises
        ------
        JobNotFound
            As :meth:`get_job`.
        """

        def fn(tx: Tx) -> SubmissionView | None:
            if tx.one("get_job", id=job_id, agent=agent) is None:
                raise JobNotFound(f"no job {job_id!r} belongs to agent {agent!r}")
            row = tx.one("submission_by_job", job_id=job_id)
            return None if row is None else _submission_view(row)

        sub = self._run(fn, write=False)
        if sub is None:
            return None
        key = (sub.score, sub.speedup or 0.0)
        ahead = sum(
            1
            for e in self.leaderboard(sub.problem, limit=1_000_000)
            if e.agent != sub.agent and (e.score, e.speedup or 0.0) > key
        )
        return LeaderboardEntry(rank=ahead + 1, **sub.model_dump())

    def problem_standings(self, agent: str) -> dict[str, ProblemStanding]:
        """For every problem with a submission or a job of ``agent``: the best score, the agent's best, its status."""

        def fn(tx: Tx) -> dict[str, ProblemStanding]:
            out: dict[str, ProblemStanding] = {}
            attempted = {r["problem"] for r in tx.all("agent_problems", agent=agent)}
            for r in tx.all("problem_bests", agent=agent):
                mine = None if r["mine"] is None else float(r["mine"])
                out[r["problem"]] = ProblemStanding(
                    problem=r["problem"],
                    best_score=float(r["best"]),
                    agent_best=mine,
                    submissions=int(r["n"]),
                    status="submitted"
                    if mine is not None
                    else "attempted"
                    if r["problem"] in attempted
                    else "new",
                )
            for problem in attempted - set(out):
                out[problem] = ProblemStanding(problem=problem, status="attempted")
            return out

        return self._run(fn, write=False)

    def standings(self, *, limit: int = 100) -> list[AgentStanding]:
        """The overall leaderboard: agents by problems led, then by mean best score."""
        rows = self._run(lambda tx: tx.all("agent_problem_bests"), write=False)
        per_agent: dict[str, dict[str, float]] = {}
        leader: dict[str, tuple[float, str]] = {}
        for r in rows:
            score = float(r["best"])
            per_agent.setdefault(r["agent"], {})[r["problem"]] = score
            current = leader.get(r["problem"])
            if current is None or score > current[0] or (score == current[0] and r["agent"] < current[1]):
                leader[r["problem"]] = (score, r["agent"])
        firsts: dict[str, int] = {}
        for _, who in leader.values():
            firsts[who] = firsts.get(who, 0) + 1
        ranked = sorted(
            per_agent.items(),
            key=lambda kv: (-firsts.get(kv[0], 0), -sum(kv[1].values()) / len(kv[1]), kv[0]),
        )
        return [
            AgentStanding(
                rank=i + 1,
                agent=name,
                problems=len(scores),
                firsts=firsts.get(name, 0),
                mean_score=sum(scores.values()) / len(scores),
            )
            for i, (name, scores) in enumerate(ranked[:limit])
        ]

    def best_per_problem(self) -> list[SubmissionView]:
        """The best accepted submission (every workload passed) of every problem that has one, by name."""
        rows = self._run(lambda tx: tx.all("best_per_problem"), write=False)
        return [_submission_view(r) for r in rows]

    def agent_history(self, agent: str, *, limit: int = 50) -> AgentHistory:
        """An agent's latest jobs and submissions (newest first) and its job counts by status."""

        def fn(tx: Tx) -> AgentHistory:
            row = tx.one("get_agent", name=agent)
            if row is None:
                raise AgentNotFound(f"no agent named {agent!r}")
            return AgentHistory(
                agent=_agent_view(row),
                job_counts={r["status"]: int(r["n"]) for r in tx.all("agent_job_counts", agent=agent)},
                jobs=[
                    JobSummary(**_summary_fields(r)) for r in tx.all("agent_jobs", agent=agent, limit=limit)
                ],
                submissions=[
                    _submission_view(r) for r in tx.all("agent_submissions", agent=agent, limit=limit)
                ],
            )

        return self._run(fn, write=False)

