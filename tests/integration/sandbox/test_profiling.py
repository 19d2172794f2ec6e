"""Profiling answers: Nsight Compute's report of a Triton rmsnorm on the H200 read into the compact answer, its
pages, the CUPTI fallback, the bound line, and the refusal on a machine without a GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from solforge.sandbox import profiling
from solforge.sandbox.api import KernelProfile, ProfileReport, StallShare

DATA = Path(__file__).resolve().parents[2] / "data" / "ncu"
ROOT = Path(__file__).resolve().parents[3]
# `ncu --import R --page raw --csv --print-units base` and `--page details --print-details all` of the
# report `solforge profile qwen3_8b_rmsnorm --solution .../triton.json` wrote on the H200 (ncu 2025.3.1,
# 2026-12-03): the first workload, one token.
RAW = DATA / "h200_triton_rmsnorm_raw.csv"
DETAILS = DATA / "h200_triton_rmsnorm_details.txt"


def test_the_h200_report_reads_into_every_field_of_the_answer() -> None:
    (kernel,) = profiling.kernels_from_raw(profiling.parse_raw_csv(RAW.read_text()))
    assert kernel.name == "_rmsnorm_kernel" and kernel.index == 1
    assert kernel.duration_us == pytest.approx(3.232)  # "3,232" ns: the thousands separator is read
    assert (kernel.grid, kernel.block, kernel.registers, kernel.shared_bytes) == ("(1, 1, 1)", "(256, 1, 1)", 31, 32)
    assert kernel.dram_pct == pytest.approx(0.14) and kernel.sm_pct == pytest.approx(0.03)
    assert kernel.memory_pct == pytest.approx(0.38) and kernel.l2_hit_pct == pytest.approx(38.79)
    assert kernel.achieved_occupancy_pct is not None and kernel.theoretical_occupancy_pct == 100
    assert kernel.occupancy_limiter is None  # nothing limits a kernel at full theoretical occupancy
    assert kernel.tensor_pipe_pct is not None and kernel.issue_cycles == pytest.approx(21.87)
    assert [s.reason for s in kernel.stalls] == ["long_scoreboard", "short_scoreboard", "no_instruction"]
    assert kernel.dram_bytes is not None and kernel.dram_bytes > 0
    # One block of 256 threads for 132 SMs: the answer says what to change.
    assert kernel.bound.startswith("too little parallel work: 1 block(s)"), kernel.bound


def test_the_compact_answer_fits_and_says_what_it_left_out() -> None:
    (kernel,) = profiling.kernels_from_raw(profiling.parse_raw_csv(RAW.read_text()))
    one = ProfileReport(tool="ncu", workload="w", kernels=[kernel], kernel_us=kernel.duration_us, sol_us=0.0123)
    text = profiling.summary_text(one)
    assert text.startswith("ncu: 1 kernel(s) in one call, 3.23 us of kernel time; T_SOL 0.0123 us")
    assert "_rmsnorm_kernel" in text and "long_scoreboard 11.4" in text and "bound: too little" in text
    many = [kernel.model_copy(update={"index": i, "duration_us": float(i)}) for i in range(1, 41)]
    crowded = ProfileReport(tool="ncu", workload="w", kernels=many, kernel_us=sum(k.duration_us for k in many))
    text = profiling.summary_text(crowded)
    assert len(text) <= profiling.ANSWER_CHARS
    assert text.index("#40 ") < text.index("#39 ")  # the longest kernels first
    assert "more kernel(s); profile with kernel=N" in text


def test_a_kernels_sections_are_paged() -> None:
    (block,) = profiling.split_details(DETAILS.read_text())
    assert block.lstrip().startswith("_rmsnorm_kernel (1, 1, 1)x(256, 1, 1)")
    assert "Section: GPU Speed Of Light Throughput" in block and "Section: Warp State Statistics" in block
    first, pages = profiling.page_of(block, 1)
    assert pages == 12  # as the H200 run printed it: "(page 1 of 12)"
    texts = [profiling.page_of(block, n)[0] for n in range(1, pages + 1)]
    assert all(len(t) <= profiling.PAGE_CHARS for t in texts) and texts[0] == first
    assert [line for t in texts for line in t.splitlines() if line.strip()] == \
        [line for line in block.splitlines() if line.strip()]  # cut at line ends, nothing lost
    with pytest.raises(ValueError, match=f"have {pages} page"):
        profiling.page_of(block, pages + 1)


def test_the_cupti_fallback_lists_operations_in_launch_order() -> None:
    kernels = profiling.cupti_kernels([(5_000, 9_000, "second"), (1_000, 3_500, "first")])
    assert [(k.index, k.name, k.duration_us) for k in kernels] == [(1, "first", 2.5), (2, "second", 4.0)]
    report = ProfileReport(tool="cupti", workload="w", kernels=kernels, kernel_us=6.5,
                           note="Nsight Compute (ncu) is not on this machine: kernel durations from CUPTI only")
    text = profiling.summary_text(report)
    assert text.startswith("cupti: 2 kernel(s)") and "note: Nsight Compute (ncu) is not on this machine" in text


@pytest.mark.parametrize("asked", ["auto", "cupti"])
def test_a_cupti_answer_always_says_why_it_has_durations_only(asked: str) -> None:
    """Its kernels' bound line points at the note, so there is one whichever tool was asked for."""
    note = profiling.cupti_note(asked)
    assert ("tool='cupti' was asked for" in note) == (asked == "cupti")
    assert ("not on this machine" in note) == (asked == "auto")
    (kernel,) = profiling.cupti_kernels([(0, 1_000, "k")])
    report = ProfileReport(tool="cupti", workload="w", kernels=[kernel], kernel_us=1.0, note=note)
    assert "see the note" in kernel.bound and f"note: {note}" in profiling.summary_text(report)


