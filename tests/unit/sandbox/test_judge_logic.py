"""The judge's logic without processes: correctness rounds, timing records, repeated failures, baselines.

The judge runs in this process and talks to in-process candidates (in_process_judge.py); the real harness
answers unless a test scripts a hang, a crash or a forged record. What a real process adds (confinement,
CUDA IPC, killing a hung tree) is tested in tests/integration and tests/e2e.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.in_process_judge import evaluate_in_process, judge_state, python_solution, workloads_of

from solforge.problems import Status, load_problem, reference_solution
from solforge.sandbox.judge.state import REPEAT_TIMEOUT_S
from solforge.sandbox.timing import interquartile_range

DATA = Path(__file__).resolve().parents[2] / "data" / "sol_execbench_rmsnorm"
DEFINITION = "rmsnorm_h4096_handwritten"

CORRECT = """
import torch

def run(hidden_states, weight, eps, output):
    x = hidden_states.float()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    output.copy_(y.to(output.dtype))
"""


def statuses(report: Any) -> list[Status]:
    return [t.evaluation.status for t in report.traces]


def test_a_correct_solution_passes_every_workload_with_its_timing_and_rounds(tmp_path: Path) -> None:
    state, spares = judge_state(tmp_path)
    report = evaluate_in_process(state, DATA, python_solution(CORRECT, DEFINITION), tmp_path, rounds=3)
    assert statuses(report) == [Status.PASSED] * 3
    for trace in report.traces:
        perf, correctness = trace.evaluation.performance, trace.evaluation.correctness
        assert perf is not None and perf.latency_ms > 0 and perf.timer == "cpu" and perf.iterations == 5
        assert perf.sol_score is None  # no speed of light on the CPU
        assert correctness is not None and correctness.rounds == 3 and correctness.matched_ratio >= 0.99
    # One candidate for the whole evaluation: loaded once, three checks and one timed loop per workload.
    assert spares.commands(trusted=False) == ["load"] + ["check", "check", "check", "time"] * 3


def test_a_wrong_answer_fails_with_its_round_and_error_statistics(tmp_path: Path) -> None:
    wrong = CORRECT.replace("output.copy_(y.to(output.dtype))", "output.copy_((y * 1.1).to(output.dtype))")
    state, _ = judge_state(tmp_path)
    report = evaluate_in_process(state, DATA, python_solution(wrong, DEFINITION), tmp_path)
    assert statuses(report) == [Status.INCORRECT_NUMERICAL] * 3
    ev = report.traces[0].evaluation
    assert ev.log.startswith("round 1/2:") and ev.performance is None
    assert ev.correctness is not None and ev.correctness.matched_ratio < 0.99 and ev.correctness.max_absolute_error > 0


def test_a_solution_right_when_checked_but_wrong_when_timed_is_a_reward_hack(tmp_path: Path) -> None:
    """The judge checks one timed call it picks at random: a solution that only computes on its first calls
    (the check rounds) and returns stale zeros afterwards is caught there."""
    lazy = CORRECT + """
calls = 0
_run = run

def run(hidden_states, weight, eps, output):
    global calls
    calls += 1
    if calls <= 2:
        _run(hidden_states, weight, eps, output)
    else:
        output.zero_()
