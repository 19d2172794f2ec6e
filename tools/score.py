"""get_sol_score: the speed-of-light breakdown of a run, or of a latency the agent names.

Per workload: FLOPs (tensor-core and other) and DRAM bytes counted from the reference
(:mod:`solforge.sandbox.sol.counting`), arithmetic intensity, the bound, T_SOL on the GPU's peaks
(:mod:`solforge.sandbox.sol.score`, :mod:`solforge.sandbox.sol.hardware`) and the score of a latency. Counting
imports torch; it runs in a worker thread on first use and is cached per problem.

Times are milliseconds in and out, as run_benchmark reports them. A score needs a baseline T_b timed
on the same GPU model whose T_SOL it uses: CPU timings and other GPUs' never enter one. A latency
below T_SOL is flagged as run_benchmark's judge would treat it (PROTOCOL.md rule 10), never shown as a
valid score above 1.
"""

from __future__ import annotations

import json
import math
import threading
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import Field

from .base import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, ToolContext, ToolModel, ToolResult
from .errors import ToolInputError
from .jobs import JOB_ID_PATTERN
from .ledger_port import baselines_for, job_for

if TYPE_CHECKING:
    from solforge.problems import Problem
    from solforge.sandbox.sol.counting import SolCounts
    from solforge.sandbox.sol.hardware import Peaks

DEFAULT_GPU = "H200"
"""Peaks used when neither the run nor this machine names a GPU."""
SIGNIFICANT_DIGITS = 4
"""Precision of the floats in the structured answer: more is noise, and it costs the agent's context."""

BelowSol = Literal["impossible", "within_margin"]

_counts_lock = threading.Lock()
_counts_cache: dict[tuple[str, int], dict[str, SolCounts]] = {}
"""Counts by workload uuid, per loaded problem."""


class GetSolScoreInput(ToolModel):
    """A finished run (job_id), or a problem and the latency to score."""

    job_id: str | None = Field(default=None, pattern=JOB_ID_PATTERN)
    """A finished run_benchmark or submit_solution job of yours: its measured latencies are analysed."""
    problem: str | None = Field(default=None, max_length=200)
    """Problem name, when analysing without a job (omit it with job_id)."""
    latency_ms: float | dict[str, float] | None = None
    """Latency to score in MILLISECONDS (1 us = 0.001): one for every workload, or {uuid: ms}; omit for bounds."""
    baseline_ms: float | dict[str, float] | None = None
    """Baseline T_b in ms; default: your latest run of the problem on the same GPU model."""
    workloads: list[str] | None = Field(default=None, max_length=256)
    """Workload uuids to include; default all (for a job: the workloads it ran)."""
    gpu: str | None = Field(default=None, max_length=100)
    """Peaks of this GPU (H200, H100-SXM, B200, A100, ...); default the run's, else this server's, else H200."""
    offset: int = Field(default=0, ge=0)
    """Rows to skip (paging): pass the next_offset of the previous answer."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Largest answer in characters (rows past it continue at next_offset)."""


