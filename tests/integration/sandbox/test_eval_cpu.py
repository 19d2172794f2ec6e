"""The whole evaluation on the CPU: judge and candidate processes, statuses, clean-up, the CLI."""

from __future__ import annotations

import contextlib
import glob
import json
import subprocess
import sys
from pathlib import Path

import pytest

from solforge.problems import Solution, Status, load_problem, load_solution, reference_solution
from solforge.sandbox.api import EvalOptions, EvalRequest
from solforge.sandbox.evaluate import evaluate

DATA = Path(__file__).parents[2] / "data" / "sol_execbench_rmsnorm"
FAST = {"rounds": 2, "iterations": 3, "warmup": 1, "device": "cpu", "run_timeout_s": 60}


def _python_solution(code: str, *, dps: bool = True, language: str = "pytorch") -> Solution:
    return Solution.model_validate({
        "name": "test", "definition": "rmsnorm_h4096_handwritten", "author": "tests",
        "spec": {"languages": [language], "entry_point": "main.py::run", "destination_passing_style": dps},
        "sources": [{"path": "main.py", "content": code}],
    })


def _run(solution: Solution, tmp_path: Path, **options: object) -> list[Status]:
    opts = EvalOptions(**{**FAST, "cache_dir": tmp_path / "cache", **options})
    report = evaluate(EvalRequest(problem=str(DATA), solution=solution, options=opts))
    return [t.evaluation.status for t in report.traces]


def test_handwritten_sol_execbench_solution_passes(tmp_path: Path) -> None:
    solution = load_solution(DATA / "solution_pytorch.json")
    opts = EvalOptions(**{**FAST, "cache_dir": tmp_path / "cache"})
    report = evaluate(EvalRequest(problem=str(DATA), solution=solution, options=opts))
    assert report.all_passed, [t.evaluation.log for t in report.traces]
    assert report.timer == "cpu" and len(report.traces) == 3
    perf = report.traces[0].evaluation.performance
    assert perf is not None and perf.latency_ms > 0 and perf.sol_score is None and perf.timer == "cpu"
    assert perf.reference_latency_ms is not None and perf.speedup is not None
    assert report.traces[0].evaluation.correctness.rounds == 2
    # A one-shot judge says where its start-up went: mostly importing torch.
    parts = {k: v for k, v in report.phases.items() if k.startswith("startup_")}
    assert set(parts) == {"startup_before_torch", "startup_torch", "startup_device"}
    assert parts["startup_torch"] > 0.2 and sum(parts.values()) <= report.phases["startup"] + 0.05


def test_reference_as_solution_passes(tmp_path: Path) -> None:
    problem = load_problem(DATA)
    assert set(_run(reference_solution(problem.definition), tmp_path)) == {Status.PASSED}


RMS = "x = hidden_states.float(); y = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float())"


@pytest.mark.parametrize(
    ("code", "dps", "expected"),
    [
        ("import torch\ndef run(hidden_states, weight, eps, output):\n    output.zero_()\n", True,
         Status.INCORRECT_NUMERICAL),
        (f"import torch\ndef run(hidden_states, weight, eps, output):\n    {RMS}\n    output.copy_((y * 1.1).to(output.dtype))\n",
         True, Status.INCORRECT_NUMERICAL),
        (f"import torch\ndef run(hidden_states, weight, eps):\n    {RMS}\n    return y\n", False, Status.INCORRECT_DTYPE),
        (f"import torch\ndef run(hidden_states, weight, eps):\n    {RMS}\n    return y.to(hidden_states.dtype)[:, :10]\n",
         False, Status.INCORRECT_SHAPE),
        ("def run(hidden_states, weight, eps, output):\n    raise ValueError('boom')\n", True, Status.RUNTIME_ERROR),
        ("def run(hidden_states, weight, eps, output):\n    pass\n", True, Status.INCORRECT_NUMERICAL),
        ("import torch\ndef run(hidden_states, weight, eps, output):\n    hidden_states.zero_(); output.zero_()\n", True,
         Status.INCORRECT_NUMERICAL),
    ],
    ids=["zeros", "perturbed", "wrong-dtype", "wrong-shape", "raises", "writes-nothing", "zeroes-input"],
)
def test_wrong_solutions_get_the_matching_status(code: str, dps: bool, expected: Status, tmp_path: Path) -> None:
    statuses = _run(_python_solution(code, dps=dps), tmp_path, workloads=["a1b2c3d4-0001"])
    assert statuses == [expected]


def test_syntax_error_and_missing_entry_are_compile_errors(tmp_path: Path) -> None:
    assert set(_run(_python_solution("def run(:\n"), tmp_path)) == {Status.COMPILE_ERROR}
    assert set(_run(_python_solution("def other():\n    pass\n"), tmp_path)) == {Status.COMPILE_ERROR}


def test_import_time_failure_is_a_compile_error(tmp_path: Path) -> None:
    statuses = _run(_python_solution("import not_a_module_anywhere\ndef run(*a):\n    pass\n"), tmp_path)
    assert set(statuses) == {Status.COMPILE_ERROR}


