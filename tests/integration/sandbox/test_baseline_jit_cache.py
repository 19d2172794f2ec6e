"""A baseline process gets its own kind's kept JIT cache back, and never a candidate's.

The catalogue's run submits the reference itself as the solution, so the candidate and the eager baseline have
the same build key: a shared kept cache would let a candidate plant code that slows the baseline's process.
The compiled baseline's kept cache (inductor's graphs, Triton's kernels) is what spares its next process the
compile; it must not make that process write outside its own home.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from solforge.problems import Solution, load_problem, reference_solution
from solforge.sandbox import jit_cache
from solforge.sandbox.api import EvalOptions, EvalRequest
from solforge.sandbox.build import build_cache_key
from solforge.sandbox.evaluate import evaluate

DATA = Path(__file__).parents[2] / "data" / "sol_execbench_rmsnorm"
PLANTED_DELAY_S = 0.05
# A sandboxed process that imports this reference leaves a file in its own Triton cache folder; one that finds
# such a file there at import was given another process's cache, and then sleeps in every call. (The judge,
# which loads the reference too for the reference outputs, has no such folder.)
PLANTED = f"""
import functools as _functools, os as _os, pathlib as _pathlib, time as _time
_given_a_cache = False
if 'TRITON_CACHE_DIR' in _os.environ:
    _cache = _pathlib.Path(_os.environ['TRITON_CACHE_DIR'])
    _given_a_cache = any(_cache.glob('marker-*'))
    _cache.mkdir(parents=True, exist_ok=True)
    (_cache / f'marker-{{_os.getpid()}}').write_text('x')
_unslowed = run

@_functools.wraps(_unslowed)
def run(*args, **kwargs):
    if _given_a_cache:
        _time.sleep({PLANTED_DELAY_S})
    return _unslowed(*args, **kwargs)
"""


def _planting_problem(tmp_path: Path) -> Path:
    folder = tmp_path / "problem"
    shutil.copytree(DATA, folder)
    definition = json.loads((folder / "definition.json").read_text())
    definition["reference"] += PLANTED
    (folder / "definition.json").write_text(json.dumps(definition))
    return folder


def _planting_evaluation(tmp_path: Path) -> tuple[Path, Solution, Path, EvalOptions]:
    """The planting problem, its reference as the solution, a cache and options for one CPU workload."""
    folder = _planting_problem(tmp_path)
    cache = tmp_path / "cache"
    options = EvalOptions(rounds=1, iterations=2, warmup=1, device="cpu", run_timeout_s=60, cache_dir=cache,
                          workloads=["a1b2c3d4-0001"])
    return folder, reference_solution(load_problem(folder).definition), cache, options


def test_a_baseline_process_is_never_given_the_candidates_kept_cache(tmp_path: Path) -> None:
    folder, solution, cache, options = _planting_evaluation(tmp_path)
    delay_ms = PLANTED_DELAY_S * 1e3

    first = evaluate(EvalRequest(problem=str(folder), solution=solution, options=options))
    assert first.all_passed, [t.evaluation.log for t in first.traces]
    assert first.baselines and first.baselines[0].eager_ms < delay_ms
    shutil.rmtree(cache / "baselines")  # measure the baseline again
    for kept in (cache / "jit").glob(f"{jit_cache.TRUSTED_PREFIX}*"):
        shutil.rmtree(kept)  # and with no cache of its own kind: only the candidate's is left to take
    second = evaluate(EvalRequest(problem=str(folder), solution=solution, options=options))
    assert second.all_passed, [t.evaluation.log for t in second.traces]
    # The candidate got its kept cache back (so the marker works), and the baseline's process did not.
    perf = second.traces[0].evaluation.performance
    assert perf is not None and perf.latency_ms >= delay_ms
    assert second.baselines and second.baselines[0].eager_ms < delay_ms


def test_a_baseline_process_gets_the_cache_an_earlier_baseline_process_kept(tmp_path: Path) -> None:
    folder, solution, cache, options = _planting_evaluation(tmp_path)
    key = build_cache_key(solution, "sm_90a")
    candidate_kept = cache / "jit" / key
    baseline_kept = cache / "jit" / jit_cache.kept_key(key, trusted=True)

    def markers(kept: Path) -> set[str]:
        return {p.name for p in (kept / "triton").glob("marker-*")}

    for run in (1, 2):
        report = evaluate(EvalRequest(problem=str(folder), solution=solution, options=options))
        assert report.all_passed, [t.evaluation.log for t in report.traces]
        assert report.baselines, "the baseline was measured, in a process of its own"
        shutil.rmtree(cache / "baselines")  # measured again in the next run
        # One process of each kind per run: each kept cache is its kind's earlier one plus the new process's
        # marker, and the two kinds never share one.
        assert len(markers(candidate_kept)) == run and len(markers(baseline_kept)) == run
        assert not markers(candidate_kept) & markers(baseline_kept)
    # The second baseline process found the first one's cache, so its planted delay shows in its own time.
    assert report.baselines[0].eager_ms >= PLANTED_DELAY_S * 1e3


def test_the_compiled_baseline_keeps_no_autotuning_choice(tmp_path: Path) -> None:
    """Inductor keys a kept autotuning choice by the path of the process that generated the kernel, so a restored
    graph would make the next baseline process write into the first one's home (refused by Landlock): the
    compiled variant turns the local autotuning cache off before it compiles anything."""
    import subprocess
    import sys

    from solforge.sandbox.baseline import baseline_solutions

    compiled = baseline_solutions(load_problem(DATA).definition)["compiled"]
    module = tmp_path / "reference.py"
    module.write_text(compiled.sources[0].content)
    probe = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('reference', sys.argv[1]); "
             "spec.loader.exec_module(importlib.util.module_from_spec(spec)); "
             "import torch._inductor.config as c; print(c.autotune_local_cache)")
    done = subprocess.run([sys.executable, "-c", probe, str(module)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"