"""
    state, _ = judge_state(tmp_path)
    report = evaluate_in_process(state, DATA, python_solution(lazy, DEFINITION), tmp_path,
                                 workloads=workloads_of(DATA)[:1])
    (trace,) = report.traces
    assert trace.evaluation.status is Status.REWARD_HACK
    assert "computes correctly when checked but not when timed" in trace.evaluation.log


@pytest.mark.parametrize("times_ms, why", [
    ([0.01] * 4, "wrong count"),
    ([0.01] * 4 + [float("nan")], "a NaN"),
    ([0.01] * 4 + [-1.0], "a negative time"),
])
def test_a_malformed_timing_record_is_a_reward_hack(tmp_path: Path, times_ms: list[float], why: str) -> None:
    def forge(cmd: dict[str, Any], candidate: Any) -> dict[str, Any] | None:
        if cmd["cmd"] != "time" or candidate.trusted:
            return None
        return {"ok": True, "measurement": {"times_ms": times_ms, "timer": "cpu"}}

    state, _ = judge_state(tmp_path, forge)
    report = evaluate_in_process(state, DATA, python_solution(CORRECT, DEFINITION), tmp_path,
                                 workloads=workloads_of(DATA)[:1])
    (trace,) = report.traces
    assert trace.evaluation.status is Status.REWARD_HACK, why
    assert "timing record is malformed" in trace.evaluation.log


def test_the_median_of_the_timed_calls_is_the_latency(tmp_path: Path) -> None:
    """The judge reports the median of the candidate's per-call times (and their spread), not a mean a few
    slow calls would drag."""
    times = [0.010, 0.011, 0.012, 0.013, 0.900]

    def record(cmd: dict[str, Any], candidate: Any) -> dict[str, Any] | None:
        if cmd["cmd"] != "time" or candidate.trusted:
            return None
        answer = candidate.harness.handle(cmd)  # the outputs of the checked call, as the harness delivers them
        answer["measurement"]["times_ms"] = times
        return answer

    state, _ = judge_state(tmp_path, record)
    report = evaluate_in_process(state, DATA, python_solution(CORRECT, DEFINITION), tmp_path,
                                 workloads=workloads_of(DATA)[:1], time_baseline=False)
    perf = report.traces[0].evaluation.performance
    assert perf is not None and perf.latency_ms == pytest.approx(0.012, rel=0.02)
    assert perf.latency_iqr_ms == pytest.approx(interquartile_range(times)) and perf.iterations == len(times)


def test_different_amounts_of_gpu_work_per_timed_call_are_refused_only_without_defences(tmp_path: Path,
                                                                                  monkeypatch: Any) -> None:
    monkeypatch.setenv("SOLFORGE_DEFENCES", "off")

    def uneven(cmd: dict[str, Any], candidate: Any) -> dict[str, Any] | None:
        if cmd["cmd"] != "time" or candidate.trusted:
            return None
        answer = candidate.harness.handle(cmd)
        answer["measurement"]["kernels_per_call"] = [3, 3, 1, 3, 3]
        return answer

    state, _ = judge_state(tmp_path, uneven)
    report = evaluate_in_process(state, DATA, python_solution(CORRECT, DEFINITION), tmp_path,
                                 workloads=workloads_of(DATA)[:1])
    (trace,) = report.traces
    assert trace.evaluation.status is Status.REWARD_HACK and "different amounts of GPU work" in trace.evaluation.log
    # With the defences, every timed call has fresh inputs and the checked one is hidden, so a data-dependent
    # launch count is honest: a warning, not a verdict.
    monkeypatch.setenv("SOLFORGE_DEFENCES", "on")
    report = evaluate_in_process(state, DATA, python_solution(CORRECT, DEFINITION), tmp_path,
                                 workloads=workloads_of(DATA)[:1])
    (trace,) = report.traces
    assert trace.evaluation.status is Status.PASSED
    assert "timed calls launched between 1 and 3 GPU operations" in trace.evaluation.log


@pytest.mark.parametrize("kind, answer, status", [
    ("hang", {"ok": False, "status": "TIMEOUT", "hung": True, "error": "the call did not finish"}, Status.TIMEOUT),
    ("crash", {"ok": False, "status": "RUNTIME_ERROR", "died": True, "error": "the candidate process died"},
     Status.RUNTIME_ERROR),
    ("oom", {"ok": False, "status": "RUNTIME_ERROR", "error": "out of GPU memory: tried to allocate"},
     Status.RUNTIME_ERROR),
])
def test_a_failure_repeated_twice_stops_the_later_workloads(tmp_path: Path, kind: str, answer: dict[str, Any],
                                                            status: Status) -> None:
    """After two hangs (or crashes, or running out of memory) the remaining workloads are not run the same way
    again; each says which workload it repeats. A hang's second workload gets the short repeat timeout."""
    def fail(cmd: dict[str, Any], candidate: Any) -> dict[str, Any] | None:
        return dict(answer) if cmd["cmd"] == "check" and not candidate.trusted else None

    state, spares = judge_state(tmp_path, fail)
    report = evaluate_in_process(state, DATA, python_solution(CORRECT, DEFINITION), tmp_path)
    first, second, third = report.traces
    assert statuses(report) == [status] * 3
    assert not first.evaluation.log.startswith("not run") and not second.evaluation.log.startswith("not run")
    assert third.evaluation.log.startswith(f"not run: it repeats workload {second.workload.uuid}")
    assert first.workload.uuid in third.evaluation.log
    checks = [c for c, seen in spares.log if c == "check" and not seen["trusted"]]
    assert len(checks) == 2  # the third workload was never sent
    if kind == "hang":
        limits = [seen["timeout_s"] for c, seen in spares.log if c == "check" and not seen["trusted"]]
        assert limits[0] == pytest.approx(60, abs=1) and limits[1] <= REPEAT_TIMEOUT_S + 1


