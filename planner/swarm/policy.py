"""The planning policy: who works on what, when to move an agent, when to hold back. Pure functions.

Everything the planner decides comes from :func:`decide`, a pure function of a :class:`Snapshot` of
ledger facts and a :class:`PolicyConfig`; the planner only gathers the facts and carries out the
decisions (and writes each one, with its reason, to the ledger's event log). Tests call
:func:`decide` directly.

The score the policy reads
--------------------------
:func:`effective_score` of an evaluation: its SOL score where the device has one; on a device
without a speed-of-light model (CPU) the score with T_SOL = 0, ``speedup / (1 + speedup)``, which is
the SOL formula's lower bound (0.5 at the baseline, rising towards 1 with the speedup). A workload
that did not pass counts 0. A problem's best is the best *accepted* submission's (every workload
passed).

What an attempt is worth
------------------------
:func:`problem_value` of an open problem::

    value = headroom * progress * failures * time * stalls / (1 + agents_on)

    headroom = 1 - best                        (1 for a problem nobody has solved)
    progress = 1 + progress_weight * min(1, recent_gain / gain_scale)
                                               (the run's best moved up recently: keep pushing)
    failures = 1 / (1 + failure_weight * failed / (attempts + 1))
                                               (most evaluations fail: it is hard, or broken)
    time     = 1 / (1 + agent_hours / time_scale_h)
                                               (agents already spent long on it)
    stalls   = 1 / (1 + stalls)                (agents were moved off it for stalling)

A problem is **done** when its best reaches ``solved_score`` (near the speed of light); done
problems get no agents.

The rules, in order
-------------------
1. **Release** a working agent whose problem is done (``solved``), or that has stalled: no gain
   over ``stall_attempts`` evaluations, or for ``stall_s`` seconds, once it has held the problem
   ``min_assignment_s`` (``stalled``). The planner submits the agent's best benchmarked solution
   before it stops the agent.
2. **Hold** every idle agent while the GPU queue is long: more than ``queue_factor`` queued slot
   jobs per slot in service. New work would only wait in the queue.
3. **Assign** each idle agent (lowest index first) the open problem of highest value that no agent
   holds, preferring problems it has not already ended on its own (a problem it left for stalling
   is never given back to it). A problem goes to a second agent only when ``share_problems`` is on and every open
   problem is taken (more agents than open problems); it then takes the next share number, up to
   ``max_agents_per_problem``. Otherwise the agent is held (``no open problem``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AgentFacts",
    "Assign",
    "Decision",
    "Hold",
    "PolicyConfig",
    "ProblemFacts",
    "Release",
    "Snapshot",
    "decide",
    "effective_score",
    "is_done",
    "problem_value",
    "queue_is_long",
]


class PolicyConfig(BaseModel):
    """The policy's knobs; the defaults suit agents that take minutes per attempt on a GPU."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    solved_score: float = Field(default=0.9, ge=0.0, le=1.0)
    """A problem whose best effective score reaches this is done (near the speed of light)."""
    stall_attempts: int = Field(default=8, ge=1)
    """Release an agent after this many evaluations on its problem without a gain."""
    stall_s: float = Field(default=3600.0, gt=0)
    """... or after this long without a gain."""
    min_assignment_s: float = Field(default=300.0, ge=0)
    """Never release an agent for stalling before it has held its problem this long."""
    min_gain: float = Field(default=0.005, ge=0)
    """An evaluation improves on the assignment's best only by more than this."""
    queue_factor: float = Field(default=2.0, gt=0)
    """Hold idle agents while queued slot jobs exceed this many per slot in service."""
    share_problems: bool = False
    """Put a second agent on a problem when every open problem is taken."""
    max_agents_per_problem: int = Field(default=2, ge=1)
    """With share_problems: at most this many agents on one problem."""
    progress_weight: float = Field(default=1.0, ge=0)
    gain_scale: float = Field(default=0.05, gt=0)
    failure_weight: float = Field(default=1.0, ge=0)
    time_scale_h: float = Field(default=2.0, gt=0)


