"""The baseline T_b and the speed-of-light figures of one timed workload.

T_b is the faster of the eager reference and the reference under torch.compile, timed by the same
timer on the same GPU with the same fresh-pointer and L2-flush discipline as the candidate. It is
cached per (problem, definition hash, workload, GPU, torch version, timer) because a torch.compile
of every workload costs minutes the first time and nothing after.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solforge.problems import Performance, Workload

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


def _time_reference(judge: Judge, fn: Any, inputs: list[Any]) -> float:
    from .timing import ShiftingPool, time_calls

    cuda = judge.device.type == "cuda"
    warmup = BASELINE_WARMUP if cuda else 1
    iterations = BASELINE_ITERATIONS if cuda else 5
    pool = ShiftingPool(inputs, warmup + iterations)
    import torch

    def call(*args: Any) -> Any:
        with torch.no_grad():
            return fn(*args)

    timer = judge.options.timer if cuda else "auto"
    return time_calls(call, pool.args_for_call, warmup=warmup, iterations=iterations, device=judge.device,
                      timer=timer).median_ms


def measure_baseline(judge: Judge, workload: Workload, inputs: list[Any], timer: str) -> dict[str, Any]:
    """Eager and compiled reference latencies (ms) for one workload, from the cache when present."""
    path, key = _cache_file(judge), _cache_key(judge, workload, timer)
    cached = _read_cache(path).get(key)
    if cached:
        return cached
    result: dict[str, Any] = {"eager_ms": _time_reference(judge, judge.reference.run, inputs)}
    if judge.device.type == "cuda":
        import torch

        try:
            compiled = torch.compile(judge.reference.run, dynamic=False)
            result["compiled_ms"] = _time_reference(judge, compiled, inputs)
        except Exception as exc:  # a reference torch.compile cannot handle keeps the eager baseline
            result["compile_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    result["baseline_ms"] = min(v for k, v in result.items() if k.endswith("_ms"))
    _write_cache(path, key, result)
    return result


def attach_scores(judge: Judge, workload: Workload, sizes: dict[str, int], perf: Performance,
                  inputs: list[Any]) -> str | None:
    """Fill the baseline and speed-of-light fields of ``perf``; return a REWARD_HACK verdict or None."""
    from . import score

    if judge.options.time_baseline:
        baseline = measure_baseline(judge, workload, inputs, perf.timer or "auto")
        perf.reference_latency_ms = baseline["eager_ms"]
        perf.baseline_latency_ms = baseline["baseline_ms"]
        perf.speedup_factor = baseline["eager_ms"] / perf.latency_ms if perf.latency_ms > 0 else None
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
