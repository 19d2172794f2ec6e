"""get_leaderboard: the best accepted submissions, per problem or across problems."""

from __future__ import annotations

from pydantic import Field

from .base import ToolContext, ToolModel, ToolResult
from .ledger_port import leaderboard_rows, overall_rows


class GetLeaderboardInput(ToolModel):
    """Which leaderboard."""

    problem: str | None = Field(default=None, max_length=200)
    """A problem name: its ranking. Omitted: the ranking of agents across all problems."""
    limit: int = Field(default=20, ge=1, le=100)
    """Rows to return."""


class LeaderboardRow(ToolResult):
    rank: int
    agent: str
    score: float
    """SOL score: mean over workloads (one problem), or sum of best scores (across problems)."""
    speedup: float | None = None
    """Geometric-mean speedup over the baseline."""
    solution: str | None = None
    problems: int | None = None
    """Problems with an accepted submission (across-problems view)."""
    hardware: str | None = None
    submitted_at: str | None = None


class GetLeaderboardResult(ToolResult):
    problem: str | None = None
    rows: list[LeaderboardRow]
    your_rank: int | None = None
    """Your position, when you are on this board."""
    total_entries: int

    def render(self) -> str:
        title = (
            f"Leaderboard for {self.problem}"
            if self.problem
            else "Leaderboard across problems (sum of best scores)"
        )
        if not self.rows:
            return f"{title}: no accepted submissions yet."
        entries = "entry" if self.total_entries == 1 else "entries"
        lines = [f"{title} ({self.total_entries} {entries}):"]
        for r in self.rows:
            cpu = (r.hardware or "").lower() == "cpu"
            # A CPU submission has no SOL score (it counts 0) and its speedup is a CPU timing: say so.
            score = "CPU run, no SOL score" if cpu else f"{r.score:.3f}"
            extra = f" speedup {r.speedup:.2f}x" + (" on the CPU" if cpu else "") if r.speedup else ""
            extra += f" {r.problems} problems" if r.problems is not None else ""
            extra += f" [{r.solution}]" if r.solution else ""
            lines.append(f"{r.rank:>3}. {r.agent}: {score}{extra}")
        if self.your_rank is not None:
            lines.append(f"You are #{self.your_rank}.")
        return "\n".join(lines)


async def get_leaderboard(args: GetLeaderboardInput, ctx: ToolContext) -> GetLeaderboardResult:
    """The ranking for one problem, or of agents across problems.

    Raises
    ------
    ProblemNotFound
        For an unknown problem.
    ServiceUnavailable
        When this server has no ledger.
    """
    if args.problem is not None:
        name = ctx.services.problems.find(args.problem).name
        rows, total = await leaderboard_rows(ctx, name, args.limit)
    else:
        name = None
        rows, total = await overall_rows(ctx, args.limit)
    board = [LeaderboardRow(**r) for r in rows]
    mine = next((r.rank for r in board if r.agent == ctx.agent), None)
    return GetLeaderboardResult(problem=name, rows=board, your_rank=mine, total_entries=total)