def test_cupti_symbols_are_demangled_as_ncu_names_them() -> None:
    """The H200 run of 2026-12-03 showed PyTorch's kernels to the agent as raw symbols."""
    mangled = ("_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_kernel"
               "IN3c108BFloat16EfLb1EEEviT0_PKT_S8_S8_PS5_S9_PS6_")
    first, second = profiling.cupti_kernels([(0, 2_000, mangled), (3_000, 4_000, "_rmsnorm_kernel")])
    assert first.name.startswith("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16")
    assert second.name == "_rmsnorm_kernel"  # a C name stays as it is
    odd = ["_Z3fooi\n_Z3bari", "_Z" + "x" * 3000]  # not one bounded symbol: never given to c++filt
    assert profiling.demangle([*odd, "_Z3fooi"]) == [*odd, "foo(int)"]


@pytest.mark.parametrize(("fields", "expected"), [
    ({"dram_pct": 88.0, "sm_pct": 20.0, "memory_pct": 90.0}, "memory-bound: DRAM at 88%"),
    ({"dram_pct": 10.0, "sm_pct": 30.0, "memory_pct": 75.0}, "memory-bound on chip"),
    ({"dram_pct": 5.0, "sm_pct": 81.0, "memory_pct": 20.0, "tensor_pipe_pct": 0.0}, "compute-bound: SM at 81%, tensor pipe 0%"),
    ({"dram_pct": 25.0, "sm_pct": 20.0, "memory_pct": 30.0, "achieved_occupancy_pct": 18.0,
      "occupancy_limiter": "registers", "stalls": [StallShare(reason="long_scoreboard", cycles=9.0)]},
     "latency-bound: neither DRAM (25%) nor SM (20%) is busy; warps wait mostly on long_scoreboard; occupancy 18%, "
     "capped by registers"),
    ({}, "not known"),
])
def test_the_bound_line(fields: dict[str, object], expected: str) -> None:
    kernel = KernelProfile(index=1, name="k", duration_us=10.0, waves=4.0, **fields)  # type: ignore[arg-type]
    assert profiling.bound_line(kernel).startswith(expected)


def test_profiling_on_a_machine_without_a_gpu_refuses_with_what_to_use_instead() -> None:
    pytest.importorskip("torch")
    done = subprocess.run(
        [sys.executable, "-m", "solforge.server.cli", "profile", "qwen3_8b_rmsnorm", "--device", "cpu",
         "--solution", str(ROOT / "benchmarks" / "solutions" / "qwen3_8b_rmsnorm" / "pytorch.json")],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr[-2000:]
    assert "profiling needs an NVIDIA GPU" in done.stderr and "compile_kernel" in done.stderr
    assert done.stdout == ""


def test_a_candidate_runs_under_a_wrapper_that_outlives_it(tmp_path: Path) -> None:
    """The shape of a profiled candidate: Nsight Compute starts it as a child, and writes its report once the
    candidate has exited. Here a shell stands in for ncu and writes the candidate's exit code instead."""
    pytest.importorskip("torch")
    from solforge.sandbox.processes import CandidateProcess, ProcessProfile

    marker = tmp_path / "wrapper-saw-exit"
    wrapper = ["/bin/sh", "-c", '"$@"; echo $? > "$0"', str(marker)]
    process = CandidateProcess(ProcessProfile(device="cpu", defences=True, memory_limit_bytes=None),
                               tmp_path / "c", wrapper=wrapper)
    try:
        assert process.wait_warm(120), process.log_path.read_text()[-2000:]
        assert not marker.exists()
        process.close(wait_s=60)
        assert marker.read_text().strip() == "0"  # the candidate left cleanly, and the wrapper after it
    finally:
        process.discard()
