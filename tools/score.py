"""get_sol_score: the speed-of-light breakdown of a run, or of a latency the agent names.

Per workload: FLOPs (tensor-core and other) and DRAM bytes counted from the reference
(:mod:`solforge.problems.counting`), arithmetic intensity, the bound, T_SOL on the GPU's peaks
(:mod:`solforge.sandbox.score`, :mod:`solforge.sandbox.hardware`) and the score of a latency. Counting
imports torch; it runs in a worker thread on first use and is cached per problem.
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import Field

from .base import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, ToolContext, ToolModel, ToolResult
from .errors import ToolInputError
from .jobs import JOB_ID_PATTERN
from .ledger_port import baselines_for, job_for

if TYPE_CHECKING:
    from solforge.problems import Problem
    from solforge.problems.counting import SolCounts
    from solforge.sandbox.hardware import Peaks

DEFAULT_GPU = "H200"
"""Peaks used when neither the run nor this machine names a GPU."""

_counts_lock = threading.Lock()
_counts_cache: dict[tuple[str, int], dict[str, SolCounts]] = {}


class GetSolScoreInput(ToolModel):
    """A finished run (job_id), or a problem and the latency to score."""

    job_id: str | None = Field(default=None, pattern=JOB_ID_PATTERN)
    """A finished run_benchmark or submit_solution job of yours: its measured latencies are analysed."""
    problem: str | None = Field(default=None, max_length=200)
    """Problem name, when analysing without a job (omit it with job_id)."""
    latency_ms: float | dict[str, float] | None = None
    """Latency to score: one number for every workload, or {workload uuid: ms}. Omit for the bounds alone."""
    baseline_ms: float | dict[str, float] | None = None
    """Baseline T_b to score against; default: from your latest finished run of the problem."""
    workloads: list[str] | None = Field(default=None, max_length=256)
    """Workload uuids to include; default all."""
    gpu: str | None = Field(default=None, max_length=100)
    """GPU whose peaks to use (H200, H100-SXM, B200, A100, ...); default the run's GPU, else this server's, else H200."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Bound on the answer\'s size in characters (rows are left out to fit; ask for more to see them)."""


class SolRow(ToolResult):
    """One workload's speed-of-light analysis."""

    uuid: str
    axes: dict[str, int]
    tensor_flops: float
    """Matrix-product FLOPs (2 per multiply-add), all dtypes."""
    tensor_dtypes: list[str] = Field(default_factory=list)
    other_flops: float
    """Elementwise/reduction FLOPs, at the fp32 CUDA-core rate."""
    bytes: float
    """DRAM bytes: inputs read once + outputs written once (or the problem's override)."""
    arithmetic_intensity: float | None
    """FLOPs per byte; compare with ridge_point."""
    ridge_point: float
    """FLOPs per byte above which this workload is compute-bound on this GPU."""
    bound: str
    """memory or compute: which limit sets T_SOL."""
    compute_ms: float
    memory_ms: float
    t_sol_ms: float
    latency_ms: float | None = None
    baseline_ms: float | None = None
    score: float | None = None
    """1/(1+(T-T_SOL)/(T_b-T_SOL)): 0.5 at the baseline, 1 at speed of light."""
    sol_fraction: float | None = None
    """T_SOL / latency: how close to the speed of light (1.0 = at it)."""
    bandwidth_fraction: float | None = None
    """Achieved DRAM bandwidth / peak at this latency (memory-bound workloads)."""
    status: str | None = None
    """The run's status for this workload (job analyses)."""


class GetSolScoreResult(ToolResult):
    """Speed-of-light analysis of a problem's workloads on one GPU."""

    problem: str
    gpu: str
    peak_source: str
    """datasheet:<GPU> or calibrated:<GPU>."""
    dram_tb_per_s: float
    bf16_tflops: float | None = None
    fp32_tflops: float
    source: str
    """What was analysed: 'job <id>', 'given latency' or 'bounds only'."""
    rows: list[SolRow]
    rows_omitted: int = 0
    mean_score: float | None = None
    """Mean over the analysed workloads (failed workloads of a job count 0)."""
    notes: list[str] = Field(default_factory=list)

    def render(self) -> str:
        head = (
            f"Speed of light for {self.problem} on {self.gpu} ({self.peak_source}: {self.dram_tb_per_s:.2f} TB/s"
            + (f", {self.bf16_tflops:.0f} TFLOP/s bf16" if self.bf16_tflops else "")
            + f", {self.fp32_tflops:.0f} TFLOP/s fp32); {self.source}"
        )
        out = [
            head,
            "workload | axes | FLOP tensor/other | bytes | FLOP/B (ridge) | bound | T_SOL us | latency us | T_b us"
            " | score | SOL frac",
        ]
        for r in self.rows:
            axes = ",".join(f"{k}={v}" for k, v in r.axes.items())
            ai = "inf" if r.arithmetic_intensity is None else f"{r.arithmetic_intensity:.3g}"
            out.append(
                f"{r.uuid} | {axes} | {_si(r.tensor_flops)}/{_si(r.other_flops)} | {_si(r.bytes)} | "
                f"{ai} ({r.ridge_point:.3g}) | {r.bound} | {_us(r.t_sol_ms)} | {_us(r.latency_ms)} | "
                f"{_us(r.baseline_ms)} | {_fmt(r.score, 3)} | {_fmt(r.sol_fraction, 3)}"
                + (f" [{r.status}]" if r.status and r.status != "PASSED" else "")
            )
        if self.rows_omitted:
            out.append(
                f"({self.rows_omitted} more workloads; ask with a larger max_chars or a workloads filter)"
            )
        if self.mean_score is not None:
            out.append(f"mean score {self.mean_score:.3f}")
        out += [f"note: {n}" for n in self.notes]
        out.append(
            "Memory-bound: move fewer bytes, wider and with more in flight. Compute-bound: tensor cores, "
            "pipelining. Aim at the workloads with the lowest SOL fraction."
        )
        return "\n".join(out)