class SolRow(ToolResult):
    """One workload's speed-of-light analysis (times in milliseconds, 4 significant digits)."""

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
    """1/(1+(T-T_SOL)/(T_b-T_SOL)): 0.5 at the baseline, 1 at speed of light. None when there is no
    usable baseline, or the latency is impossible (below_sol)."""
    raw_score: float | None = None
    """The formula's value when it is not shown as the score (a latency below T_SOL scores above 1)."""
    below_sol: BelowSol | None = None
    """The latency is below T_SOL: 'impossible' (below the physical floor with the judge's margin: a
    REWARD_HACK, PROTOCOL.md rule 10; check the unit) or 'within_margin' (within the model's error: score capped at 1)."""
    issue: str | None = None
    """Why this row has no score, or why its score is doubtful."""
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
    total_rows: int = 0
    """Workloads analysed in all; rows holds those from offset on that fit the answer."""
    offset: int = 0
    next_offset: int | None = None
    """Pass as offset to read on; null when rows reach the last workload."""
    rows_omitted: int = 0
    """Workloads after these rows (read them with next_offset)."""
    mean_score: float | None = None
    """Arithmetic mean over the scored workloads of all pages (failed or impossible ones count 0;
    workloads without a usable baseline are left out)."""
    scored_rows: int = 0
    """How many workloads mean_score averages."""
    warnings: list[str] = Field(default_factory=list)
    """Problems with the inputs that make scores invalid (impossible latencies)."""
    notes: list[str] = Field(default_factory=list)

    def render(self) -> str:
        head = (
            f"Speed of light for {self.problem} on {self.gpu} ({self.peak_source}: {self.dram_tb_per_s:.2f} TB/s"
            + (f", {self.bf16_tflops:.0f} TFLOP/s bf16" if self.bf16_tflops else "")
            + f", {self.fp32_tflops:.0f} TFLOP/s fp32); {self.source}"
        )
        out = [head, *(f"WARNING: {w}" for w in self.warnings)]
        out.append(
            "workload | axes | FLOP tensor/other | bytes | FLOP/B (ridge) | bound | T_SOL ms | latency ms | T_b ms"
            " | score | SOL frac"
        )
        for r in self.rows:
            axes = ",".join(f"{k}={v}" for k, v in r.axes.items())
            ai = "inf" if r.arithmetic_intensity is None else f"{r.arithmetic_intensity:.3g}"
            tags = [t for t in (r.status if r.status != "PASSED" else None, r.issue) if t]
            out.append(
                f"{r.uuid} | {axes} | {_si(r.tensor_flops)}/{_si(r.other_flops)} | {_si(r.bytes)} | "
                f"{ai} ({r.ridge_point:.3g}) | {r.bound} | {_ms(r.t_sol_ms)} | {_ms(r.latency_ms)} | "
                f"{_ms(r.baseline_ms)} | {_score_cell(r)} | {_fmt(r.sol_fraction, 3)}"
                + "".join(f" [{t}]" for t in tags)
            )
        if self.next_offset is not None:
            out.append(
                f"(rows {self.offset + 1}-{self.offset + len(self.rows)} of {self.total_rows}; read on with "
                f"offset={self.next_offset} (same arguments), or ask with a larger max_chars)"
            )
        if self.mean_score is not None:
            left_out = self.total_rows - self.scored_rows
            out.append(
                f"mean score {self.mean_score:.3f} over {self.scored_rows} of {self.total_rows} workloads"
                " (arithmetic mean; failed or impossible count 0"
                + (f"; {left_out} without a score left out" if left_out else "")
                + ")"
            )
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


def _ms(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.4g}"


