"""Speed of light and the SOL score (docs/design.md section 3).

Per workload, from the hardware-independent counts of :mod:`solforge.sandbox.sol.counting` and the
:class:`~solforge.sandbox.sol.hardware.Peaks` of one GPU::

    compute_s = sum over dtypes d of tensor_core_flops[d] / peak(d)  +  other_flops / fp32_peak
    memory_s  = bytes / dram_bandwidth
    T_SOL     = max(compute_s, memory_s)            bound = compute if compute_s >= memory_s else memory

docs/design.md fixes the *sum* of the tensor-core and CUDA-core terms, with perfect overlap of compute
and memory traffic (the max). SOLAR takes the max of the two compute terms instead (its latest
version drops the CUDA-core term from the SOL altogether); the sum is up to 2x larger where both
terms are comparable, as in attention, whose softmax runs beside the matrix products in a flash
kernel. The per-element costs of :mod:`solforge.sandbox.sol.counting` are kept low so the sum stays
reachable.

Which peak a dtype's tensor-core FLOPs run at (:func:`peak_for_dtype`):

=========================== =====================================================================
operand dtype               peak
=========================== =====================================================================
float16, bfloat16           fp16 / bf16 tensor cores
float8_e4m3fn, float8_e5m2  fp8 tensor cores; without them (Ampere) fp16 tensor cores
float4_e2m1(fn_x2)          fp4 tensor cores; without them fp8, then fp16 tensor cores
int8, uint8                 int8 tensor cores; without them fp16 tensor cores
float32                     the CUDA-core fp32 rate, never TF32 (TF32 for an fp32 problem is a
                            precision downgrade; see solforge.sandbox.sol.counting)
float64                     fp64 tensor cores; without them (Ada) the CUDA-core fp64 rate
anything else (int32, ...)  the CUDA-core fp32 rate
=========================== =====================================================================

The score is SOL-ExecBench's, verbatim (``src/sol_execbench/sol_score.py``): a hyperbolic score
anchored at the baseline (0.5) and the speed of light (1.0), not clamped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from .hardware import Peaks

if TYPE_CHECKING:
    from .counting import SolCounts

SOL_MARGIN = 0.9
"""A measured time below ``SOL_MARGIN * T_SOL`` is physically impossible and flags REWARD_HACK.

The margin is the model's error: datasheet peaks are the hardware's upper limits (attainable
bandwidth is 90-95% of the HBM figure, tensor rates assume the boost clock), so an honest kernel
cannot beat T_SOL computed from them; what can is counting error (a flop or byte the reference
executes that the operation does not need) and measurement error (event timer resolution, clock
excursions), both small for a well-counted problem. 10% absorbs those; structural overcounts
(hand-masked causal attention, dense MoE, partially read KV pools) need a ``flops``/``bytes``
override in the definition instead. Use datasheet peaks, not calibrated ones, for this check:
calibrated peaks are what torch reaches, and a better kernel may exceed them."""

SOL_TIMER_SLACK_MS = 0.001
"""Absolute slack (1 us) on top of the margin: CUDA event resolution is about 0.5 us, so a
microsecond-scale T_SOL cannot be resolved more finely than this."""

Bound = Literal["compute", "memory"]


class SolModel(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class SolEstimate(SolModel):
    """The speed-of-light time of one workload on one GPU, and how it splits."""

    t_sol_ms: float
    """max(compute_ms, memory_ms)."""
    bound: Bound
    compute_ms: float
    """Tensor-core time of every dtype plus the CUDA-core time of the other FLOPs."""
    memory_ms: float
    """bytes / DRAM bandwidth."""
    tensor_ms: dict[str, float] = Field(default_factory=dict)
    """Time of each dtype's tensor-core FLOPs at the peak :func:`peak_for_dtype` picks."""
    other_ms: float = 0.0
    peak_paths: dict[str, str] = Field(default_factory=dict)
    """Which peak each dtype ran at, for example ``{"bfloat16": "tensor:bf16"}``."""
    flops: float = 0.0
    bytes: float = 0.0
    arithmetic_intensity: float
    """FLOPs per DRAM byte of the workload (inf when it moves no bytes)."""
    ridge_point: float
    """FLOPs per byte at which this workload's compute time equals its memory time on this GPU:
    above it the workload is compute-bound."""
    peak_source: str
    """Where the peaks came from: ``datasheet:<key>`` or ``calibrated:<GPU>``."""


class Utilisation(SolModel):
    """What fraction of the GPU's ceilings a measured latency reaches."""

    latency_ms: float
    achieved_bytes_per_s: float
    bandwidth_fraction: float
    """Achieved DRAM bandwidth / peak (if the counted bytes are all the traffic)."""
    achieved_flops_per_s: float
    compute_fraction: float
    """compute_ms / latency: the share of the FLOP-weighted peak the kernel sustains."""
    sol_fraction: float
    """T_SOL / latency: 1.0 is speed of light."""
    bound: Bound


