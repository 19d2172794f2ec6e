"""The planning policy as pure functions: values, releases, holds, assignments, sharing."""

from __future__ import annotations

import pytest

from solforge.planner.swarm.facts import JobOutcome, agent_facts, reduce_outcomes, submission_effective
from solforge.planner.swarm.policy import (
    AgentFacts,
    Assign,
    Hold,
    PolicyConfig,
    ProblemFacts,
    Release,
    Snapshot,
    decide,
    effective_score,
    problem_value,
)
from solforge.planner.swarm.store import AssignmentView, JobOutcomeRow

CFG = PolicyConfig(min_assignment_s=0.0, stall_attempts=3, stall_s=600.0)


def _snap(problems: list[ProblemFacts], agents: list[AgentFacts], **kw: int) -> Snapshot:
    return Snapshot(problems=tuple(problems), agents=tuple(agents), **kw)


def test_effective_score_uses_sol_score_else_the_speedup_bound() -> None:
    assert effective_score(0.7, 3.0) == 0.7
    assert effective_score(None, 1.0) == pytest.approx(0.5)  # the baseline
    assert effective_score(None, 3.0) == pytest.approx(0.75)
    assert effective_score(0.9, 2.0, passed=False) == 0.0
    assert effective_score(None, None) == 0.0
    assert submission_effective(0.0, 1.0, passed=3, total=3) == pytest.approx(0.5)
    assert submission_effective(0.8, 2.0, passed=2, total=3) == 0.0  # rejected


def test_value_prefers_headroom_progress_and_few_agents() -> None:
    fresh = ProblemFacts("fresh")
    near = ProblemFacts("near", best_score=0.8)
    moving = ProblemFacts("moving", best_score=0.8, recent_gain=0.05)
    failing = ProblemFacts("failing", attempts=9, failures=9)
    spent = ProblemFacts("spent", agent_seconds=4 * 3600.0)
    assert problem_value(fresh, CFG) == pytest.approx(1.0)
    assert problem_value(near, CFG) == pytest.approx(0.2)
    assert problem_value(moving, CFG) == pytest.approx(0.4)
    assert problem_value(failing, CFG) < 0.6 and problem_value(spent, CFG) < 0.5
    assert problem_value(fresh, CFG, agents_on=1) == pytest.approx(0.5)


def test_each_idle_agent_gets_a_different_problem_by_value() -> None:
    problems = [ProblemFacts("a", best_score=0.6), ProblemFacts("b"), ProblemFacts("c", best_score=0.3)]
    agents = [
        AgentFacts("x", "idle"),
        AgentFacts("y", "idle"),
        AgentFacts("z", "idle"),
        AgentFacts("w", "idle"),
    ]
    decisions = decide(_snap(problems, agents), CFG)
    assigned = [(d.agent, d.problem, d.share) for d in decisions if isinstance(d, Assign)]
    assert assigned == [("x", "b", 0), ("y", "c", 0), ("z", "a", 0)]
    (hold,) = [d for d in decisions if isinstance(d, Hold)]
    assert hold.agent == "w" and "every open problem has an agent" in hold.reason


def test_sharing_is_explicit_and_numbered() -> None:
    problems = [ProblemFacts("a"), ProblemFacts("b", best_score=0.5)]
    agents = [
        AgentFacts("x", "working", problem="a"),
        AgentFacts("y", "working", problem="b"),
        AgentFacts("z", "idle"),
    ]
    shared = PolicyConfig(share_problems=True, max_agents_per_problem=2)
    (d,) = decide(_snap(problems, agents), shared)
    assert isinstance(d, Assign) and (d.problem, d.share) == ("a", 1) and "shared" in d.reason
    full = [*agents[:2], AgentFacts("v", "working", problem="a", share=1), AgentFacts("z", "idle")]
    decisions = decide(_snap(problems, full), shared)
    assert [(d.problem, d.share) for d in decisions if isinstance(d, Assign)] == [("b", 1)]


def test_solved_problems_release_their_agents_who_move_to_open_ones() -> None:
    problems = [ProblemFacts("done", best_score=0.95, agents_on=1), ProblemFacts("open")]
    decisions = decide(_snap(problems, [AgentFacts("x", "working", problem="done", assigned_s=5.0)]), CFG)
    assert (
        isinstance(decisions[0], Release) and decisions[0].why == "solved" and "0.950" in decisions[0].reason
    )
    assert isinstance(decisions[1], Assign) and decisions[1].problem == "open"