@dataclass(frozen=True)
class ProblemFacts:
    """What the ledger says about one problem of the run."""

    name: str
    best_score: float | None = None
    """The best accepted submission's effective score (any agent, any run); None: none accepted."""
    attempts: int = 0
    """Evaluations (benchmark and submit jobs) of it by the run's agents."""
    failures: int = 0
    """Of which at least one workload did not pass."""
    agent_seconds: float = 0.0
    """Time the run's agents have held it."""
    recent_gain: float = 0.0
    """How much the run's best evaluation of it rose in the recent window."""
    stalls: int = 0
    """Times an agent was released from it for stalling."""
    agents_on: int = 0
    """Agents holding it now."""


AgentState = Literal["idle", "working", "backoff", "held", "stopped", "failed"]


@dataclass(frozen=True)
class AgentFacts:
    """What the planner knows about one agent."""

    name: str
    state: AgentState
    """idle and held agents can take work; working and backoff agents hold their problem."""
    problem: str | None = None
    assigned_s: float = 0.0
    """Seconds on its current assignment."""
    attempts_since_gain: int = 0
    """Evaluations on its current assignment since its best one."""
    seconds_since_gain: float = 0.0
    """Seconds since its best evaluation on the assignment (or since the assignment began)."""
    share: int = 0
    """The share number of its current assignment (0 unless the problem is shared)."""
    avoid: frozenset[str] = field(default_factory=frozenset)
    """Problems it was released from for stalling: not given back to it."""
    finished: frozenset[str] = field(default_factory=frozenset)
    """Problems it ended on its own without solving them: given back only when no other is free."""


@dataclass(frozen=True)
class Snapshot:
    """The facts one planning round works from."""

    problems: tuple[ProblemFacts, ...]
    agents: tuple[AgentFacts, ...]
    queued_slot_jobs: int = 0
    slots: int = 1


@dataclass(frozen=True)
class Assign:
    """Give ``problem`` to ``agent`` (under ``share`` 0 unless it is shared on purpose)."""

    agent: str
    problem: str
    share: int
    value: float
    reason: str


@dataclass(frozen=True)
class Release:
    """Take ``agent`` off ``problem`` (``why``: solved or stalled); its best is submitted first."""

    agent: str
    problem: str
    why: Literal["solved", "stalled"]
    reason: str


@dataclass(frozen=True)
class Hold:
    """Leave ``agent`` without work for now."""

    agent: str
    reason: str


Decision = Assign | Release | Hold


def effective_score(sol_score: float | None, speedup: float | None, *, passed: bool = True) -> float:
    """The score the policy reads for one workload (see the module docstring); 0 when it failed."""
    if not passed:
        return 0.0
    if sol_score is not None:
        return max(0.0, min(1.0, float(sol_score)))
    if speedup is not None and speedup > 0:
        return float(speedup) / (1.0 + float(speedup))
    return 0.0


def is_done(problem: ProblemFacts, config: PolicyConfig) -> bool:
    """Whether the problem's best reaches ``solved_score``."""
    return problem.best_score is not None and problem.best_score >= config.solved_score


def problem_value(problem: ProblemFacts, config: PolicyConfig, *, agents_on: int | None = None) -> float:
    """What another attempt on ``problem`` is worth (the module docstring gives the formula)."""
    on = problem.agents_on if agents_on is None else agents_on
    headroom = max(0.0, 1.0 - (problem.best_score or 0.0))
    progress = 1.0 + config.progress_weight * min(1.0, max(0.0, problem.recent_gain) / config.gain_scale)
    failures = 1.0 / (1.0 + config.failure_weight * problem.failures / (problem.attempts + 1))
    time = 1.0 / (1.0 + problem.agent_seconds / 3600.0 / config.time_scale_h)
    stalls = 1.0 / (1.0 + problem.stalls)
    return headroom * progress * failures * time * stalls / (1.0 + on)


def queue_is_long(snapshot: Snapshot, config: PolicyConfig) -> bool:
    """More queued slot jobs than ``queue_factor`` per slot in service."""
    return snapshot.queued_slot_jobs > config.queue_factor * max(1, snapshot.slots)


