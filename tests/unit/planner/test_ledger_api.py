"""The Ledger facade without workers: agents, tokens, enqueue, ownership, cancel, results and stats."""

from __future__ import annotations

import hashlib
import json

import anyio
import pytest

from solforge.planner import (
    AgentCredentials,
    AgentExists,
    AgentNotFound,
    AuthenticationFailed,
    InvalidJobRequest,
    JobNotFound,
    Ledger,
    LedgerIntegrityError,
)
from solforge.planner.testing import fake_request, fake_solution
from solforge.sandbox.api import EvalReport


def _report(problem: str, scores: list[float | None], *, speedup: float = 2.0) -> EvalReport:
    traces = []
    for i, score in enumerate(scores):
        if score is None:
            ev = {
                "status": "INCORRECT_NUMERICAL",
                "log": "off by a lot",
                "correctness": {"matched_ratio": 0.1},
            }
        else:
            ev = {
                "status": "PASSED",
                "correctness": {"rounds": 5},
                "performance": {"latency_ms": 1.0, "sol_score": score, "speedup": speedup},
            }
        traces.append({"definition": problem, "workload": {"uuid": f"w{i}"}, "evaluation": ev})
    return EvalReport.model_validate(
        {"problem": problem, "solution": "s", "device": "NVIDIA H200", "traces": traces}
    )


# -- agents -----------------------------------------------------------------------------------------


def test_tokens_authenticate_and_only_their_hash_is_stored(ledger: Ledger) -> None:
    creds = ledger.register_agent("carol")
    assert isinstance(creds, AgentCredentials) and creds.agent.has_token
    assert ledger.authenticate(creds.token).name == "carol"
    with ledger.connector.engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT token_hash FROM agent WHERE name = 'carol'").scalar()
    assert stored == hashlib.sha256(creds.token.encode()).hexdigest() and creds.token not in str(stored)
    for bad in ("", "nope", creds.token + "x"):
        with pytest.raises(AuthenticationFailed):
            ledger.authenticate(bad)
    rotated = ledger.rotate_token("carol")
    with pytest.raises(AuthenticationFailed):
        ledger.authenticate(creds.token)
    assert ledger.authenticate(rotated.token).last_seen_at is not None
    ledger.set_agent_disabled("carol")
    with pytest.raises(AuthenticationFailed):
        ledger.authenticate(rotated.token)
    with pytest.raises(InvalidJobRequest, match="disabled"):
        ledger.enqueue("carol", "benchmark", fake_request())


def test_agent_names_are_unique_and_checked(ledger: Ledger) -> None:
    with pytest.raises(AgentExists):
        ledger.register_agent("alice")
    assert ledger.ensure_agent("alice").name == "alice"
    assert not ledger.register_agent("dave", issue_token=False).has_token  # type: ignore[union-attr]
    with pytest.raises(InvalidJobRequest, match="agent name"):
        ledger.ensure_agent("no spaces please")
    with pytest.raises(AgentNotFound):
        ledger.get_agent("zed")
    with pytest.raises(AgentNotFound):
        ledger.enqueue("zed", "benchmark", fake_request())


# -- jobs -------------------------------------------------------------------------------------------


def test_enqueue_returns_a_queued_job_with_an_unguessable_id(ledger: Ledger) -> None:
    first = ledger.enqueue("alice", "benchmark", fake_request(), priority=5)
    second = ledger.enqueue("alice", "benchmark", fake_request())
    compile_job = ledger.enqueue("alice", "compile", fake_request())
    submit = ledger.enqueue("alice", "submit", fake_request())
    assert first.status == "queued" and first.position == 0 and second.position == 1
    assert compile_job.position == 0  # its own queue
    assert len(first.id) == 32 and int(first.id, 16) and first.id != second.id
    assert first.solution_hash == fake_request().solution.content_hash()
    with ledger.connector.engine.connect() as conn:
        stored = {
            r[0]: json.loads(r[1])["options"]
            for r in conn.exec_driver_sql("SELECT job_id, request_json FROM job_payload").all()
        }
    assert stored[compile_job.id]["compile_only"] and stored[submit.id]["submission"]
    assert [e.kind for e in ledger.events(job_id=first.id)] == ["job.enqueued"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "train"}, "kind must be"),
        ({"priority": 5000}, "priority"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"slot_kind": "tpu"}, "slot_kind"),
        ({"kind": "compile", "slot_kind": "cuda"}, "compile jobs"),
        ({"timeout_s": -1.0}, "timeout_s"),
    ],
)
def test_bad_enqueue_arguments_say_what_to_fix(ledger: Ledger, kwargs: dict, message: str) -> None:
    args = {"kind": "benchmark", **kwargs}
    kind = args.pop("kind")
    with pytest.raises(InvalidJobRequest, match=message):
        ledger.enqueue("alice", kind, fake_request(), **args)


def test_agents_see_and_cancel_only_their_own_jobs(ledger: Ledger) -> None:
    job = ledger.enqueue("alice", "benchmark", fake_request())
    for call in (ledger.get_job, ledger.cancel_job, ledger.job_runs):
        with pytest.raises(JobNotFound):
            call(job.id, "bob")
        with pytest.raises(JobNotFound):
            call("0" * 32, "alice")
    assert ledger.get_job(job.id, "alice").status == "queued"