def peak_for_dtype(peaks: Peaks, dtype: str) -> tuple[float, str]:
    """The rate (FLOP/s) matrix products in ``dtype`` run at on ``peaks``, and a label saying which.

    See the module docstring for the rule. The label is ``tensor:<class>`` or ``cuda-core:<class>``,
    with ``(fallback)`` when the natural tensor cores are missing.
    """
    tensor = peaks.tensor_flops

    def first(classes: tuple[str, ...]) -> tuple[float, str] | None:
        for i, cls in enumerate(classes):
            if tensor.get(cls):
                return tensor[cls], f"tensor:{cls}" + (" (fallback)" if i else "")
        return None

    name = dtype.removeprefix("torch.")
    chains: dict[str, tuple[str, ...]] = {
        "float16": ("fp16", "bf16"),
        "bfloat16": ("bf16", "fp16"),
        "float8_e4m3fn": ("fp8", "fp16", "bf16"),
        "float8_e5m2": ("fp8", "fp16", "bf16"),
        "float8_e4m3fnuz": ("fp8", "fp16", "bf16"),
        "float8_e5m2fnuz": ("fp8", "fp16", "bf16"),
        "float4_e2m1": ("fp4", "fp8", "fp16", "bf16"),
        "float4_e2m1fn_x2": ("fp4", "fp8", "fp16", "bf16"),
        "int8": ("int8", "fp16", "bf16"),
        "uint8": ("int8", "fp16", "bf16"),
    }
    if name in chains:
        found = first(chains[name])
        if found is not None:
            return found
    elif name == "float64":
        found = first(("fp64",))
        if found is not None:
            return found
        if peaks.fp64_flops:
            return peaks.fp64_flops, "cuda-core:fp64"
    return peaks.fp32_flops, "cuda-core:fp32"


def sol_time(counts: SolCounts, peaks: Peaks) -> SolEstimate:
    """T_SOL of one workload on one GPU.

    Parameters
    ----------
    counts
        The workload's FLOPs and bytes (:func:`solforge.sandbox.sol.counting.count_workload`).
    peaks
        The GPU's ceilings (:func:`solforge.sandbox.sol.peaks.resolve_peaks`).

    Returns
    -------
    SolEstimate
        T_SOL in milliseconds, the bound, and the terms behind it.
    """
    tensor_ms: dict[str, float] = {}
    paths: dict[str, str] = {}
    for dtype, flops in counts.tensor_core_flops.items():
        rate, path = peak_for_dtype(peaks, dtype)
        tensor_ms[dtype] = flops / rate * 1e3
        paths[dtype] = path
    other_ms = counts.other_flops / peaks.fp32_flops * 1e3
    compute_ms = sum(tensor_ms.values()) + other_ms
    memory_ms = counts.bytes / peaks.dram_bytes_per_s * 1e3
    flops = counts.total_flops
    intensity = flops / counts.bytes if counts.bytes > 0 else math.inf
    # The effective compute rate of this FLOP mix, over the bandwidth: compute-bound above it.
    effective_rate = flops / (compute_ms * 1e-3) if compute_ms > 0 else peaks.fp32_flops
    return SolEstimate(
        t_sol_ms=max(compute_ms, memory_ms),
        bound="compute" if compute_ms >= memory_ms and compute_ms > 0 else "memory",
        compute_ms=compute_ms,
        memory_ms=memory_ms,
        tensor_ms=tensor_ms,
        other_ms=other_ms,
        peak_paths=paths,
        flops=flops,
        bytes=counts.bytes,
        arithmetic_intensity=intensity,
        ridge_point=effective_rate / peaks.dram_bytes_per_s,
        peak_source=peaks.source,
    )


def sol_score(t_k: float, t_b: float, t_sol: float) -> float:
    """SOL-ExecBench's score: ``S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL))``.

    S is 0.5 at the baseline (T_k = T_b), 1.0 at the speed of light (T_k = T_SOL) and tends to 0
    as T_k grows. Not clamped: T_k below T_SOL scores above 1. When ``T_b - T_SOL <= 0`` (the
    baseline already at or below speed of light) the score is 1.0 if T_k <= T_SOL else 0.0.

    Parameters
    ----------
    t_k
        The kernel's time (any unit, the same for all three).
    t_b
        The baseline's time.
    t_sol
        The speed-of-light time.

    Returns
    -------
    float
        The score; ``inf`` in the degenerate case T_k = 2 T_SOL - T_b (below T_SOL, a reward hack
        anyway), where the formula divides by zero.

    Raises
    ------
    ValueError
        If a time is negative or NaN.
    """
    for label, value in (("t_k", t_k), ("t_b", t_b), ("t_sol", t_sol)):
        if math.isnan(value) or value < 0:
            raise ValueError(f"{label} must be a non-negative time, got {value}")
    gap = t_b - t_sol
    if gap <= 0:
        return 1.0 if t_k <= t_sol else 0.0
    denominator = 1.0 + (t_k - t_sol) / gap
    if denominator == 0:
        return math.inf
    return 1.0 / denominator