def _fmt(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if digits == 4 else f"{value:.{digits}f}"


def _score_cell(row: SolRow) -> str:
    raw = f" (raw {row.raw_score:.3f})" if row.raw_score is not None else ""
    if row.below_sol == "impossible":
        return "invalid" + raw
    if _lacks_baseline(row):
        return "no T_b"
    return _fmt(row.score, 3) + raw


def _lacks_baseline(row: SolRow) -> bool:
    """A timed, passing workload that has no score for want of a baseline on this GPU."""
    return (
        row.latency_ms is not None
        and row.baseline_ms is None
        and row.score is None
        and row.raw_score is None
        and row.status in (None, "PASSED")
    )


def _sig(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``value`` to ``digits`` significant digits (inf and nan unchanged)."""
    return float(f"{value:.{digits}g}") if math.isfinite(value) else value


def _opt_sig(value: float | None) -> float | None:
    return None if value is None else _sig(value)


def _counts(problem: Problem, ctx: ToolContext, needed: list[str],
            known: dict[str, SolCounts] | None = None) -> dict[str, SolCounts]:
    """Counts of the ``needed`` workloads: those a job's judge reported (``known``), those counted before in
    this server, and only then counted here (which imports torch, once per server)."""
    from solforge.problems.config import cache_dir
    from solforge.sandbox.sol.counting import counts_for_workloads

    with _counts_lock:
        cached = _counts_cache.setdefault((problem.name, id(problem)), {})
        cached.update({uuid: c for uuid, c in (known or {}).items() if uuid in needed})
        missing = [uuid for uuid in needed if uuid not in cached]
    counted = counts_for_workloads(problem, missing, cache_dir=ctx.settings.cache_dir or cache_dir()) if missing else {}
    with _counts_lock:
        cached.update(counted)
        return {uuid: cached[uuid] for uuid in needed}


def _peaks(gpu: str) -> Peaks:
    from solforge.sandbox.sol.hardware import GPU_SPECS
    from solforge.sandbox.sol.peaks import resolve_peaks

    peaks = resolve_peaks(gpu)
    if peaks is None:
        raise ToolInputError(f"no peak numbers for GPU {gpu!r}; use one of {sorted(GPU_SPECS)}")
    return peaks


def local_gpu() -> str | None:
    from solforge.sandbox.sol.hardware import detect_gpu

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


def _same_gpu(device: str | None, peaks: Peaks) -> bool:
    """Whether times measured on ``device`` (a report's device) may be scored against ``peaks``' T_SOL."""
    from solforge.sandbox.sol.hardware import gpu_slug, match_spec

    if not device or device.strip().lower() in ("cpu", "unknown"):
        return False
    if peaks.spec_key is not None:
        spec = match_spec(device)
        return spec is not None and spec.key == peaks.spec_key
    return gpu_slug(device) == gpu_slug(peaks.gpu)


def _floor_peaks(peaks: Peaks) -> Peaks | None:
    """The datasheet peaks the judge's reward-hack check uses (never a calibration), if the GPU has any."""
    from solforge.sandbox.sol.hardware import GPU_SPECS, datasheet_peaks

    spec = GPU_SPECS.get(peaks.spec_key) if peaks.spec_key else None
    return datasheet_peaks(spec) if spec is not None else None


async def gpu_baselines(
    ctx: ToolContext, problem: str, peaks: Peaks
) -> tuple[dict[str, float], str | None, list[str]]:
    """Baselines (ms) from the caller's latest finished run of ``problem`` on ``peaks``' GPU model.

    Returns the times, the device they were measured on, and the other devices (CPU, other GPUs) of
    newer runs that were passed over because their times are not comparable with this T_SOL.
    """
    return await baselines_for(ctx, problem, device_ok=lambda device: _same_gpu(device, peaks))


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
    floor_peaks: Peaks | None = None,
) -> list[SolRow]:
    """One row per workload (pure: no ledger, no I/O).

    ``floor_peaks`` are the datasheet peaks of the reward-hack check (:func:`solforge.sandbox.sol.score.is_below_sol`
    on :func:`~solforge.sandbox.sol.score.physical_floor_ms`); None checks against T_SOL itself.
    """
    from solforge.sandbox.sol.score import is_below_sol, physical_floor_ms, sol_score, sol_time, utilisation

    rows: list[SolRow] = []
    for w in problem.workloads:
        if workloads is not None and w.uuid not in workloads:
            continue
        c = counts[w.uuid]
        est = sol_time(c, peaks)
        latency = latencies.get(w.uuid)
        baseline = baselines.get(w.uuid)
        raw: float | None = None
        if reported and w.uuid in reported and reported[w.uuid].get("score") is not None:
            raw = float(reported[w.uuid]["score"])
        elif latency is not None and baseline is not None:
            raw = sol_score(latency, baseline, est.t_sol_ms)
        below: BelowSol | None = None
        if latency is not None and latency < est.t_sol_ms:
            floor = physical_floor_ms(c, floor_peaks) if floor_peaks is not None else est.t_sol_ms
            below = "impossible" if is_below_sol(latency, floor) else "within_margin"
        score, issues = raw, []
        if latency is not None and raw is None and baseline is None:
            issues.append(f"no baseline measured on {peaks.spec_key or peaks.gpu}")
        if below == "impossible":
            score = None
            issues.append("below T_SOL: impossible, check the unit")
        elif below == "within_margin":
            score = None if raw is None else min(raw, 1.0)
            issues.append(
                "below T_SOL within the model's error" + ("" if raw is None else ": score capped at 1")
            )
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
                else _sig(est.arithmetic_intensity),
                ridge_point=_sig(est.ridge_point),
                bound=est.bound,
                compute_ms=_sig(est.compute_ms),
                memory_ms=_sig(est.memory_ms),
                t_sol_ms=_sig(est.t_sol_ms),
                latency_ms=_opt_sig(latency),
                baseline_ms=_opt_sig(baseline),
                score=_opt_sig(score),
                raw_score=_sig(raw) if raw is not None and raw != score and math.isfinite(raw) else None,
                below_sol=below,
                issue="; ".join(issues) or None,
                sol_fraction=_sig(util.sol_fraction) if util else None,
                bandwidth_fraction=_sig(util.bandwidth_fraction) if util else None,
                status=(statuses or {}).get(w.uuid),
            )
        )
    return rows


