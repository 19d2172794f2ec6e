"""T_SOL on known workloads, the SOL-ExecBench score formula and the derived figures."""

from __future__ import annotations

import itertools
import math

import pytest

from solforge.sandbox.sol.counting import SolCounts
from solforge.sandbox.sol.hardware import GPU_SPECS, datasheet_peaks
from solforge.sandbox.sol.score import (
    SOL_MARGIN,
    arithmetic_intensity,
    geomean,
    is_below_sol,
    peak_for_dtype,
    physical_floor_ms,
    problem_score,
    ridge_point,
    sol_score,
    sol_time,
    speedup,
    utilisation,
)

H200 = datasheet_peaks(GPU_SPECS["H200"])


def counts(tensor: dict[str, float] | None = None, other: float = 0.0, inputs: float = 0.0,
           outputs: float = 0.0) -> SolCounts:
    return SolCounts(tensor_core_flops=tensor or {}, other_flops=other, bytes=inputs + outputs,
                     input_bytes=inputs, output_bytes=outputs, method="meta")


# -- T_SOL, computed by hand on the H200 datasheet (989.5 TFLOP/s bf16 dense, 67 TFLOP/s fp32, 4.8 TB/s)


def test_bf16_gemm_4096_is_compute_bound_on_h200() -> None:
    n = 4096
    c = counts({"bfloat16": 2 * n**3}, inputs=2 * n * n * 2, outputs=n * n * 2)
    est = sol_time(c, H200)
    # 137,438,953,472 FLOP / 989.5e12 FLOP/s = 0.138897 ms; 100,663,296 B / 4.8e12 B/s = 0.020972 ms
    assert est.bound == "compute"
    assert est.t_sol_ms == pytest.approx(0.1388973759, rel=1e-9)
    assert est.memory_ms == pytest.approx(0.02097152, rel=1e-9)
    assert est.peak_paths == {"bfloat16": "tensor:bf16"}
    assert est.peak_source == "datasheet:H200"
    assert est.arithmetic_intensity == pytest.approx(2 * n**3 / (3 * n * n * 2))
    assert est.ridge_point == pytest.approx(989.5e12 / 4.8e12)


def test_rmsnorm_4096x4096_is_memory_bound_on_h200() -> None:
    tokens = hidden = 4096
    c = counts(other=4 * tokens * hidden + 3 * tokens, inputs=2 * tokens * hidden + 2 * hidden,
               outputs=2 * tokens * hidden)
    est = sol_time(c, H200)
    # 67,117,056 B / 4.8e12 = 0.013982720 ms; 67,121,152 FLOP / 67e12 = 0.001001808 ms
    assert est.bound == "memory"
    assert est.t_sol_ms == pytest.approx(0.01398272, rel=1e-9)
    assert est.compute_ms == pytest.approx(0.0010018082, rel=1e-7)


def test_tensor_and_cuda_core_terms_add_up() -> None:
    c = counts({"bfloat16": 989.5e9, "float32": 67e9}, other=67e9)
    est = sol_time(c, H200)
    assert est.tensor_ms == {"bfloat16": pytest.approx(1.0), "float32": pytest.approx(1.0)}
    assert est.other_ms == pytest.approx(1.0)
    assert est.compute_ms == pytest.approx(3.0)
    assert est.peak_paths["float32"] == "cuda-core:fp32"  # fp32 matmul never runs at the TF32 rate


def test_empty_workload() -> None:
    est = sol_time(counts(), H200)
    assert est.t_sol_ms == 0 and est.bound == "memory" and math.isinf(est.arithmetic_intensity)


# -- which peak a dtype runs at ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "dtype", "path"),
    [
        ("H200", "bfloat16", "tensor:bf16"),
        ("H200", "float16", "tensor:fp16"),
        ("H200", "float8_e5m2", "tensor:fp8"),
        ("H200", "float4_e2m1fn_x2", "tensor:fp8 (fallback)"),  # Hopper has no fp4 tensor cores
        ("B200", "float4_e2m1fn_x2", "tensor:fp4"),
        ("A100-SXM-80GB", "float8_e4m3fn", "tensor:fp16 (fallback)"),  # nor Ampere fp8
        ("H200", "int8", "tensor:int8"),
        ("H200", "float32", "cuda-core:fp32"),
        ("H200", "float64", "tensor:fp64"),
        ("L40S", "float64", "cuda-core:fp64"),  # Ada has no fp64 tensor cores
        ("H200", "int64", "cuda-core:fp32"),
        ("H200", "torch.bfloat16", "tensor:bf16"),
    ],
)
def test_peak_for_dtype(gpu: str, dtype: str, path: str) -> None:
    rate, label = peak_for_dtype(datasheet_peaks(GPU_SPECS[gpu]), dtype)
    assert label == path
    assert rate > 0


def test_peak_values() -> None:
    assert peak_for_dtype(H200, "float32")[0] == 67e12
    assert peak_for_dtype(datasheet_peaks(GPU_SPECS["L40S"]), "float64")[0] == pytest.approx(91.6e12 / 64)
    assert ridge_point(H200, "bfloat16") == pytest.approx(206.1458333)
    assert ridge_point(H200, "float8_e4m3fn") == pytest.approx(2 * 206.1458333)


# -- the score --------------------------------------------------------------------------------------------