def test_hang_is_killed_as_timeout_and_next_workload_runs(tmp_path: Path) -> None:
    code = ("import torch\ndef run(hidden_states, weight, eps, output):\n"
            "    if hidden_states.shape[0] == 1:\n        while True:\n            pass\n"
            f"    {RMS}\n    output.copy_(y.to(output.dtype))\n")
    opts = EvalOptions(**{**FAST, "cache_dir": tmp_path / "cache", "run_timeout_s": 5})
    report = evaluate(EvalRequest(problem=str(DATA), solution=_python_solution(code), options=opts))
    assert [t.evaluation.status for t in report.traces] == [Status.TIMEOUT, Status.PASSED, Status.PASSED]
    # The TIMEOUT says where the solution was stuck: its own file and the loop's line.
    log = report.traces[0].evaluation.log
    assert "Where it was" in log and "main.py" in log and ("line 4" in log or "line 5" in log), log  # while, pass


def test_segfault_is_a_runtime_error_and_the_next_workload_runs(tmp_path: Path) -> None:
    code = ("import ctypes, torch\ndef run(hidden_states, weight, eps, output):\n"
            "    if hidden_states.shape[0] == 1:\n        ctypes.string_at(0)\n"
            f"    {RMS}\n    output.copy_(y.to(output.dtype))\n")
    statuses = _run(_python_solution(code), tmp_path)
    assert statuses == [Status.RUNTIME_ERROR, Status.PASSED, Status.PASSED]


def test_unbounded_allocation_fails_cleanly(tmp_path: Path) -> None:
    code = ("def run(hidden_states, weight, eps, output):\n    hoard = []\n"
            "    while True:\n        hoard.append(bytearray(1 << 28))\n")
    statuses = _run(_python_solution(code), tmp_path, workloads=["a1b2c3d4-0001"], memory_limit_gb=8.0)
    assert statuses == [Status.RUNTIME_ERROR]


def test_no_temporary_folders_or_processes_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    import psutil

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # this evaluation's scratch only, not others'
    _run(_python_solution("def run(hidden_states, weight, eps, output):\n    raise SystemExit(3)\n"), tmp_path)
    # The judge starts the candidate's process before it builds: a failed build must not leave it behind.
    assert set(_run(_python_solution("def run(:\n"), tmp_path)) == {Status.COMPILE_ERROR}
    assert glob.glob(str(scratch / "solforge-eval-*")) == []
    leftovers = [p for p in psutil.Process().children(recursive=True) if p.is_running()]
    assert leftovers == []
    # Candidates run in their own sessions, so an orphan would not show as a child: look by folder.
    orphans = []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if "solforge.sandbox.candidate" in " ".join(proc.info["cmdline"] or []) and \
                    proc.cwd().startswith(str(scratch)):
                orphans.append(proc)
    assert orphans == []


def test_cli_eval_json_prints_one_trace_per_workload(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "solforge.server.cli", "eval", str(DATA), "--solution",
           str(DATA / "solution_pytorch.json"), "--json", "-q", "--rounds", "1", "--iterations", "2",
           "--cache-dir", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["evaluation"]["status"] for line in lines] == ["PASSED"] * 3
    assert lines[0]["definition"] == "rmsnorm_h4096_handwritten"


def test_cli_exit_code_is_nonzero_when_a_workload_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(_python_solution("def run(hidden_states, weight, eps, output):\n    output.zero_()\n").model_dump_json())
    done = subprocess.run([sys.executable, "-m", "solforge.server.cli", "eval", str(DATA), "--solution", str(bad),
                           "--rounds", "1", "--cache-dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "INCORRECT_NUMERICAL" in done.stderr


def test_cli_rejects_a_malformed_solution_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "definition": "y", "spec": {"languages": ["cobol"]}}')
    done = subprocess.run([sys.executable, "-m", "solforge.server.cli", "eval", str(DATA), "--solution", str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "bad.json" in done.stderr and "spec.languages" in done.stderr


def test_compile_only_builds_and_runs_nothing(tmp_path: Path) -> None:
    solution = load_solution(DATA / "solution_pytorch.json")
    opts = EvalOptions(**{**FAST, "cache_dir": tmp_path / "cache", "compile_only": True})
    report = evaluate(EvalRequest(problem=str(DATA), solution=solution, options=opts))
    assert report.build is not None and report.build.ok
    assert report.ran is False and report.traces == [] and "compiled only" in (report.note or "")


def test_non_finite_outputs_of_triton_on_the_cpu_name_the_interpreter(tmp_path: Path) -> None:
    code = ("import torch, triton, triton.language as tl\n"
            "@triton.jit\n"
            "def nan_rows(out_ptr, n, BLOCK: tl.constexpr):\n"
            "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
            "    tl.store(out_ptr + offs, tl.full((BLOCK,), float('nan'), tl.float32).to(tl.bfloat16), mask=offs < n)\n"
            "def run(hidden_states, weight, eps, output):\n"
            "    n = output.numel()\n"
            "    nan_rows[(triton.cdiv(n, 1024),)](output, n, BLOCK=1024)\n")
    opts = EvalOptions(**{**FAST, "cache_dir": tmp_path / "cache", "workloads": ["a1b2c3d4-0001"]})
    report = evaluate(EvalRequest(problem=str(DATA), solution=_python_solution(code, language="triton"), options=opts))
    (trace,) = report.traces
    assert trace.evaluation.status is Status.INCORRECT_NUMERICAL
    assert "non-finite" in trace.evaluation.log and "Triton's CPU interpreter" in trace.evaluation.log