def mean_over_scored(rows: list[SolRow], *, failures_count: bool) -> tuple[float | None, int]:
    """The problem score over the rows that have one (docs/design.md section 3: arithmetic mean, failed ones 0).

    Rows without a usable baseline are left out rather than counted 0; an impossible latency that has a
    baseline counts 0, as the judge's REWARD_HACK would. ``failures_count``: whether failed workloads of the run count
    (not for a run whose times cannot be scored at all, such as a CPU run). Returns the mean and how
    many rows it averages.
    """
    from solforge.sandbox.sol.score import problem_score

    counted: list[float | None] = []
    for r in rows:
        if r.status not in (None, "PASSED"):
            if failures_count:
                counted.append(None)
        elif r.below_sol == "impossible":
            if r.baseline_ms is not None or r.raw_score is not None:
                counted.append(None)
        elif r.score is not None:
            counted.append(r.score)
    if not counted:
        return None, 0
    return round(problem_score(counted), 4), len(counted)


def _structured_chars(result: ToolResult) -> int:
    # What the server sends as structured content (server/adapter.py), measured as a client prints it.
    return len(json.dumps(result.model_dump(mode="json")))


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
    scoring = True  # False for a run whose times cannot be scored: its failures are not zeros of a GPU score
    known_counts: dict[str, SolCounts] = {}
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
        known_counts = report.counts
        on_cpu = report.device == "cpu"
        gpu = args.gpu or (DEFAULT_GPU if on_cpu or report.device == "unknown" else report.device)
        peaks = await anyio.to_thread.run_sync(_peaks, gpu)
        comparable = _same_gpu(report.device, peaks)
        scoring = comparable
        statuses, reported = {}, {}
        for t in report.traces:
            ev = t.evaluation
            if ev is None:
                continue
            statuses[t.workload.uuid] = ev.status.value
            perf = ev.performance
            if comparable and perf is not None and perf.timer != "cpu":
                latencies[t.workload.uuid] = perf.latency_ms
                if perf.baseline_latency_ms:
                    baselines[t.workload.uuid] = perf.baseline_latency_ms
                reported[t.workload.uuid] = {"score": perf.sol_score if ev.status.value == "PASSED" else 0.0}
        if on_cpu:
            notes.append(
                f"the run used the CPU: its timings are not comparable with a GPU's speed of light, so bounds "
                f"only (T_SOL on {gpu}); run run_benchmark on a GPU server to get scores"
            )
        elif not comparable:
            notes.append(
                f"the run used {report.device}: its timings are not comparable with {gpu}'s speed of light, so "
                "bounds only; omit gpu to score the run on its own GPU"
            )
        ran = list(statuses)
        public = {w.uuid for w in problem.workloads}
        held_out = [u for u in ran if u not in public]
        if not ran:
            notes.append(f"job {args.job_id} ran no workloads (see wait_job for why); bounds only")
        if held_out:
            notes.append(f"{len(held_out)} workloads the job ran are held out (not public) and not listed")
        selected = _select(
            args.workloads, [u for u in ran if u in public], problem.name, f"job {args.job_id}"
        )
        source = f"job {args.job_id}"
    else:
        assert args.problem is not None
        problem = ctx.services.problems.load(args.problem)
        source = "bounds only"
        gpu = args.gpu or await anyio.to_thread.run_sync(local_gpu) or DEFAULT_GPU
        peaks = await anyio.to_thread.run_sync(_peaks, gpu)
        selected = _select(args.workloads, [w.uuid for w in problem.workloads], problem.name, problem.name)
        latencies = _per_workload(args.latency_ms, selected, "latency_ms")
        if latencies:
            source = "given latency"
    if args.baseline_ms is not None:
        baselines = _per_workload(args.baseline_ms, selected, "baseline_ms")
    elif latencies and args.job_id is None:
        baselines, device, passed_over = await gpu_baselines(ctx, problem.name, peaks)
        if baselines:
            notes.append(f"T_b from your latest run on {device}")
        if passed_over:
            notes.append(
                f"baselines of your runs on {', '.join(passed_over)} were not used: only times measured on "
                f"{peaks.spec_key or gpu} are comparable with its T_SOL"
            )
    counts = await anyio.to_thread.run_sync(_counts, problem, ctx, selected, known_counts)
    rows = analyse(
        problem,
        counts,
        peaks,
        latencies,
        baselines,
        workloads=selected,
        statuses=statuses,
        reported=reported,
        floor_peaks=_floor_peaks(peaks),
    )
    notes += _row_notes(rows, peaks, gpu)
    methods = {counts[r.uuid].method for r in rows}
    uncounted = sorted({op for r in rows for op in counts[r.uuid].uncounted_ops})
    if "device" in methods:
        notes.append(
            "some FLOPs were counted by running the reference on real inputs (it does not run on meta tensors)"
        )
    if uncounted:
        notes.append(f"operators without a cost rule (charged 0 FLOPs): {', '.join(uncounted[:8])}")
    mean, scored = mean_over_scored(rows, failures_count=scoring)
    impossible = [r.uuid for r in rows if r.below_sol == "impossible"]
    warnings = []
    if impossible:
        warnings.append(
            f"{len(impossible)} of {len(rows)} latencies are below the speed of light on {peaks.spec_key or gpu}, "
            "which no kernel can reach: the judge treats such times as a REWARD_HACK (PROTOCOL.md rule 10), so "
            "they get no score. latency_ms is in milliseconds (1 us = 0.001 ms): check the unit."
        )
    if args.offset and args.offset >= len(rows):
        raise ToolInputError(
            f"offset {args.offset} is past the last of {len(rows)} workloads; use 0..{len(rows) - 1}"
        )
    result = GetSolScoreResult(
        problem=problem.name,
        gpu=gpu,
        peak_source=peaks.source,
        dram_tb_per_s=_sig(peaks.dram_bytes_per_s / 1e12),
        bf16_tflops=_sig((peaks.tensor_flops.get("bf16") or 0) / 1e12) or None,
        fp32_tflops=_sig(peaks.fp32_flops / 1e12),
        source=source,
        rows=rows[args.offset :],
        total_rows=len(rows),
        offset=args.offset,
        mean_score=mean,
        scored_rows=scored,
        warnings=warnings,
        notes=notes,
    )
    _fit(result, args.max_chars - 200)
    return result