def test_score_anchors() -> None:
    assert sol_score(2.0, 2.0, 0.5) == pytest.approx(0.5)  # the baseline scores 0.5
    assert sol_score(0.5, 2.0, 0.5) == 1.0  # speed of light scores 1
    assert sol_score(1.25, 2.0, 0.5) == pytest.approx(2 / 3)  # halving the excess over SOL
    assert sol_score(0.4, 2.0, 0.5) > 1.0  # not clamped
    assert sol_score(1e9, 2.0, 0.5) == pytest.approx(0.0, abs=1e-8)


def test_score_is_the_formula() -> None:
    t_k, t_b, t_sol = 0.8, 1.7, 0.3
    assert sol_score(t_k, t_b, t_sol) == 1 / (1 + (t_k - t_sol) / (t_b - t_sol))


@pytest.mark.parametrize(("t_k", "expected"), [(0.4, 1.0), (0.5, 1.0), (0.6, 0.0), (5.0, 0.0)])
@pytest.mark.parametrize("t_b", [0.5, 0.3])
def test_degenerate_baseline_at_or_below_sol(t_k: float, expected: float, t_b: float) -> None:
    assert sol_score(t_k, t_b, 0.5) == expected


def test_score_decreases_with_time() -> None:
    times = [0.5 + 0.05 * i for i in range(200)]
    scores = [sol_score(t, 2.0, 0.5) for t in times]
    assert all(a > b for a, b in itertools.pairwise(scores))
    assert all(0 < s <= 1 for s in scores)


def test_score_division_by_zero_and_bad_times() -> None:
    assert sol_score(0.0, 2.0, 1.0) == math.inf  # T_k = 2 T_SOL - T_b
    with pytest.raises(ValueError, match="t_k"):
        sol_score(-1.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="t_sol"):
        sol_score(1.0, 2.0, float("nan"))


def test_aggregates() -> None:
    assert problem_score([1.0, 0.5, None, 0.5]) == pytest.approx(0.5)  # a failure counts 0
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert speedup(3.0, 1.5) == 2.0
    with pytest.raises(ValueError):
        problem_score([])
    with pytest.raises(ValueError):
        geomean([1.0, 0.0])
    with pytest.raises(ValueError):
        speedup(1.0, 0.0)


def test_below_sol() -> None:
    t_sol = 1.0
    assert is_below_sol(0.5, t_sol)
    assert not is_below_sol(SOL_MARGIN * t_sol, t_sol)  # the margin itself is tolerated
    assert not is_below_sol(0.95, t_sol)
    assert not is_below_sol(2.0, t_sol)
    assert not is_below_sol(0.0005, 0.001)  # microsecond-scale: within the timer's resolution
    assert is_below_sol(0.0002, 0.001)  # but five times faster than a 1 us T_SOL is impossible all the same
    assert is_below_sol(0.5, 1.0, margin=0.6, slack_ms=0.0)


# -- derived figures ---------------------------------------------------------------------------------------


def test_utilisation_of_a_memory_bound_kernel() -> None:
    c = counts(other=1.0, inputs=2.4e9, outputs=2.4e9)  # 4.8 GB: T_SOL = 1 ms on H200
    u = utilisation(c, H200, latency_ms=2.0)
    assert u.bandwidth_fraction == pytest.approx(0.5)
    assert u.sol_fraction == pytest.approx(0.5)
    assert u.achieved_bytes_per_s == pytest.approx(2.4e12)
    assert u.bound == "memory"
    with pytest.raises(ValueError):
        utilisation(c, H200, 0.0)


def test_arithmetic_intensity_and_ridge_agree_on_the_bound() -> None:
    for n in (16, 64, 256, 1024, 4096):
        c = counts({"bfloat16": 2 * n**3}, inputs=4 * n * n, outputs=2 * n * n)
        est = sol_time(c, H200)
        assert arithmetic_intensity(c) == pytest.approx(est.arithmetic_intensity)
        assert (est.arithmetic_intensity > est.ridge_point) == (est.bound == "compute")


def test_physical_floor_forgives_outputs_that_fit_in_l2() -> None:
    c = counts(inputs=48e6, outputs=48e6)  # 48 MB out fits the H200's 50 MiB L2
    assert sol_time(c, H200).t_sol_ms == pytest.approx(96e6 / 4.8e12 * 1e3)
    assert physical_floor_ms(c, H200) == pytest.approx(48e6 / 4.8e12 * 1e3)
    overridden = SolCounts(bytes=10.0, input_bytes=48e6, output_bytes=48e6, method="meta")
    assert physical_floor_ms(overridden, H200) == sol_time(overridden, H200).t_sol_ms


def test_no_single_workload_carries_a_geometric_mean() -> None:
    """Geomean underflow: one workload driven to a near-zero time must not lift the aggregate."""
    from solforge.sandbox.sol.score import counted_speedup, geomean_or_none

    honest = [counted_speedup(1.2, 0.12, 0.02), counted_speedup(1.1, 0.11, 0.02)]
    forged = counted_speedup(1e6, 0.10, 0.02)  # a time far below T_SOL: counts as the speed of light at most
    assert forged == pytest.approx(5.0)
    assert geomean_or_none([*honest, forged]) == pytest.approx((1.2 * 1.1 * 5.0) ** (1 / 3))
    assert counted_speedup(7.5, None, None) == 7.5  # CPU timings: no T_SOL to bound them
    assert geomean_or_none([None, 0.0, float("nan"), 2.0, 8.0]) == pytest.approx(4.0)
    assert geomean_or_none([]) is None
