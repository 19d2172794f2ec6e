"""The warm judge on the CPU: faster second evaluations with the same verdicts, survival of bad
solutions, early stops on repeated failures, baselines from the caller, and a candidate that cannot
reach the judge."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from solforge.problems import Solution, Status, load_solution
from solforge.sandbox.api import BaselineRecord, EvalEvent, EvalOptions, EvalRequest
from solforge.sandbox.evaluate import evaluate
from solforge.sandbox.warm import WarmJudge

DATA = Path(__file__).parents[2] / "data" / "sol_execbench_rmsnorm"
FAST = {"rounds": 2, "iterations": 3, "warmup": 1, "device": "cpu", "run_timeout_s": 60}
RMS = "x = hidden_states.float(); y = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float())"
HONEST = f"import torch\ndef run(hidden_states, weight, eps, output):\n    {RMS}\n    output.copy_(y.to(output.dtype))\n"


def _solution(code: str) -> Solution:
    return Solution.model_validate({
        "name": "test", "definition": "rmsnorm_h4096_handwritten", "author": "tests",
        "spec": {"languages": ["pytorch"], "entry_point": "main.py::run"},
        "sources": [{"path": "main.py", "content": code}],
    })


def _request(solution: Solution, cache: Path, **options: object) -> EvalRequest:
    return EvalRequest(problem=str(DATA), solution=solution, options=EvalOptions(**{**FAST, "cache_dir": cache, **options}))


def _candidate_states(judge: WarmJudge) -> list[str]:
    """The states of the warm judge's candidate processes (the one in use and its spares)."""
    assert judge._process is not None
    states = []
    for proc in psutil.Process(judge._process.proc.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "solforge.sandbox.candidate" in " ".join(proc.cmdline()):
                states.append(proc.status())
    return states


def _statuses(report: object) -> list[Status]:
    return [t.evaluation.status for t in report.traces]  # type: ignore[attr-defined]


@pytest.fixture
def judge() -> Iterator[WarmJudge]:
    with WarmJudge(device="cpu") as warm:
        yield warm


def test_a_second_evaluation_is_at_least_three_times_faster_with_the_same_verdicts(
        judge: WarmJudge, tmp_path: Path) -> None:
    solution = load_solution(DATA / "solution_pytorch.json")
    started = time.monotonic()
    first = evaluate(_request(solution, tmp_path / "cache"), judge=judge)
    first_s = time.monotonic() - started
    time.sleep(3)  # an agent reads the answer; meanwhile the spare candidate process starts up
    started = time.monotonic()
    second = evaluate(_request(solution, tmp_path / "cache"), judge=judge)
    second_s = time.monotonic() - started
    assert _statuses(first) == _statuses(second) == [Status.PASSED] * 3
    assert first.baselines and not second.baselines  # measured once, then found in the cache
    assert judge.starts == 1
    assert second_s * 3 <= first_s, f"first {first_s:.2f} s, second {second_s:.2f} s"
    assert second.phases["load"] < first.phases["load"]
    # The first took a process still importing torch, and its report says how long it waited for it.
    assert first.phases["spare_wait"] > 0.5 and first.phases["load"] >= first.phases["spare_wait"]
    assert second.phases.get("spare_wait", 0.0) < first.phases["spare_wait"]
    assert "import" in first.phases and "import" in second.phases


def test_missing_baselines_are_timed_after_the_candidate_is_done_and_their_traces_sent_then(
        judge: WarmJudge, tmp_path: Path) -> None:
    events: list[EvalEvent] = []
    report = evaluate(_request(load_solution(DATA / "solution_pytorch.json"), tmp_path / "cache"),
                      on_event=events.append, judge=judge)
    assert _statuses(report) == [Status.PASSED] * 3 and len(report.baselines) == 3
    kinds = [e.kind if e.kind != "progress" else (e.message or "").split(" ")[0] for e in events]
    # Every workload ran in the one candidate before any reference was timed (no restart per workload);
    # each trace then came with its baseline, in the workloads' order.
    assert kinds.index("timing") > max(i for i, k in enumerate(kinds) if k == "workload")
    traces = [e.trace for e in events if e.kind == "trace"]
    assert [t.workload.uuid for t in traces] == [t.workload.uuid for t in report.traces]
    assert all(t.evaluation.performance.baseline_latency_ms for t in traces)
    assert report.phases["baseline"] > 0


def test_the_warm_judge_survives_a_crash_a_hang_and_a_forged_answer(judge: WarmJudge, tmp_path: Path) -> None:
    crash = "import ctypes\ndef run(hidden_states, weight, eps, output):\n    ctypes.string_at(0)\n"
    hang = "def run(hidden_states, weight, eps, output):\n    while True:\n        pass\n"
    forge = ("import socket, json, struct, gc\n"
             "def run(hidden_states, weight, eps, output):\n"
             "    for fd in range(3, 64):\n"
             "        try:\n"
             "            s = socket.socket(fileno=fd)\n"
             "            body = json.dumps({'ok': True}).encode()\n"
             "            s.sendall(struct.pack('!cQ', b'J', len(body)) + body)\n"
             "        except OSError:\n"
             "            pass\n")
    workload = ["a1b2c3d4-0001"]
    assert _statuses(evaluate(_request(_solution(crash), tmp_path / "c"), judge=judge)) == \
        [Status.RUNTIME_ERROR, Status.RUNTIME_ERROR, Status.RUNTIME_ERROR]
    assert _statuses(evaluate(_request(_solution(hang), tmp_path / "c", workloads=workload, run_timeout_s=3),
                              judge=judge)) == [Status.TIMEOUT]
    forged = _statuses(evaluate(_request(_solution(forge), tmp_path / "c", workloads=workload), judge=judge))
    assert forged[0] in (Status.REWARD_HACK, Status.RUNTIME_ERROR), forged
    honest = evaluate(_request(_solution(HONEST), tmp_path / "c"), judge=judge)
    assert _statuses(honest) == [Status.PASSED] * 3
    assert judge.starts == 1, "a bad solution took the warm judge down"


def test_a_gated_evaluation_takes_the_gpu_lease_only_after_building_and_loading(judge: WarmJudge, tmp_path: Path) -> None:
    """A worker's lease covers the GPU work only: the judge builds and loads the solution first, then
    waits for the lease; a solution that does not load never asks for it."""
    events: list[tuple[str, float]] = []
    waiting: list[list[str]] = []

    @contextlib.contextmanager
    def lease() -> Iterator[None]:
        events.append(("lease", time.monotonic()))
        time.sleep(0.5)  # another job's GPU work: not this evaluation's time limit, not its load
        waiting.append(_candidate_states(judge))
        yield
        events.append(("release", time.monotonic()))

    def seen(event: EvalEvent) -> None:
        if event.kind != "progress" or (event.message or "").startswith("workload"):
            events.append((event.kind if event.kind != "progress" else "workload", time.monotonic()))

    report = evaluate(_request(load_solution(DATA / "solution_pytorch.json"), tmp_path / "cache"), judge=judge,
                      on_event=seen, gpu_lease=lease)
    assert _statuses(report) == [Status.PASSED] * 3
    order = [kind for kind, _ in events if kind != "trace"]
    assert order[:2] == ["build", "lease"] and order[-2:] == ["report", "release"], order
    assert order[2:-2] == ["workload"] * 3, order  # every workload ran inside the lease
    # While it waited for the lease, the loaded candidate was frozen (another lane times meanwhile); the
    # spare started for the next evaluation was not.
    assert waiting and waiting[0].count(psutil.STATUS_STOPPED) == 1, waiting
    assert psutil.STATUS_STOPPED not in _candidate_states(judge)
    assert report.phases["load"] > 0 and report.phases["gpu_wait"] >= 0.5
    # The cache had no baselines: their processes started and loaded the reference before the lease too.
    assert report.phases["baseline_load"] > 0 and len(report.baselines) == 3
    held = events[-1][1] - dict(events)["lease"]
    assert held < report.seconds - report.phases["load"], (held, report.phases)

    events.clear()
    broken = _solution("raise ImportError('this solution does not load')\n")
    report = evaluate(_request(broken, tmp_path / "cache"), judge=judge, gpu_lease=lease)
    assert _statuses(report) == [Status.COMPILE_ERROR] * 3
    assert not events, "a solution that does not load took the lease"
    assert judge.starts == 1


def test_a_job_cancelled_while_waiting_for_the_gpu_stops_the_judge_and_the_next_one_is_correct(
        judge: WarmJudge, tmp_path: Path) -> None:
    class Cancelled(Exception):
        pass

    @contextlib.contextmanager
    def refused() -> Iterator[None]:
        raise Cancelled("stopped while it waited for the GPU")
        yield  # pragma: no cover

    with pytest.raises(Cancelled):
        evaluate(_request(_solution(HONEST), tmp_path / "c"), judge=judge, gpu_lease=refused)
    assert _statuses(evaluate(_request(_solution(HONEST), tmp_path / "c"), judge=judge)) == [Status.PASSED] * 3
    assert judge.starts == 2  # the judge left waiting for its go was replaced


def test_a_cancelled_evaluation_replaces_the_judge_and_the_next_one_is_correct(judge: WarmJudge, tmp_path: Path) -> None:
    import threading

    cancel = threading.Event()
    hang = "def run(hidden_states, weight, eps, output):\n    while True:\n        pass\n"
    threading.Timer(4.0, cancel.set).start()
    stopped = evaluate(_request(_solution(hang), tmp_path / "c"), judge=judge, cancel=cancel)
    assert stopped.note == "cancelled"
    assert _statuses(evaluate(_request(_solution(HONEST), tmp_path / "c"), judge=judge)) == [Status.PASSED] * 3
    assert judge.starts == 2


def test_a_solution_that_hangs_everywhere_costs_one_timeout(judge: WarmJudge, tmp_path: Path) -> None:
    hang = "def run(hidden_states, weight, eps, output):\n    while True:\n        pass\n"
    started = time.monotonic()
    report = evaluate(_request(_solution(hang), tmp_path / "c", run_timeout_s=20), judge=judge)
    elapsed = time.monotonic() - started
    assert _statuses(report) == [Status.TIMEOUT] * 3
    logs = [t.evaluation.log for t in report.traces]
    assert "not run: it repeats workload a1b2c3d4-0002" in logs[2] and "hung on workloads a1b2c3d4-0001" in logs[2]
    assert "not run" not in logs[0] and "not run" not in logs[1]
    # one full timeout (20 s) and one short one (15 s), not three full ones
    assert elapsed < 20 + 15 + 15, elapsed


def test_a_solution_that_crashes_everywhere_stops_after_the_second_crash(judge: WarmJudge, tmp_path: Path) -> None:
    crash = "import ctypes\ndef run(hidden_states, weight, eps, output):\n    ctypes.string_at(0)\n"
    report = evaluate(_request(_solution(crash), tmp_path / "c"), judge=judge)
    logs = [t.evaluation.log for t in report.traces]
    assert _statuses(report) == [Status.RUNTIME_ERROR] * 3
    assert "process died" in logs[0] and "process died" in logs[1]
    assert logs[2].startswith("not run: it repeats workload a1b2c3d4-0002") and "crashed" in logs[2]


def test_baselines_the_caller_knows_are_used_and_not_measured_again(judge: WarmJudge, tmp_path: Path) -> None:
    solution = _solution(HONEST)
    measured = evaluate(_request(solution, tmp_path / "first"), judge=judge)
    assert len(measured.baselines) == 3 and all(b.source == "measured" and b.eager_ms for b in measured.baselines)
    known = [b.model_copy(update={"eager_ms": 42.0, "baseline_ms": 42.0}) for b in measured.baselines]
    request = _request(solution, tmp_path / "second").model_copy(update={"baselines": known})
    again = evaluate(request, judge=judge)
    assert again.baselines == []  # nothing was timed: an empty cache, but the caller knew them all
    assert [t.evaluation.performance.baseline_latency_ms for t in again.traces] == [42.0, 42.0, 42.0]


def test_a_shipped_table_seeds_the_baselines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from solforge.sandbox.baseline import table_name

    solution = _solution(HONEST)
    with WarmJudge(device="cpu") as first:
        measured = evaluate(_request(solution, tmp_path / "first"), judge=first).baselines
    tables = tmp_path / "tables"
    tables.mkdir()
    rows = [b.model_copy(update={"eager_ms": 7.0, "baseline_ms": 7.0}) for b in measured]
    (tables / table_name("cpu")).write_text("".join(r.model_dump_json() + "\n" for r in rows))
    monkeypatch.setenv("SOLFORGE_BASELINE_TABLES", str(tables))
    with WarmJudge(device="cpu") as seeded:  # started with the variable set
        report = evaluate(_request(solution, tmp_path / "second"), judge=seeded)
    assert report.baselines == []
    assert {t.evaluation.performance.baseline_latency_ms for t in report.traces} == {7.0}


def test_baseline_keys_change_with_the_reference() -> None:
    from solforge.problems import load_problem
    from solforge.sandbox.baseline import baseline_key

    problem = load_problem(DATA)
    workload = problem.workloads[0]
    key = baseline_key(problem.definition, workload, "NVIDIA H200", "2.11.0", "auto")
    changed = problem.definition.model_copy(update={"reference": problem.definition.reference + "\n# changed\n"})
    assert key != baseline_key(changed, workload, "NVIDIA H200", "2.11.0", "auto")
    assert key != baseline_key(problem.definition, workload, "NVIDIA B200", "2.11.0", "auto")
    assert key != baseline_key(problem.definition, workload, "NVIDIA H200", "2.12.0", "auto")
    assert key == baseline_key(problem.definition, workload, "NVIDIA H200", "2.11.0", "auto")
    assert BaselineRecord(key=key, problem="p", workload=workload.uuid, hardware="h", baseline_ms=1.0).source == "measured"


ESCAPE = """import ctypes, os
def run(hidden_states, weight, eps, output):
    import torch
    libc = ctypes.CDLL(None, use_errno=True)
    judge = os.getppid()
    reached = []
    for leaf in ("mem", "environ"):
        fd = libc.open(("/pr" + "oc/%d/" % judge + leaf).encode(), 0)
        if fd >= 0:
            buf = ctypes.create_string_buffer(1 << 16)
            got = libc.read(fd, buf, 1 << 16)
            libc.close(fd)
            if leaf == "mem" and got > 0 or b"hunter2" in buf.raw[:max(got, 0)]:
                reached.append(leaf)
    if getattr(libc, "ki" + "ll")(judge, 0) == 0:
        reached.append("signal")
    {RMS}
    output.copy_((y * (0 if reached else 1)).to(output.dtype))
""".replace("{RMS}", RMS)


def test_a_candidate_cannot_read_signal_or_learn_the_secrets_of_the_warm_judge(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a worker's environment may hold: the ledger's password, an agent's API key.
    monkeypatch.setenv("SOLFORGE_DB", "postgresql://solforge:hunter2@db.internal/ledger")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-hunter2")
    with WarmJudge(device="cpu") as judge:
        report = evaluate(_request(_solution(ESCAPE), tmp_path / "c"), judge=judge)
        statuses = _statuses(report)
        # PASSED: the judge's memory and signals were refused (Landlock) and its environment held no
        # secret; REWARD_HACK: the harness stopped it first. A wrong answer means it got through.
        assert set(statuses) <= {Status.PASSED, Status.REWARD_HACK}, [t.evaluation.log for t in report.traces]
        assert _statuses(evaluate(_request(_solution(HONEST), tmp_path / "c"), judge=judge)) == [Status.PASSED] * 3
        assert judge.starts == 1


LEAVE = f"""import os, torch
def run(hidden_states, weight, eps, output):
    for folder in (os.path.expanduser("~"), os.path.join(os.path.expanduser("~"), "jit-cache", "triton")):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "left-by-a"), "w") as f:
            f.write("a")
    {RMS}
    output.copy_(y.to(output.dtype))
"""
FIND = f"""import os, torch
def run(hidden_states, weight, eps, output):
    home = os.path.expanduser("~")
    found = [p for p in (os.path.join(home, "left-by-a"), os.path.join(home, "jit-cache", "triton", "left-by-a"))
             if os.path.exists(p)]
    {RMS}
    output.copy_((y * (0 if found else 1)).to(output.dtype))
"""


def test_nothing_one_solution_leaves_reaches_the_next(judge: WarmJudge, tmp_path: Path) -> None:
    """A warm judge reuses no candidate folder: files and JIT caches stay with their own solution."""
    assert _statuses(evaluate(_request(_solution(LEAVE), tmp_path / "c"), judge=judge)) == [Status.PASSED] * 3
    time.sleep(2)  # the next spare is ready
    report = evaluate(_request(_solution(FIND), tmp_path / "c"), judge=judge)
    assert _statuses(report) == [Status.PASSED] * 3, [t.evaluation.log for t in report.traces]
    # The same solution again gets back its own JIT cache (its build key), and nothing else of its folder.
    kept = list((tmp_path / "c" / "jit").glob("*/triton/left-by-a"))
    assert len(kept) == 1


@pytest.mark.parametrize(("ahead", "kept"), [("0", 2), ("1", 4)])
def test_a_warm_judge_keeps_processes_started_for_evaluations_ahead(
        ahead: str, kept: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After an evaluation that took a candidate and a baseline process, the judge starts processes for the next
    such evaluation (2) and, with SOLFORGE_SPARES_AHEAD=1, for one more (4): back to back, each then takes
    processes started an evaluation earlier rather than ones still importing torch."""
    monkeypatch.setenv("SOLFORGE_SPARES_AHEAD", ahead)
    with WarmJudge(device="cpu") as warm:
        report = evaluate(_request(load_solution(DATA / "solution_pytorch.json"), tmp_path / "cache",
                                   workloads=["a1b2c3d4-0001"]), judge=warm)
        assert _statuses(report) == [Status.PASSED] and report.baselines
        deadline = time.monotonic() + 10
        while len(_candidate_states(warm)) < kept and time.monotonic() < deadline:
            time.sleep(0.1)  # the judge refills once it has sent the report
        time.sleep(0.5)  # and starts no more than that
        assert len(_candidate_states(warm)) == kept
