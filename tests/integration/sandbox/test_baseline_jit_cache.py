"""A baseline process never gets a candidate's kept JIT cache.

The catalogue's run submits the reference itself as the solution, so the candidate and the eager baseline have
the same build key: a restored cache would let a candidate plant code that slows the baseline's process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from solforge.problems import load_problem, reference_solution
from solforge.sandbox.api import EvalOptions, EvalRequest
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


def test_a_baseline_process_is_never_given_the_candidates_kept_cache(tmp_path: Path) -> None:
    folder = _planting_problem(tmp_path)
    solution = reference_solution(load_problem(folder).definition)
    cache = tmp_path / "cache"
    options = EvalOptions(rounds=1, iterations=2, warmup=1, device="cpu", run_timeout_s=60, cache_dir=cache,
                          workloads=["a1b2c3d4-0001"])
    delay_ms = PLANTED_DELAY_S * 1e3

    first = evaluate(EvalRequest(problem=str(folder), solution=solution, options=options))
    assert first.all_passed, [t.evaluation.log for t in first.traces]
    assert first.baselines and first.baselines[0].eager_ms < delay_ms
    shutil.rmtree(cache / "baselines")  # measure the baseline again
    second = evaluate(EvalRequest(problem=str(folder), solution=solution, options=options))
    assert second.all_passed, [t.evaluation.log for t in second.traces]
    # The candidate got its kept cache back (so the marker works), and the baseline's process did not.
    perf = second.traces[0].evaluation.performance
    assert perf is not None and perf.latency_ms >= delay_ms
    assert second.baselines and second.baselines[0].eager_ms < delay_ms
