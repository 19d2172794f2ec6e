"""A first evaluation on a GPU whose baseline table ships with the package measures no baseline (issue 15).

Skipped without a CUDA GPU, and where no table ships for this GPU's model (the tables are per model: the H200's
and the H100's so far). Where a table ships but was measured with another torch, the judge's keys differ and it
would measure, as it should: that case is skipped with the versions named rather than failed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from solforge.problems import Status, load_problem, reference_solution
from solforge.sandbox.api import EvalOptions, EvalRequest
from solforge.sandbox.baseline import shipped_problem_names, shipped_records
from solforge.sandbox.evaluate import evaluate

pytestmark = pytest.mark.gpu

PREFERRED = "qwen3_8b_rmsnorm"  # the seed problem; any problem of the table does when it is not there
WORKLOADS = 3


def _gpu() -> tuple[str, str]:
    """This machine's GPU model as the judge names it, and torch's version."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return torch.cuda.get_device_name(0), torch.__version__


def test_a_first_evaluation_with_the_shipped_table_measures_no_baseline(tmp_path: Path) -> None:
    hardware, torch_version = _gpu()
    names = shipped_problem_names(hardware)
    if not names:
        pytest.skip(f"no baseline table ships for {hardware}")
    name = PREFERRED if PREFERRED in names else names[0]
    shipped = {r.workload: r for r in shipped_records(name, hardware)}
    if not any(f"|{torch_version}|" in r.key for r in shipped.values()):
        pytest.skip(f"the {hardware} table was measured with another torch than {torch_version}")
    problem = load_problem(name)
    workloads = [w.uuid for w in problem.workloads if w.uuid in shipped][:WORKLOADS]
    assert len(workloads) == WORKLOADS, f"{name}: the table has {len(shipped)} of its workloads"

    report = evaluate(EvalRequest(problem=name, solution=reference_solution(problem.definition),
                                  options=EvalOptions(device="cuda", workloads=workloads,
                                                      cache_dir=tmp_path / "empty-cache")))

    assert [t.evaluation.status for t in report.traces] == [Status.PASSED] * WORKLOADS, \
        [t.evaluation.log for t in report.traces]
    assert report.baselines == [], "the judge measured baselines the shipped table holds"
    assert "baseline" not in report.phases and "baseline_load" not in report.phases, report.phases
    for trace in report.traces:
        perf = trace.evaluation.performance
        assert perf is not None and perf.baseline_latency_ms == shipped[trace.workload.uuid].baseline_ms
        assert perf.sol_score is not None and 0.0 < perf.sol_score <= 1.0