def _release(agent: AgentFacts, problem: ProblemFacts | None, config: PolicyConfig) -> Release | None:
    if agent.state != "working" or agent.problem is None:
        return None
    if problem is not None and is_done(problem, config):
        return Release(
            agent.name,
            agent.problem,
            "solved",
            f"best score {problem.best_score:.3f} reached solved_score {config.solved_score}",
        )
    if agent.assigned_s < config.min_assignment_s:
        return None
    if agent.attempts_since_gain >= config.stall_attempts:
        return Release(
            agent.name,
            agent.problem,
            "stalled",
            f"{agent.attempts_since_gain} evaluations without a gain (stall_attempts {config.stall_attempts})",
        )
    if agent.seconds_since_gain >= config.stall_s:
        return Release(
            agent.name,
            agent.problem,
            "stalled",
            f"no gain for {agent.seconds_since_gain:.0f} s (stall_s {config.stall_s:.0f})",
        )
    return None


def decide(snapshot: Snapshot, config: PolicyConfig) -> list[Decision]:
    """One planning round: releases first, then holds or assignments (see the module docstring).

    Returns
    -------
    list[Decision]
        In the order the planner must carry them out. An agent released here is idle afterwards and
        may be assigned again in the same list (a move).
    """
    problems = {p.name: p for p in snapshot.problems}
    decisions: list[Decision] = []
    idle: list[AgentFacts] = []
    shares: dict[str, set[int]] = {name: set() for name in problems}
    for agent in snapshot.agents:
        if agent.state in ("working", "backoff") and agent.problem is not None:
            release = _release(agent, problems.get(agent.problem), config)
            if release is None:
                shares.setdefault(agent.problem, set()).add(agent.share)
                continue
            decisions.append(release)
            if release.why == "stalled":
                agent = replace(agent, avoid=agent.avoid | {agent.problem})
                if agent.problem in problems:
                    stalled = problems[agent.problem]
                    problems[agent.problem] = replace(stalled, stalls=stalled.stalls + 1)
            idle.append(replace(agent, state="idle", problem=None))
        elif agent.state in ("idle", "held"):
            idle.append(agent)
    if not idle:
        return decisions
    if queue_is_long(snapshot, config):
        reason = (
            f"GPU queue is long: {snapshot.queued_slot_jobs} slot jobs queued for {snapshot.slots} slots "
            f"(queue_factor {config.queue_factor})"
        )
        return decisions + [Hold(a.name, reason) for a in idle]
    open_problems = [p for p in problems.values() if not is_done(p, config)]
    for agent in idle:
        candidates = [p for p in open_problems if p.name not in agent.avoid]
        free = [p for p in candidates if not shares[p.name] and p.name not in agent.finished]
        free = free or [p for p in candidates if not shares[p.name]]
        if free:
            pool = free
        elif config.share_problems:
            pool = [p for p in candidates if len(shares[p.name]) < config.max_agents_per_problem]
        else:
            pool = []
        if not pool:
            why = "every open problem has an agent" if candidates else "no open problem left"
            decisions.append(Hold(agent.name, why))
            continue
        best = max(pool, key=lambda p: (problem_value(p, config, agents_on=len(shares[p.name])), p.name))
        taken = shares[best.name]
        value = problem_value(best, config, agents_on=len(taken))
        share = min(set(range(len(taken) + 1)) - taken)
        reason = (
            f"highest value {value:.3f} (headroom {1.0 - (best.best_score or 0.0):.2f}, {best.attempts} attempts, "
            f"{best.failures} failed, {len(taken)} agents on it)"
        )
        if share:
            reason += f"; shared as share {share}: every open problem has an agent and share_problems is on"
        decisions.append(Assign(agent.name, best.name, share, value, reason))
        taken.add(share)
    return decisions


def assignments_of(decisions: Sequence[Decision]) -> list[Assign]:
    """The Assign decisions of a round (tests and the planner's summary)."""
    return [d for d in decisions if isinstance(d, Assign)]
