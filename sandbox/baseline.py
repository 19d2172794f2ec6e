"""The baseline T_b and the speed-of-light figures of one timed workload.

T_b is the faster of the eager reference and the reference under torch.compile, each run as a
solution in a process started exactly like the candidate's and timed by the same harness (timer,
fresh pointers, L2 flush), so the baseline and the candidate are measured under equal conditions. It is
cached per (problem, definition hash, workload, GPU, torch version, timer) because a torch.compile
of every workload costs minutes the first time and nothing after.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solforge.problems import Definition, Performance, Solution, SourceFile, Workload, reference_solution

if TYPE_CHECKING:
    from .judge import Judge

BASELINE_WARMUP = 5
BASELINE_ITERATIONS = 30


def _cache_file(judge: Judge) -> Path:
    return judge.cache_dir / "baselines" / f"{judge.problem.name}.json"


def _cache_key(judge: Judge, workload: Workload, timer: str) -> str:
    import torch

    definition = judge.problem.definition
    digest = hashlib.sha256((definition.reference + json.dumps(definition.to_json_dict()["axes"], sort_keys=True)).encode())
    return "|".join([digest.hexdigest()[:16], workload.uuid, json.dumps(workload.axes, sort_keys=True),
                     judge.env.hardware, torch.__version__, timer])


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write_cache(path: Path, key: str, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _read_cache(path)
    data[key] = value
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def baseline_solutions(definition: Definition) -> dict[str, Solution]:
    """The reference as a solution, eager and under torch.compile (the two baseline candidates)."""
    eager = reference_solution(definition)
    source = eager.sources[0].content + (
        "\n\n# solforge baseline: the same reference under torch.compile\n"
        "import torch as _solforge_torch\n"
        "import torch._dynamo as _solforge_dynamo\n"
        "# one compiled graph per workload shape: lift the recompile limit so no shape falls back to eager\n"
        "_solforge_dynamo.config.cache_size_limit = 256\n"
        "if hasattr(_solforge_dynamo.config, 'recompile_limit'):\n"
        "    _solforge_dynamo.config.recompile_limit = 256\n"
        "_solforge_eager_run = run\n"
        "run = _solforge_torch.compile(_solforge_eager_run, dynamic=False)\n"
    )
    compiled = eager.model_copy(update={"name": f"{definition.name}__compiled",
                                        "sources": [SourceFile(path="reference.py", content=source)]})
    return {"eager": eager, "compiled": compiled}


def _time_variant(judge: Judge, variant: str, solution: Solution, inputs: list[Any], buffers: list[Any],
                  specs: list[list[Any]], timer: str) -> float | str:
    """Median latency (ms) of one baseline variant in its own process, or the reason it failed."""
    from .build import build_solution

    proc = judge.baseline_procs.get(variant)
    if proc is None or not proc.alive:
        build = build_solution(solution, target_arch=judge.target_arch(), cache_dir=judge.cache_dir,
                               timeout_s=judge.options.compile_timeout_s)
        if not build.ok:
            return f"build failed: {build.log[:300]}"
        proc, answer = judge.open_process(solution, build, f"baseline-{variant}", trusted=True)
        judge.baseline_procs[variant] = proc
        if not answer.get("ok"):
            return f"load failed: {answer.get('error', '')[:300]}"
    cuda = judge.device.type == "cuda"
    answer, _ = proc.request(
        {"cmd": "time", "inputs": inputs, "outputs": buffers, "output_specs": specs,
         "warmup": BASELINE_WARMUP if cuda else 1, "iterations": BASELINE_ITERATIONS if cuda else 5,
         "check_at": -1, "timer": timer},
        max(judge.options.run_timeout_s, 600.0), cuda_ipc=cuda,
    )
    if not answer.get("ok"):
        return f"{answer.get('status')}: {answer.get('error', '')[:300]}"
    return statistics.median(float(t) for t in answer["measurement"]["times_ms"])


def measure_baseline(judge: Judge, workload: Workload, inputs: list[Any], buffers: list[Any],
                     specs: list[list[Any]], timer: str) -> dict[str, Any]:
    """Eager and compiled reference latencies (ms) for one workload, from the cache when present."""
    path, key = _cache_file(judge), _cache_key(judge, workload, timer)
    cached = _read_cache(path).get(key)
    if cached:
        return cached
    variants = baseline_solutions(judge.problem.definition)
    if judge.device.type != "cuda":
        del variants["compiled"]  # inductor on the CPU needs minutes per shape for no useful number
    result: dict[str, Any] = {}
    for name, solution in variants.items():
        measured = _time_variant(judge, name, solution, inputs, buffers, specs, timer)
        if isinstance(measured, str):
            result[f"{name}_error"] = measured
        else:
            result[f"{name}_ms"] = measured
    times = [v for k, v in result.items() if k.endswith("_ms")]
    if not times:
        raise RuntimeError(f"the reference could not be timed as a baseline: {result}")
    result["baseline_ms"] = min(times)
    _write_cache(path, key, result)
    return result


def attach_scores(judge: Judge, workload: Workload, sizes: dict[str, int], perf: Performance,
                  inputs: list[Any], buffers: list[Any], specs: list[list[Any]],
                  warnings: list[str] | None = None) -> str | None:
    """Fill the baseline and speed-of-light fields of ``perf``; return a REWARD_HACK verdict or None.

    A baseline variant that could not be timed is named in ``warnings`` (the trace's log): a
    speedup over the eager reference alone reads very differently from one over torch.compile.
    """
    from . import score

    if judge.options.time_baseline:
        baseline = measure_baseline(judge, workload, inputs, buffers, specs, judge.options.timer)
        if warnings is not None:
            warnings += [f"baseline: the {key.removesuffix('_error')} reference was not timed ({value[:300]}); "
                         "the baseline is the other variant" for key, value in baseline.items()
                         if key.endswith("_error")]
        perf.reference_latency_ms = baseline.get("eager_ms")
        perf.baseline_latency_ms = baseline["baseline_ms"]
        eager = baseline.get("eager_ms")
        perf.speedup_factor = eager / perf.latency_ms if eager and perf.latency_ms > 0 else None
        perf.speedup = score.speedup(baseline["baseline_ms"], perf.latency_ms)
    if judge.device.type != "cuda":
        return None  # CPU timings carry no speed-of-light score
    from solforge.problems.counting import count_workload

    from .hardware import datasheet_peaks, match_spec, resolve_peaks

    named = dict(zip(judge.problem.definition.inputs, inputs, strict=True))
    counts = count_workload(judge.problem.definition, sizes, named)
    peaks = resolve_peaks(judge.env.hardware, judge.cache_dir / "calibration")
    if peaks is None:
        return None
    estimate = score.sol_time(counts, peaks)
    perf.sol_latency_ms = estimate.t_sol_ms
    perf.sol_bound = estimate.bound
    perf.peak_source = peaks.source
    if perf.baseline_latency_ms is not None:
        perf.sol_score = score.sol_score(perf.latency_ms, perf.baseline_latency_ms, estimate.t_sol_ms)
    # The hack check uses the datasheet, never a calibration: a kernel may legitimately beat what torch
    # reached during calibration, but not what the silicon can do. Outputs small enough to stay in L2
    # are forgiven their DRAM write (physical_floor_ms).
    spec = match_spec(judge.env.hardware)
    if spec is None:
        return None
    floor_ms = score.physical_floor_ms(counts, datasheet_peaks(spec))
    if score.is_below_sol(perf.latency_ms, floor_ms):
        return (f"measured {perf.latency_ms * 1e3:.2f} us, below the physical floor {floor_ms * 1e3:.2f} us "
                f"(T_SOL {estimate.t_sol_ms * 1e3:.2f} us, {estimate.bound}-bound, datasheet {spec.name}): faster "
                "than the hardware allows, so the time cannot be real")
    return None