def _select(wanted: list[str] | None, available: list[str], problem: str, where: str) -> list[str]:
    """The workloads to analyse: ``wanted`` (checked against ``available``) or all of ``available``."""
    if wanted is None:
        return available
    unknown = [u for u in wanted if u not in available]
    if unknown:
        raise ToolInputError(
            f"workloads {unknown[:5]} are not workloads of {where}"
            + (
                f"; get_problem(name={problem!r}) lists them"
                if where == problem
                else f"; it ran {available[:5]}"
            )
        )
    return list(wanted)


def _row_notes(rows: list[SolRow], peaks: Peaks, gpu: str) -> list[str]:
    """What to do about rows that have a latency but no score for want of a baseline."""
    missing = [r.uuid for r in rows if _lacks_baseline(r)]
    if not missing:
        return []
    return [
        f"{len(missing)} workloads have no baseline T_b measured on {peaks.spec_key or gpu}, so no score "
        f"(marked 'no T_b'): run run_benchmark on a GPU server with that GPU (it times the baseline there), "
        "or pass baseline_ms (milliseconds) yourself"
    ]


def _fit(result: GetSolScoreResult, limit: int) -> None:
    """Leave out trailing rows until both the text and the structured answer fit ``limit``; set next_offset."""
    while len(result.rows) > 1 and (len(result.render()) > limit or _structured_chars(result) > limit):
        result.rows.pop()
    end = result.offset + len(result.rows)
    result.rows_omitted = result.total_rows - end
    result.next_offset = end if end < result.total_rows else None