def speedup(t_b: float, t_k: float) -> float:
    """Baseline time over kernel time (> 1 is faster than the baseline).

    Raises
    ------
    ValueError
        If ``t_k`` is not positive.
    """
    if not t_k > 0:
        raise ValueError(f"the kernel time must be positive, got {t_k}")
    return t_b / t_k


def problem_score(scores: Iterable[float | None]) -> float:
    """A problem's score: the arithmetic mean of its workload scores, failed workloads (None) as 0.

    Raises
    ------
    ValueError
        If there are no workloads.
    """
    values = [0.0 if s is None else float(s) for s in scores]
    if not values:
        raise ValueError("a problem score needs at least one workload score")
    return sum(values) / len(values)


def geomean(values: Iterable[float]) -> float:
    """Geometric mean, as speedups and latencies aggregate.

    Raises
    ------
    ValueError
        If there are no values or one is not positive.
    """
    items = [float(v) for v in values]
    if not items:
        raise ValueError("a geometric mean needs at least one value")
    if any(not v > 0 for v in items):
        raise ValueError(f"a geometric mean needs positive values, got {min(items)}")
    return math.exp(sum(math.log(v) for v in items) / len(items))


def geomean_or_none(values: Iterable[float | None]) -> float | None:
    """The geometric mean of the positive, finite values; None when there are none (every aggregate
    of speedups and latencies goes through here)."""
    positive = [float(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    return geomean(positive) if positive else None


def counted_speedup(speedup: float | None, baseline_ms: float | None, sol_ms: float | None) -> float | None:
    """A workload's speedup as an aggregate counts it: at most the speedup at speed of light
    (``baseline / T_SOL``), so that no single workload driven to a near-zero time can carry a geometric
    mean. Without a T_SOL (CPU timings) the speedup counts as measured."""
    if speedup is None:
        return None
    if baseline_ms and sol_ms and sol_ms > 0:
        return min(speedup, baseline_ms / sol_ms)
    return speedup


def is_below_sol(t_k: float, t_sol: float, margin: float = SOL_MARGIN, slack_ms: float = SOL_TIMER_SLACK_MS) -> bool:
    """Whether a measured time (ms) is faster than the hardware allows: ``t_k < margin * t_sol - slack_ms``,
    or below half of ``t_sol`` whatever the slack.

    See :data:`SOL_MARGIN` for why the margin. The timer's slack would let anything pass for a T_SOL
    under a microsecond; no timer error halves a time, so half of T_SOL stays impossible there too.
    The strictest honest input is the datasheet floor::

        spec = match_spec(gpu_name)
        floor = physical_floor_ms(counts, datasheet_peaks(spec)) if spec else sol_time(counts, peaks).t_sol_ms
        if is_below_sol(latency_ms, floor): ...  # REWARD_HACK
    """
    return t_k < margin * t_sol - slack_ms or t_k < 0.5 * t_sol


def arithmetic_intensity(counts: SolCounts) -> float:
    """FLOPs per DRAM byte (inf for a workload that moves no bytes)."""
    return counts.total_flops / counts.bytes if counts.bytes > 0 else math.inf


def ridge_point(peaks: Peaks, dtype: str = "bfloat16") -> float:
    """FLOPs per byte where ``dtype`` matrix products stop being memory-bound on ``peaks``."""
    rate, _ = peak_for_dtype(peaks, dtype)
    return rate / peaks.dram_bytes_per_s


def physical_floor_ms(counts: SolCounts, peaks: Peaks) -> float:
    """A lower floor than T_SOL for the reward-hack check: outputs that fit in L2 may never reach DRAM
    within the timed call, so only the inputs and the outputs beyond L2 are charged to memory."""
    estimate = sol_time(counts, peaks)
    if counts.bytes != counts.input_bytes + counts.output_bytes or not peaks.l2_bytes:
        return estimate.t_sol_ms  # overridden bytes: no split to reason about
    dram = counts.input_bytes + max(0.0, counts.output_bytes - peaks.l2_bytes)
    return max(estimate.compute_ms, dram / peaks.dram_bytes_per_s * 1e3)


def utilisation(counts: SolCounts, peaks: Peaks, latency_ms: float) -> Utilisation:
    """How much of the GPU's bandwidth and compute a measured latency (ms) uses.

    Raises
    ------
    ValueError
        If ``latency_ms`` is not positive.
    """
    if not latency_ms > 0:
        raise ValueError(f"the latency must be positive, got {latency_ms}")
    estimate = sol_time(counts, peaks)
    seconds = latency_ms * 1e-3
    achieved_bw = counts.bytes / seconds
    return Utilisation(
        latency_ms=latency_ms,
        achieved_bytes_per_s=achieved_bw,
        bandwidth_fraction=achieved_bw / peaks.dram_bytes_per_s,
        achieved_flops_per_s=counts.total_flops / seconds,
        compute_fraction=estimate.compute_ms / latency_ms,
        sol_fraction=estimate.t_sol_ms / latency_ms,
        bound=estimate.bound,
    )
