"""A baseline process never gets a candidate's kept JIT cache.

The catalogue's run submits the reference itself as the solution, so the candidate and the eager baseline have
the same build key: a shared kept cache would let a candidate plant compiled code for the baseline's process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from solforge.problems import load_problem, reference_solution
from solforge.sandbox import jit_cache
from solforge.sandbox.api import EvalOptions, EvalRequest
from solforge.sandbox.build import build_cache_key
from solforge.sandbox.evaluate import evaluate

DATA = Path(__file__).parent.parent / "data" / "sol_execbench_rmsnorm"
# Each sandboxed process that imports the reference leaves a file named after its pid in its own Triton cache
# folder (the judge, which loads it too for the reference outputs, has none).
MARKER = (
    "import os as _os, pathlib as _pathlib\n"
    "if 'TRITON_CACHE_DIR' in _os.environ:\n"
    "    _cache = _pathlib.Path(_os.environ['TRITON_CACHE_DIR'])\n"
    "    _cache.mkdir(parents=True, exist_ok=True)\n"
    "    (_cache / f'marker-{_os.getpid()}').write_text('x')\n"
)


def _marking_problem(tmp_path: Path) -> Path:
    folder = tmp_path / "problem"
    shutil.copytree(DATA, folder)
    definition = json.loads((folder / "definition.json").read_text())
    definition["reference"] = MARKER + definition["reference"]
    (folder / "definition.json").write_text(json.dumps(definition))
    return folder


def _markers(folder: Path) -> set[str]:
    return {p.name for p in (folder / "triton").glob("marker-*")}


def test_a_baseline_process_never_shares_the_candidates_kept_cache(tmp_path: Path) -> None:
    folder = _marking_problem(tmp_path)
    solution = reference_solution(load_problem(folder).definition)
    cache = tmp_path / "cache"
    options = EvalOptions(rounds=1, iterations=2, warmup=1, device="cpu", run_timeout_s=60, cache_dir=cache,
                          workloads=["a1b2c3d4-0001"])
    key = build_cache_key(solution, "sm_90a")
    candidate_kept, baseline_kept = cache / "jit" / key, cache / "jit" / jit_cache.kept_key(key, trusted=True)

    for run in (1, 2):
        report = evaluate(EvalRequest(problem=str(folder), solution=solution, options=options))
        assert report.all_passed, [t.evaluation.log for t in report.traces]
        assert report.baselines, "the baseline was measured, in a process of its own"
        (cache / "baselines").rename(cache / f"baselines-{run}")  # measured again in the second run
        # The candidate's kept cache holds its own processes' markers only, one per run; had the eager baseline
        # (the same build key) shared it, the baseline processes' markers would be there too.
        assert len(_markers(candidate_kept)) == run
        assert not baseline_kept.exists()  # nothing keeps a baseline's cache yet (jit_cache's docstring says why)


def test_kept_keys_of_trusted_processes_cannot_be_a_candidates() -> None:
    key = "ab" * 32
    assert jit_cache.kept_key(key, trusted=False) == key
    trusted = jit_cache.kept_key(key, trusted=True)
    assert trusted != key and not all(c in "0123456789abcdef" for c in trusted)
    assert jit_cache.kept_key("", trusted=True) == ""  # no build key: nothing is kept
