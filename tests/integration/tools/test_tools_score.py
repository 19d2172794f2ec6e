"""get_sol_score against a real ledger and worker: which baselines may score, the mean, impossible
latencies, units, the size of the answer and the workloads of a job.

There is no GPU here, so GPU runs come from a runner that hands the worker a report written by the
test (device "NVIDIA H200", times chosen to be checked); the ledger, the worker, the tools and the
speed-of-light arithmetic are the real ones.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from solforge.planner import Heartbeat, JobResult, JobSpec, Ledger
from solforge.problems import Correctness, Environment, Evaluation, Performance, Status, Trace, Workload
from solforge.sandbox.api import BuildReport, EvalReport
from solforge.sandbox.sol.counting import SolCounts
from solforge.sandbox.sol.score import SOL_MARGIN, SOL_TIMER_SLACK_MS, problem_score, sol_score
from solforge.tools.base import DEFAULT_MAX_CHARS, ToolContext, ToolServices
from solforge.tools.errors import ToolInputError
from solforge.tools.jobs import RunBenchmarkInput, run_benchmark
from solforge.tools.score import GetSolScoreInput, GetSolScoreResult, get_sol_score
from solforge.tools.testing import (
    RMSNORM,
    ledger_with_worker,
    rmsnorm_definition,
    services_for,
    solution,
    write_problem,
)
from solforge.tools.testing import tool_context as context

pytestmark = pytest.mark.anyio

H200 = "NVIDIA H200"
BIG = "big_rmsnorm"
"""8192 x 8192 bf16: about 268 MB moved, T_SOL about 56 us on an H200 (a time well above the timer's slack)."""
MANY = "many_rmsnorm"
"""80 workloads: more rows than one answer holds."""


class ReportRunner:
    """Evaluates a job by returning the EvalReport its solution's description holds (the GPU stand-in)."""

    def run(self, job: JobSpec, heartbeat: Heartbeat, cancel: threading.Event) -> JobResult:
        if job.kind == "compile":
            return JobResult.done(BuildReport(ok=True, language="pytorch"))
        return JobResult.done(EvalReport.model_validate_json(job.request.solution.description or "{}"))


@pytest.fixture
def report_ledger() -> Iterator[Ledger]:
    with ledger_with_worker(ReportRunner()) as ledger:
        yield ledger


@pytest.fixture
def score_services(problems: Path, tmp_path: Path, report_ledger: Ledger) -> ToolServices:
    write_problem(problems, rmsnorm_definition(BIG, hidden=8192), batch_sizes=(8192,))
    write_problem(problems, rmsnorm_definition(MANY), batch_sizes=tuple(range(1, 81)))
    return services_for(problems, ledger=report_ledger, cache_dir=tmp_path / "cache")


def uuids_of(services: ToolServices, problem: str = RMSNORM) -> list[str]:
    return [w.uuid for w in services.problems.load(problem).workloads]


def report(device: str, times: dict[str, tuple[float, float | None]], *, problem: str = RMSNORM,
           counts: dict[str, SolCounts] | None = None) -> str:
    """An EvalReport (JSON) with one PASSED trace per workload: {uuid: (latency_ms, baseline_ms)}."""
    traces = [
        Trace(
            definition=problem,
            solution="v1",
            workload=Workload(uuid=uuid, axes={}),
            evaluation=Evaluation(
                status=Status.PASSED,
                correctness=Correctness(rounds=1),
                performance=Performance(
                    latency_ms=latency,
                    baseline_latency_ms=baseline,
                    timer="cpu" if device == "cpu" else "cuda_event",
                ),
                environment=Environment(hardware=device),
            ),
        )
        for uuid, (latency, baseline) in times.items()
    ]
    return EvalReport(problem=problem, solution="v1", device=device, traces=traces,
                      counts=counts or {}).model_dump_json()


async def run_on(ctx: ToolContext, device: str, times: dict[str, tuple[float, float | None]],
                 counts: dict[str, SolCounts] | None = None) -> str:
    """Run a benchmark whose report says it ran on ``device`` with ``times``; return the job id."""
    code = solution(name=f"on-{len(times)}-{device.replace(' ', '-')}{'-counted' if counts else ''}")
    code["description"] = report(device, times, counts=counts)
    job = await run_benchmark(RunBenchmarkInput(solution=code, wait_s=20), ctx)
    assert job.state == "done" and job.job_id, job.render()
    return job.job_id


async def test_cpu_baselines_never_score_against_a_gpu_speed_of_light(score_services: ToolServices) -> None:
    ctx = context(score_services)
    uuids = uuids_of(score_services)
    await run_on(ctx, "cpu", dict.fromkeys(uuids, (40.0, 49.27)))
    result = await get_sol_score(GetSolScoreInput(problem=RMSNORM, latency_ms=0.01, gpu="H200"), ctx)
    assert all(r.baseline_ms is None and r.score is None for r in result.rows)
    assert all(r.issue == "no baseline measured on H200" for r in result.rows)
    assert result.mean_score is None and result.scored_rows == 0
    text = result.render()
    assert "49.27" not in text and "mean score" not in text and text.count("| no T_b |") == 3
    assert any("run_benchmark on a GPU server" in n for n in result.notes)
    assert any("runs on cpu were not used" in n for n in result.notes)


async def test_the_latest_run_on_the_same_gpu_model_gives_the_baselines(score_services: ToolServices) -> None:
    ctx = context(score_services)
    uuids = uuids_of(score_services)
    await run_on(ctx, H200, {uuids[0]: (0.01, 0.02), uuids[1]: (0.01, 0.03)})
    await run_on(ctx, "cpu", dict.fromkeys(uuids, (40.0, 49.27)))  # newer, but not comparable
    result = await get_sol_score(GetSolScoreInput(problem=RMSNORM, latency_ms=0.015, gpu="H200"), ctx)
    rows = {r.uuid: r for r in result.rows}
    assert [rows[u].baseline_ms for u in uuids] == [0.02, 0.03, None]
    expected = [sol_score(0.015, t_b, rows[u].t_sol_ms) for u, t_b in zip(uuids, (0.02, 0.03), strict=False)]
    assert [rows[u].score for u in uuids[:2]] == pytest.approx(expected, rel=1e-3)
    assert rows[uuids[2]].score is None and rows[uuids[2]].issue == "no baseline measured on H200"
    # The mean is the project's problem score over the two scored rows, not a third zero.
    assert result.scored_rows == 2 and result.mean_score == pytest.approx(problem_score(expected), rel=1e-3)
    assert f"mean score {result.mean_score:.3f} over 2 of 3 workloads" in result.render()
    assert any(f"latest run on {H200}" in n for n in result.notes)
    # Another GPU's speed of light takes none of the H200's baselines.
    other = await get_sol_score(GetSolScoreInput(problem=RMSNORM, latency_ms=0.015, gpu="B200"), ctx)
    assert all(r.score is None and r.issue == "no baseline measured on B200" for r in other.rows)


async def test_a_latency_below_the_speed_of_light_is_flagged_not_scored(score_services: ToolServices) -> None:
    ctx = context(score_services)
    impossible = await get_sol_score(
        GetSolScoreInput(problem=BIG, latency_ms=0.001, baseline_ms=0.2, gpu="H200"), ctx
    )
    row = impossible.rows[0]
    assert row.t_sol_ms > 0.05 and row.below_sol == "impossible" and row.score is None
    assert row.raw_score is not None and row.raw_score > 1  # the formula's value stays visible
    assert impossible.mean_score == 0.0 and impossible.scored_rows == 1  # a REWARD_HACK counts 0
    assert impossible.warnings and "milliseconds" in impossible.warnings[0]
    text = impossible.render()
    assert text.splitlines()[1].startswith("WARNING:") and f"invalid (raw {row.raw_score:.3f})" in text
    # Just under T_SOL, within the judge's margin: not a hack, but the score is capped at 1.
    near = row.t_sol_ms * 0.98
    assert near > SOL_MARGIN * row.t_sol_ms - SOL_TIMER_SLACK_MS
    capped = await get_sol_score(
        GetSolScoreInput(problem=BIG, latency_ms=near, baseline_ms=0.2, gpu="H200"), ctx
    )
    row = capped.rows[0]
    assert row.below_sol == "within_margin" and row.score == 1.0 and row.raw_score and row.raw_score > 1
    assert not capped.warnings and "score capped at 1" in (row.issue or "")
    honest = await get_sol_score(
        GetSolScoreInput(problem=BIG, latency_ms=0.1, baseline_ms=0.2, gpu="H200"), ctx
    )
    assert honest.rows[0].below_sol is None and honest.rows[0].raw_score is None
    assert 0.5 < (honest.rows[0].score or 0) < 1 and honest.rows[0].issue is None


async def test_five_times_below_a_sub_microsecond_t_sol_is_impossible(score_services: ToolServices) -> None:
    """The timer's slack (1 us) must not turn an impossible time into 'within the model's error'."""
    ctx = context(score_services)
    probe = await get_sol_score(GetSolScoreInput(problem=RMSNORM, latency_ms=1.0, gpu="H200"), ctx)
    t_sol = min(r.t_sol_ms for r in probe.rows)
    assert t_sol < SOL_TIMER_SLACK_MS  # a tiny workload: the slack alone would excuse anything
    fast = await get_sol_score(GetSolScoreInput(problem=RMSNORM, latency_ms=t_sol / 5, gpu="H200"), ctx)
    row = min(fast.rows, key=lambda r: r.t_sol_ms)
    assert row.below_sol == "impossible" and row.score is None


async def test_times_are_milliseconds_like_run_benchmark(score_services: ToolServices) -> None:
    ctx = context(score_services)
    result = await get_sol_score(
        GetSolScoreInput(problem=BIG, latency_ms=0.1, baseline_ms=0.2, gpu="H200"), ctx
    )
    header = result.render().splitlines()[1]
    assert "T_SOL ms | latency ms | T_b ms" in header and " us" not in header
    cells = result.render().splitlines()[2].split(" | ")
    assert cells[6:9] == [f"{result.rows[0].t_sol_ms:.4g}", "0.1", "0.2"]


def floats(value: Any) -> Iterator[float]:
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from floats(v)
    elif isinstance(value, list):
        for v in value:
            yield from floats(v)


async def test_the_structured_answer_fits_and_pages_on(score_services: ToolServices) -> None:
    ctx = context(score_services)
    uuids = uuids_of(score_services, MANY)
    seen: list[str] = []
    offset: int | None = 0
    pages: list[GetSolScoreResult] = []
    while offset is not None:
        page = await get_sol_score(
            GetSolScoreInput(problem=MANY, latency_ms=0.01, baseline_ms=0.02, gpu="H200", offset=offset), ctx
        )
        structured = json.dumps(page.model_dump(mode="json"))
        assert len(structured) <= DEFAULT_MAX_CHARS and len(page.render()) <= DEFAULT_MAX_CHARS
        # Times and ratios to 4 significant digits; FLOP and byte counts are whole numbers, kept exact.
        assert all(f.is_integer() or f == float(f"{f:.4g}") for f in floats(page.model_dump(mode="json")))
        seen += [r.uuid for r in page.rows]
        pages.append(page)
        offset = page.next_offset
    assert len(pages) > 1 and seen == uuids
    first = pages[0]
    assert (
        first.rows_omitted == len(uuids) - len(first.rows) and f"offset={first.next_offset}" in first.render()
    )
    # The mean covers every workload, whichever page it is read on.
    assert {(p.mean_score, p.scored_rows) for p in pages} == {(first.mean_score, len(uuids))}
    with pytest.raises(ToolInputError, match="past the last"):
        await get_sol_score(GetSolScoreInput(problem=MANY, offset=len(uuids)), ctx)


async def test_a_job_lists_the_workloads_it_ran(score_services: ToolServices) -> None:
    ctx = context(score_services)
    uuids = uuids_of(score_services)
    job = await run_on(ctx, H200, {uuids[0]: (0.01, 0.02), uuids[2]: (0.012, 0.02)})
    result = await get_sol_score(GetSolScoreInput(job_id=job), ctx)
    assert [r.uuid for r in result.rows] == [uuids[0], uuids[2]] and result.total_rows == 2
    assert result.gpu == H200 and result.peak_source == "datasheet:H200"
    assert all(r.score is not None and 0.5 < r.score < 1 for r in result.rows) and result.scored_rows == 2
    with pytest.raises(ToolInputError, match="not workloads of job"):
        await get_sol_score(GetSolScoreInput(job_id=job, workloads=[uuids[1]]), ctx)
    # The run's times scored against another GPU's speed of light would mean nothing: bounds only.
    elsewhere = await get_sol_score(GetSolScoreInput(job_id=job, gpu="B200"), ctx)
    assert all(r.latency_ms is None and r.score is None for r in elsewhere.rows)
    assert elsewhere.mean_score is None and any("not comparable" in n for n in elsewhere.notes)


async def test_a_cpu_job_gives_bounds_only(score_services: ToolServices) -> None:
    ctx = context(score_services)
    uuids = uuids_of(score_services)
    job = await run_on(ctx, "cpu", {uuids[1]: (40.0, 49.27)})
    result = await get_sol_score(GetSolScoreInput(job_id=job), ctx)
    assert [r.uuid for r in result.rows] == [uuids[1]] and result.gpu == "H200"
    assert result.rows[0].latency_ms is None and result.mean_score is None
    assert any("GPU server" in n for n in result.notes)


async def test_a_job_is_explained_with_its_judge_s_counts(score_services: ToolServices,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU run's report carries the counts behind its T_SOL: get_sol_score uses them and counts nothing in
    the server (on the H200 the server's own count, torch imported and 16 workloads traced, took 8.5 s)."""
    from solforge.sandbox.sol import counting

    ctx = context(score_services)
    uuids = uuids_of(score_services)
    judged = {uuids[0]: SolCounts(other_flops=1e6, bytes=4.8e6, input_bytes=2.4e6, output_bytes=2.4e6, method="meta")}
    job = await run_on(ctx, H200, {uuids[0]: (0.01, 0.02)}, counts=judged)

    def no_counting(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("counted in the server although the report had the counts")

    monkeypatch.setattr(counting, "counts_for_workloads", no_counting)
    result = await get_sol_score(GetSolScoreInput(job_id=job), ctx)
    (row,) = result.rows
    assert row.bytes == 4.8e6 and row.other_flops == 1e6  # the judge's figures, not a count of the definition
    assert row.t_sol_ms == pytest.approx(4.8e6 / 4.8e12 * 1e3, rel=0.01)
    # A run without counts (a CPU run, an older report) is still explained: the server counts what it lacks.
    monkeypatch.undo()
    plain = await run_on(ctx, H200, {uuids[1]: (0.01, 0.02)})
    (counted,) = (await get_sol_score(GetSolScoreInput(job_id=plain), ctx)).rows
    assert counted.uuid == uuids[1] and counted.bytes > 0 and counted.bytes != 4.8e6