def _si(value: float) -> str:
    for factor, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{suffix}"
    return f"{value:.3g}"


def _us(ms: float | None) -> str:
    return "-" if ms is None else f"{ms * 1e3:.4g}"


def _fmt(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if digits == 4 else f"{value:.{digits}f}"


def _counts(problem: Problem, ctx: ToolContext) -> dict[str, SolCounts]:
    from solforge.problems.counting import counts_for_problem
    from solforge.sandbox.hardware import default_cache_dir

    key = (problem.name, id(problem))
    with _counts_lock:
        if key in _counts_cache:
            return _counts_cache[key]
    counts = counts_for_problem(problem, cache_dir=ctx.settings.cache_dir or default_cache_dir())
    with _counts_lock:
        _counts_cache[key] = counts
    return counts


def _peaks(gpu: str) -> Peaks:
    from solforge.sandbox.hardware import GPU_SPECS, resolve_peaks

    peaks = resolve_peaks(gpu)
    if peaks is None:
        raise ToolInputError(f"no peak numbers for GPU {gpu!r}; use one of {sorted(GPU_SPECS)}")
    return peaks


def _local_gpu() -> str | None:
    from solforge.sandbox.hardware import detect_gpu

    info = detect_gpu()
    return info.name if info is not None else None


def _per_workload(value: float | dict[str, float] | None, uuids: list[str], what: str) -> dict[str, float]:
    if value is None:
        return {}
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(uuids))
        if unknown:
            raise ToolInputError(
                f"{what} names workloads {unknown[:5]} that are not being analysed; uuids: {uuids[:5]}..."
            )
        bad = {k: v for k, v in value.items() if not (v > 0 and math.isfinite(v))}
        if bad:
            raise ToolInputError(f"{what} must be positive milliseconds; got {bad}")
        return dict(value)
    if not (value > 0 and math.isfinite(value)):
        raise ToolInputError(f"{what} must be a positive number of milliseconds, got {value}")
    return dict.fromkeys(uuids, float(value))


def analyse(
    problem: Problem,
    counts: dict[str, SolCounts],
    peaks: Peaks,
    latencies: dict[str, float],
    baselines: dict[str, float],
    *,
    workloads: list[str] | None,
    statuses: dict[str, str] | None = None,
    reported: dict[str, dict[str, Any]] | None = None,
) -> list[SolRow]:
    """One row per workload (pure: no ledger, no I/O)."""
    from solforge.sandbox.score import sol_score, sol_time, utilisation

    rows: list[SolRow] = []
    for w in problem.workloads:
        if workloads is not None and w.uuid not in workloads:
            continue
        c = counts[w.uuid]
        est = sol_time(c, peaks)
        latency = latencies.get(w.uuid)
        baseline = baselines.get(w.uuid)
        score = None
        if latency is not None and baseline is not None:
            score = round(sol_score(latency, baseline, est.t_sol_ms), 4)
        if reported and w.uuid in reported and reported[w.uuid].get("score") is not None:
            score = round(float(reported[w.uuid]["score"]), 4)
        util = utilisation(c, peaks, latency) if latency else None
        rows.append(
            SolRow(
                uuid=w.uuid,
                axes=w.axes,
                tensor_flops=c.total_tensor_core_flops,
                tensor_dtypes=sorted(c.tensor_core_flops),
                other_flops=c.other_flops,
                bytes=c.bytes,
                arithmetic_intensity=None
                if math.isinf(est.arithmetic_intensity)
                else round(est.arithmetic_intensity, 4),
                ridge_point=round(est.ridge_point, 3),
                bound=est.bound,
                compute_ms=est.compute_ms,
                memory_ms=est.memory_ms,
                t_sol_ms=est.t_sol_ms,
                latency_ms=latency,
                baseline_ms=baseline,
                score=score,
                sol_fraction=round(util.sol_fraction, 4) if util else None,
                bandwidth_fraction=round(util.bandwidth_fraction, 4) if util else None,
                status=(statuses or {}).get(w.uuid),
            )
        )
    return rows