def test_cancelling_a_queued_job_is_immediate_and_idempotent(ledger: Ledger) -> None:
    job = ledger.enqueue("alice", "benchmark", fake_request())
    cancelled = ledger.cancel_job(job.id, "alice")
    assert cancelled.status == "cancelled" and cancelled.finished and cancelled.finished_at is not None
    assert ledger.cancel_job(job.id, "alice").status == "cancelled"
    assert [e.kind for e in ledger.events(job_id=job.id)] == ["job.enqueued", "job.cancelled"]


def test_wait_job_returns_the_pending_job_at_its_timeout(ledger: Ledger) -> None:
    job = ledger.enqueue("alice", "benchmark", fake_request())
    assert ledger.wait_job(job.id, "alice", timeout_s=0.2).status == "queued"

    async def main() -> list[str]:
        seen: list[str] = []

        async def cancel_soon() -> None:
            await anyio.sleep(0.2)
            await ledger.cancel_job_async(job.id, "alice")

        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_soon)
            view = await ledger.wait_job_async(
                job.id, "alice", 10.0, on_update=lambda v: seen.append(v.status)
            )
        assert view.status == "cancelled"
        return seen

    assert anyio.run(main) == ["queued", "cancelled"]


# -- results ----------------------------------------------------------------------------------------


def test_submissions_rank_on_the_leaderboard(ledger: Ledger) -> None:
    ledger.ensure_agent("carol")
    sol = fake_solution("s", definition="p1")
    a1 = ledger.record_submission("alice", _report("p1", [0.5, 0.7]), sol)
    assert a1.score == pytest.approx(0.6) and a1.passed == 2 and a1.speedup == pytest.approx(2.0)
    ledger.record_submission("alice", _report("p1", [0.9, None]), sol)  # a failed workload counts 0
    ledger.record_submission("bob", _report("p1", [0.8, 0.8], speedup=3.0), sol)
    ledger.record_submission("carol", _report("p1", [0.8, 0.8], speedup=2.5), sol)
    ledger.record_submission("carol", _report("p2", [0.3]), fake_solution("s", definition="p2"))
    board = ledger.leaderboard("p1")
    assert [(e.rank, e.agent, round(e.score, 3)) for e in board] == [
        (1, "bob", 0.8),
        (2, "carol", 0.8),
        (3, "alice", 0.6),
    ]
    assert ledger.leaderboard("p1", limit=1)[0].agent == "bob"
    assert ledger.leaderboard("nothing") == []
    best = {s.problem: (s.agent, round(s.score, 2)) for s in ledger.best_per_problem()}
    assert best == {"p1": ("bob", 0.8), "p2": ("carol", 0.3)}
    assert ledger.get_submission_solution(board[0].id).name == "s"
    history = ledger.agent_history("carol")
    assert [s.problem for s in history.submissions] == ["p2", "p1"]
    with pytest.raises(AgentNotFound):
        ledger.record_submission("zed", _report("p1", [0.1]), sol)


def test_one_submission_per_job(ledger: Ledger) -> None:
    job = ledger.enqueue("alice", "submit", fake_request("p1"))
    ledger.record_submission("alice", _report("p1", [0.5]), fake_solution(), job_id=job.id)
    with pytest.raises(LedgerIntegrityError):
        ledger.record_submission("alice", _report("p1", [0.5]), fake_solution(), job_id=job.id)


def test_queue_stats_and_history(ledger: Ledger) -> None:
    for _ in range(3):
        ledger.enqueue("alice", "benchmark", fake_request())
    ledger.enqueue("bob", "compile", fake_request())
    stats = ledger.queue_stats()
    assert stats.queued == {"benchmark": 3, "compile": 1} and stats.running == {}
    assert stats.queued_by_agent == {"alice": 3, "bob": 1}
    assert stats.oldest_queued_s is not None and 0 <= stats.oldest_queued_s < 60
    assert stats.started == 0 and stats.wait_p50_s is None
    history = ledger.agent_history("alice")
    assert history.job_counts == {"queued": 3} and len(history.jobs) == 3
    assert ledger.gpu_utilisation() == []


def test_standings_for_the_tools(ledger: Ledger) -> None:
    ledger.ensure_agent("carol")
    assert not ledger.has_agent_tokens()
    ledger.register_agent("tokened")
    assert ledger.has_agent_tokens()
    sol = fake_solution("s", definition="p1")
    job = ledger.enqueue("alice", "submit", fake_request("p1"))
    assert ledger.submission_for_job(job.id, "alice") is None
    ledger.record_submission("alice", _report("p1", [0.6]), sol, job_id=job.id)
    ledger.record_submission("bob", _report("p1", [0.9]), sol)
    ledger.record_submission("bob", _report("p2", [0.2]), sol)
    ledger.enqueue("carol", "benchmark", fake_request("p3"))
    entry = ledger.submission_for_job(job.id, "alice")
    assert entry is not None and entry.rank == 2 and entry.agent == "alice"
    with pytest.raises(JobNotFound):
        ledger.submission_for_job(job.id, "bob")
    mine = ledger.problem_standings("alice")
    assert {p: (s.status, s.best_score, s.agent_best) for p, s in mine.items()} == {
        "p1": ("submitted", 0.9, 0.6),
        "p2": ("new", 0.2, None),
    }
    assert ledger.problem_standings("carol")["p3"].status == "attempted"
    assert [(s.rank, s.agent, s.firsts, s.problems) for s in ledger.standings()] == [
        (1, "bob", 2, 2),
        (2, "alice", 0, 1),
    ]