def test_stalled_agents_move_and_do_not_come_back() -> None:
    problems = [ProblemFacts("a"), ProblemFacts("b")]
    stuck = AgentFacts("x", "working", problem="a", assigned_s=900.0, attempts_since_gain=3)
    release, assign = decide(_snap(problems, [stuck]), CFG)
    assert isinstance(release, Release) and release.why == "stalled" and "3 evaluations" in release.reason
    assert isinstance(assign, Assign) and assign.problem == "b"
    slow = AgentFacts("x", "working", problem="a", assigned_s=900.0, seconds_since_gain=700.0)
    assert isinstance(decide(_snap(problems, [slow]), CFG)[0], Release)
    young = AgentFacts("x", "working", problem="a", assigned_s=10.0, attempts_since_gain=5)
    assert decide(_snap(problems, [young]), PolicyConfig(min_assignment_s=60.0)) == []
    lonely = [ProblemFacts("a")]
    assert isinstance(decide(_snap(lonely, [stuck]), CFG)[1], Hold)


def test_a_long_queue_holds_idle_agents() -> None:
    problems = [ProblemFacts("a"), ProblemFacts("b")]
    agents = [AgentFacts("x", "working", problem="a"), AgentFacts("y", "idle")]
    (hold,) = decide(_snap(problems, agents, queued_slot_jobs=9, slots=4), CFG)
    assert isinstance(hold, Hold) and "queue is long" in hold.reason
    (assign,) = decide(_snap(problems, agents, queued_slot_jobs=8, slots=4), CFG)
    assert isinstance(assign, Assign)


def test_finished_problems_are_given_back_only_when_nothing_else_is_free() -> None:
    problems = [ProblemFacts("a"), ProblemFacts("b", best_score=0.5)]
    agent = AgentFacts("x", "idle", finished=frozenset({"a"}))
    (d,) = decide(_snap(problems, [agent]), CFG)
    assert isinstance(d, Assign) and d.problem == "b"
    (d,) = decide(_snap(problems[:1], [agent]), CFG)
    assert isinstance(d, Assign) and d.problem == "a"


def test_agent_facts_count_evaluations_since_the_last_gain() -> None:
    rows = [
        JobOutcomeRow(
            id=j,
            agent="x",
            problem="a",
            kind="benchmark",
            solution_hash=j,
            created_at=t,
            finished_at=t,
            run_status=status,
            speedup=speedup,
        )
        for j, t, status, speedup in [
            ("j1", 10.0, "PASSED", 1.0),
            ("j2", 20.0, "PASSED", 3.0),
            ("j3", 30.0, "INCORRECT_NUMERICAL", None),
            ("j4", 40.0, "PASSED", 2.0),
            ("j0", 1.0, "PASSED", 9.0),
        ]
    ]
    jobs = sorted(reduce_outcomes(rows).values(), key=lambda j: j.finished_at)
    assert [j.passed for j in jobs] == [True, True, True, False, True]
    assignment = AssignmentView(id=1, run_id="r", agent="x", problem="a", share=0, reason="", started_at=5.0)
    facts = agent_facts("x", "working", assignment, jobs, [assignment], CFG, now=50.0)
    assert (facts.attempts_since_gain, facts.seconds_since_gain, facts.assigned_s) == (2, 30.0, 45.0)
    assert isinstance(jobs[0], JobOutcome)


def test_max_agents_per_problem_from_the_command_line_puts_every_agent_to_work() -> None:
    """The H200 swarm of 2026-12-03 ran 16 agents on 4 problems without sharing: 12 were held all run
    ("every open problem has an agent"). ``--max-agents-per-problem`` shares problems up to N agents each."""
    from solforge.server.cli import build_parser
    from solforge.server.cli_swarm import _config

    names = "qwen3_8b_rmsnorm,llama3_1_8b_fused_add_rmsnorm,deepseek_v3_fp8_act_quant"
    args = build_parser().parse_args(["swarm", "run", "--problem", names, "--agents", "16",
                                      "--max-agents-per-problem", "6"])
    policy = _config(args).policy
    assert policy.share_problems and policy.max_agents_per_problem == 6
    problems = [ProblemFacts(name) for name in names.split(",")]
    idle = [AgentFacts(f"a{i:02d}", "idle") for i in range(16)]
    assigned = [d for d in decide(_snap(problems, idle), policy) if isinstance(d, Assign)]
    assert len(assigned) == 16
    per_problem = {p.name: sum(d.problem == p.name for d in assigned) for p in problems}
    assert sorted(per_problem.values()) == [5, 5, 6]
    unshared = _config(build_parser().parse_args(["swarm", "run", "--problem", names])).policy
    assert not unshared.share_problems
    held = [d for d in decide(_snap(problems, idle), unshared) if isinstance(d, Hold)]
    assert len(held) == 13