async def get_sol_score(args: GetSolScoreInput, ctx: ToolContext) -> GetSolScoreResult:
    """Speed-of-light breakdown of a finished job, or of a problem at a latency the agent gives.

    Raises
    ------
    ToolInputError
        For missing or contradictory arguments, unknown workloads, or a job that is not finished.
    JobNotFound
        When the job is not the caller's.
    ProblemNotFound, CountingError
        For an unknown problem, or a reference whose FLOPs cannot be counted.
    """
    if args.job_id is None and args.problem is None:
        raise ToolInputError(
            "give job_id (a finished run of yours) or problem (with latency_ms to score a time)"
        )
    notes: list[str] = []
    statuses: dict[str, str] | None = None
    reported: dict[str, dict[str, Any]] | None = None
    latencies: dict[str, float] = {}
    baselines: dict[str, float] = {}
    gpu = args.gpu
    if args.job_id is not None:
        if args.latency_ms is not None:
            raise ToolInputError("give either job_id (its latencies are used) or latency_ms, not both")
        snap = await job_for(ctx, args.job_id)
        if snap.report is None:
            raise ToolInputError(
                f"job {args.job_id} is {snap.state} and has no results"
                + (f"; call wait_job(job_id={args.job_id!r}) first" if not snap.terminal else "")
            )
        if args.problem is not None and args.problem != snap.problem:
            raise ToolInputError(
                f"job {args.job_id} ran problem {snap.problem!r}, not {args.problem!r}; omit problem"
            )
        problem = ctx.services.problems.load(snap.problem)
        report = snap.report
        statuses, reported = {}, {}
        for t in report.traces:
            ev = t.evaluation
            if ev is None:
                continue
            statuses[t.workload.uuid] = ev.status.value
            perf = ev.performance
            if perf is not None and perf.timer != "cpu" and report.device != "cpu":
                latencies[t.workload.uuid] = perf.latency_ms
                if perf.baseline_latency_ms:
                    baselines[t.workload.uuid] = perf.baseline_latency_ms
                reported[t.workload.uuid] = {"score": perf.sol_score if ev.status.value == "PASSED" else 0.0}
        if report.device == "cpu":
            notes.append(
                "the run used the CPU: its timings are not comparable with a GPU's speed of light; bounds only"
            )
            gpu = gpu or DEFAULT_GPU
        else:
            gpu = gpu or report.device
        source = f"job {args.job_id}"
    else:
        assert args.problem is not None
        problem = ctx.services.problems.load(args.problem)
        source = "bounds only"
        gpu = gpu or await anyio.to_thread.run_sync(_local_gpu) or DEFAULT_GPU
    uuids = [w.uuid for w in problem.workloads]
    if args.workloads is not None:
        unknown = [u for u in args.workloads if u not in uuids]
        if unknown:
            raise ToolInputError(
                f"workloads {unknown[:5]} are not workloads of {problem.name}; get_problem lists them"
            )
    wanted = args.workloads or uuids
    if args.job_id is None:
        latencies = _per_workload(args.latency_ms, wanted, "latency_ms")
        if latencies:
            source = "given latency"
    if args.baseline_ms is not None:
        baselines = _per_workload(args.baseline_ms, wanted, "baseline_ms")
    elif latencies and not baselines:
        baselines, device = await baselines_for(ctx, problem.name)
        if baselines:
            notes.append(f"baselines from your latest run on {device}")
        else:
            notes.append("no baseline known yet (run_benchmark measures it); pass baseline_ms to get scores")
    peaks = await anyio.to_thread.run_sync(_peaks, gpu)
    counts = await anyio.to_thread.run_sync(_counts, problem, ctx)
    rows = analyse(
        problem,
        counts,
        peaks,
        latencies,
        baselines,
        workloads=args.workloads,
        statuses=statuses,
        reported=reported,
    )
    methods = {counts[r.uuid].method for r in rows}
    uncounted = sorted({op for r in rows for op in counts[r.uuid].uncounted_ops})
    if "device" in methods:
        notes.append(
            "some FLOPs were counted by running the reference on real inputs (it does not run on meta tensors)"
        )
    if uncounted:
        notes.append(f"operators without a cost rule (charged 0 FLOPs): {', '.join(uncounted[:8])}")
    scores = [r.score if (r.status in (None, "PASSED")) else 0.0 for r in rows]
    mean = None
    if rows and any(s is not None for s in scores):
        mean = round(sum(s or 0.0 for s in scores) / len(scores), 4)
    result = GetSolScoreResult(
        problem=problem.name,
        gpu=gpu,
        peak_source=peaks.source,
        dram_tb_per_s=peaks.dram_bytes_per_s / 1e12,
        bf16_tflops=(peaks.tensor_flops.get("bf16") or 0) / 1e12 or None,
        fp32_tflops=peaks.fp32_flops / 1e12,
        source=source,
        rows=rows,
        mean_score=mean,
        notes=notes,
    )
    while len(result.render()) > args.max_chars - 200 and len(result.rows) > 1:
        result.rows.pop()
        result.rows_omitted += 1
    return result