def test_one_crash_is_not_a_pattern_the_next_workload_gets_a_fresh_candidate(tmp_path: Path) -> None:
    crashed: list[int] = []

    def crash_once(cmd: dict[str, Any], candidate: Any) -> dict[str, Any] | None:
        if cmd["cmd"] == "check" and not candidate.trusted and not crashed:
            crashed.append(1)
            return {"ok": False, "status": "RUNTIME_ERROR", "died": True, "error": "the candidate process died"}
        return None

    state, spares = judge_state(tmp_path, crash_once)
    report = evaluate_in_process(state, DATA, python_solution(CORRECT, DEFINITION), tmp_path, time_baseline=False)
    assert statuses(report) == [Status.RUNTIME_ERROR, Status.PASSED, Status.PASSED]
    assert spares.commands(trusted=False).count("load") == 2  # loaded again in a new candidate after the crash


def test_a_solution_that_does_not_import_fails_every_workload_without_running(tmp_path: Path) -> None:
    state, spares = judge_state(tmp_path)
    report = evaluate_in_process(state, DATA, python_solution("import no_such_module_here\n", DEFINITION), tmp_path)
    assert statuses(report) == [Status.COMPILE_ERROR] * 3
    assert "no_such_module_here" in report.traces[0].evaluation.log
    assert spares.commands(trusted=False) == ["load"]


def test_a_baseline_is_measured_once_in_trusted_processes_and_then_kept(tmp_path: Path) -> None:
    """On the CPU the baseline is the eager reference (no torch.compile there), timed in a process of its own
    after the candidate's loop, and kept in the cache: a second evaluation measures nothing."""
    state, spares = judge_state(tmp_path)
    first = evaluate_in_process(state, DATA, python_solution(CORRECT, DEFINITION), tmp_path)
    assert statuses(first) == [Status.PASSED] * 3
    assert len(first.baselines) == 3 and all(b.eager_ms and b.compiled_ms is None for b in first.baselines)
    assert spares.commands(trusted=True) == ["load", "time", "time", "time"]
    for trace, record in zip(first.traces, first.baselines, strict=True):
        perf = trace.evaluation.performance
        assert perf.baseline_latency_ms == record.baseline_ms and perf.speedup == pytest.approx(
            record.baseline_ms / perf.latency_ms)
    cached = json.loads((tmp_path / "cache" / "baselines" / f"{load_problem(DATA).name}.json").read_text())
    assert len(cached) == 3

    spares.log.clear()
    again = evaluate_in_process(state, DATA, python_solution(CORRECT, DEFINITION), tmp_path)
    assert statuses(again) == [Status.PASSED] * 3 and again.baselines == []
    assert spares.commands(trusted=True) == []
    assert [t.evaluation.performance.baseline_latency_ms for t in again.traces] == [b.baseline_ms for b in first.baselines]


def test_the_reference_as_a_solution_passes(tmp_path: Path) -> None:
    state, _ = judge_state(tmp_path)
    report = evaluate_in_process(state, DATA, reference_solution(load_problem(DATA).definition), tmp_path,
                                 time_baseline=False)
    assert statuses(report) == [Status.PASSED] * 3


def test_a_warm_judge_keeps_processes_for_the_next_evaluation_and_those_ahead() -> None:
    from solforge.sandbox.judge.__main__ import spares_wanted

    assert spares_wanted(depth=2, baseline_processes=0, ahead=0) == 2  # the pool's depth at least
    assert spares_wanted(depth=2, baseline_processes=2, ahead=0) == 3  # a candidate and two baselines
    assert spares_wanted(depth=2, baseline_processes=2, ahead=1) == 6  # and as many for one evaluation ahead
