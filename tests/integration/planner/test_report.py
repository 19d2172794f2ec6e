"""``solforge report``: a real ledger filled through the real queue, the real CLI, the HTML parsed back."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from solforge.planner import JobResult, JobSpec, Ledger, Worker, WorkerConfig
from solforge.planner.report import ReportError, gather, parse_since, render_html
from solforge.planner.testing import fake_request, fake_solution
from solforge.sandbox.api import BuildReport, EvalReport
from solforge.server.cli import main as cli_main

HOSTILE_PROBLEM = "<script>alert(1)</script>"
HOSTILE_AGENT = "<img src=x onerror=alert(2)>"

# (problem, agent, kind, behaviour): every job runs through the queue on a real worker.
JOBS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("gemm_bf16", "alice", "compile", {}),
    ("gemm_bf16", "alice", "benchmark", {"score": 0.5, "speedup": 1.0}),
    ("gemm_bf16", "alice", "submit", {"score": 0.55, "speedup": 1.2}),
    ("gemm_bf16", "bob", "submit", {"score": 0.71, "speedup": 2.6, "workloads": 2}),
    ("rmsnorm", "alice", "submit", {"score": 0.40, "speedup": 0.8}),
    ("attention", "bob", "submit", {"score": 0.62, "speedup": 1.5}),
    ("attention", "alice", "submit", {"score": 0.62, "speedup": 1.4}),
    (HOSTILE_PROBLEM, "alice", "submit", {"score": 0.9, "speedup": 3.2}),
    ("broken", "bob", "submit", {"status": "INCORRECT_NUMERICAL"}),
    ("bench_only", "alice", "benchmark", {"score": 0.3, "speedup": 0.9}),
]
# The best submission per problem by hand (score, then speedup): problem -> (agent, score, speedup).
EXPECTED_BEST: dict[str, tuple[str, float, float | None]] = {
    "gemm_bf16": ("bob", 0.71, 2.6),
    "rmsnorm": ("alice", 0.40, 0.8),
    "attention": ("bob", 0.62, 1.5),
    HOSTILE_PROBLEM: ("alice", 0.9, 3.2),
}
# "broken" has only a rejected submission (a workload failed): attempted, but no best, as on the leaderboard.
BASELINE_MS = 2.0
T_SOL_MS = 0.5


class ScriptedRunner:
    """Finishes each job in-process with the score and speedup its solution's description asks for.

    Unlike the fake subprocess, its traces carry the baseline and speed-of-light times the report shows.
    """

    def run(self, job: JobSpec, heartbeat: Any, cancel: threading.Event) -> JobResult:
        if job.kind == "compile":
            return JobResult.done(BuildReport(ok=True, language="pytorch"))
        spec = json.loads(job.request.solution.description or "{}")
        status = spec.get("status", "PASSED")
        traces = []
        for w in range(int(spec.get("workloads", 1))):
            evaluation: dict[str, Any] = {"status": status, "environment": {"hardware": "NVIDIA H200"}}
            if status == "PASSED":
                speedup = float(spec["speedup"])
                evaluation["correctness"] = {"rounds": 1}
                evaluation["performance"] = {
                    "latency_ms": BASELINE_MS / speedup,
                    "baseline_latency_ms": BASELINE_MS,
                    "sol_latency_ms": T_SOL_MS,
                    "sol_score": float(spec["score"]),
                    "speedup": speedup,
                    "timer": "cuda_events",
                }
            else:
                evaluation["log"] = "wrong answer"
            traces.append(
                {
                    "definition": job.problem,
                    "solution": job.request.solution.name,
                    "workload": {"uuid": f"w{w}", "axes": {}},
                    "evaluation": evaluation,
                }
            )
        return JobResult.done(
            EvalReport.model_validate(
                {
                    "problem": job.problem,
                    "solution": job.request.solution.name,
                    "device": "cuda:0",
                    "traces": traces,
                }
            )
        )


def fill(ledger: Ledger) -> None:
    """Run JOBS through a real worker, then import one submission by an agent with a hostile name."""
    for agent in ("alice", "bob"):
        ledger.ensure_agent(agent)
    config = WorkerConfig(
        lease_s=5.0, heartbeat_s=0.5, poll_s=0.02, retry_backoff_s=0.0, health_interval_s=3600
    )
    with Worker(ledger, ScriptedRunner(), cpu_slots=2, compile_slots=1, config=config):
        ids = [
            (agent, ledger.enqueue(agent, kind, fake_request(problem, name=f"{agent}-{i}", **behaviour)).id)
            for i, (problem, agent, kind, behaviour) in enumerate(JOBS)
        ]
        for agent, job_id in ids:
            assert ledger.wait_job(job_id, agent, timeout_s=60).status == "done"
    # A ledger written by another tool may hold any name: the report must escape it all the same.
    with ledger.connector.engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(
            text("INSERT INTO agent (name, created_at, disabled) VALUES (:n, 0, false)"), {"n": HOSTILE_AGENT}
        )
    report = EvalReport.model_validate(
        {
            "problem": "rmsnorm",
            "solution": "imported",
            "device": "cuda:0",
            "traces": [
                {
                    "definition": "rmsnorm",
                    "solution": "imported",
                    "workload": {"uuid": "w0", "axes": {}},
                    "evaluation": {
                        "status": "PASSED",
                        "correctness": {"rounds": 1},
                        "performance": {
                            "latency_ms": 4.0,
                            "sol_score": 0.3,
                            "speedup": 0.5,
                            "timer": "cuda_events",
                        },
                        "environment": {"hardware": "NVIDIA H200"},
                    },
                }
            ],
        }
    )
    ledger.record_submission(HOSTILE_AGENT, report, fake_solution("imported", definition="rmsnorm"))


class Page(HTMLParser):
    """The parts of the report the tests read: cards, tags, svg elements, table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.cards: dict[str, str] = {}
        self.tags: list[str] = []
        self.svgs = 0
        self.titles: list[str] = []
        self.rows: list[list[str]] = []
        self._in_title = False
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "div" and a.get("class") == "card":
            self.cards[str(a["data-field"])] = str(a["data-value"])
        self.svgs += tag == "svg"
        self._in_title = tag == "title"
        if tag == "tr":
            self._row = []
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        self._in_title = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_title:
            self.titles.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(path: Path) -> tuple[str, Page]:
    html = path.read_text(encoding="utf-8")
    page = Page()
    page.feed(html)
    return html, page


def check_report(url: str, out: Path) -> tuple[str, Page]:
    """Run ``solforge report`` and check the headline against numbers computed here from EXPECTED_BEST."""
    assert cli_main(["report", "--db", url, "--out", str(out), "--catalogue", "none"]) == 0
    html, page = parse(out)
    speedups = [s for _, _, s in EXPECTED_BEST.values() if s is not None]
    scores = [score for _, score, _ in EXPECTED_BEST.values()]
    cards = page.cards
    assert int(cards["problems_attempted"]) == len({p for p, *_ in JOBS}) == 6
    assert math.isclose(float(cards["geomean_speedup"]), statistics.geometric_mean(speedups), rel_tol=1e-9)
    assert int(cards["problems_beating_baseline"]) == sum(s > 1 for s in speedups) == 3
    assert int(cards["problems_above_2x"]) == sum(s > 2 for s in speedups) == 2
    assert math.isclose(float(cards["median_sol_score"]), statistics.median(scores), rel_tol=1e-9)
    assert int(cards["agents"]) == 3
    assert int(cards["submissions"]) == sum(k == "submit" for _, _, k, _ in JOBS) + 1
    assert int(cards["jobs"]) == len(JOBS)
    assert float(cards["cpu_slot_hours"]) > 0  # the worker's slots are CPU slots: no GPU-hours
    assert float(cards["gpu_hours"]) == 0
    # Plots: two histograms, best score over time, utilisation, queue depth and wait.
    assert page.svgs == 6
    assert "speedup distribution" in page.titles and "slot utilisation over time" in page.titles
    assert {"gemm_bf16", "attention", HOSTILE_PROBLEM} <= set(page.titles)  # one line per problem
    # The per-problem table: best agent, score, speedup, and the baseline / T_SOL from the runs.
    by_problem = {r[0]: r for r in page.rows if len(r) == 12}
    for problem, (agent, score, speedup) in EXPECTED_BEST.items():
        row = by_problem[problem]
        assert row[1] == agent and float(row[2]) == pytest.approx(score, abs=5e-4)
        assert row[3] == (f"{speedup:.2f}x" if speedup is not None else "–")
    assert float(by_problem["gemm_bf16"][5]) == BASELINE_MS and float(by_problem["gemm_bf16"][6]) == T_SOL_MS
    assert (
        by_problem["gemm_bf16"][7] == "2/2" and by_problem["gemm_bf16"][8] == "3"
    )  # attempts: bench + 2 submits
    assert by_problem["bench_only"][2] == "–"
    assert by_problem["broken"][1:3] == ["–", "–"] and by_problem["broken"][10] == "1"
    # Hostile names are shown as text, never as markup.
    assert HOSTILE_PROBLEM not in html and HOSTILE_AGENT not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "script" not in page.tags and "img" not in page.tags
    assert HOSTILE_AGENT in {r[0] for r in page.rows}
    # Self-contained: nothing is fetched.
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    return html, page


def test_report_of_a_filled_ledger(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger.open(url) as ledger:
        fill(ledger)
        data = gather(ledger)
        # The report's best per problem agrees with the ledger's own query.
        assert {s.problem: s.agent for s in ledger.best_per_problem()} == {
            p.problem: p.best_agent for p in data.problems if p.best_agent
        }
    check_report(url, tmp_path / "report.html")


@pytest.mark.postgres
def test_report_on_postgres(pg_url: str, tmp_path: Path) -> None:
    with Ledger.open(pg_url) as ledger:
        fill(ledger)
    check_report(pg_url, tmp_path / "report.html")


def test_empty_ledger_gives_a_clear_report(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    Ledger.open(f"sqlite:///{db}").close()
    out = tmp_path / "out" / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "solforge.server.cli", "report", "--db", str(db), "--out", str(out), "--catalogue",
         "none"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "0 problems attempted" in proc.stderr
    html, page = parse(out)
    assert "no activity in the window" in html
    assert page.cards["problems_attempted"] == "0" and page.cards["geomean_speedup"] == "None"
    assert page.svgs == 6 and "no data in this window" in "".join(page.text)


def test_missing_ledger_is_a_usage_error_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope" / "ledger.db"
    assert cli_main(["report", "--db", str(missing), "--out", str(tmp_path / "r.html")]) == 2
    assert "no ledger at" in capsys.readouterr().err
    assert not missing.exists() and not (tmp_path / "r.html").exists()


def test_since_window_and_its_parsing(tmp_path: Path) -> None:
    now = 1_800_000_000.0
    assert parse_since("90m", now) == now - 5400
    assert parse_since("2d", now) == now - 2 * 86400
    assert parse_since("2027-01-15T08:00:00", now) == datetime(2027, 1, 15, 8, tzinfo=UTC).timestamp()
    assert parse_since("2027-01-15T08:00:00+00:00", now) == parse_since("2027-01-15T08:00:00", now)
    with pytest.raises(ReportError, match="neither a duration"):
        parse_since("yesterday", now)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger.open(url) as ledger:
        ledger.ensure_agent("alice")
        ledger.enqueue("alice", "benchmark", fake_request("old_problem"))
        time.sleep(0.05)
        cut = ledger.now()
        ledger.enqueue("alice", "benchmark", fake_request("new_problem"))
        assert [p.problem for p in gather(ledger, since=cut).problems] == ["new_problem"]
        assert gather(ledger, since=cut).headline.problems_attempted == 1
        assert gather(ledger).queue[-1].slot_depth > 0  # both still queued (no worker)
    out = tmp_path / "r.html"
    assert cli_main(["report", "--db", url, "--out", str(out), "--since", "1h"]) == 0
    assert parse(out)[1].cards["problems_attempted"] == "2"
    assert cli_main(["report", "--db", url, "--out", str(out), "--run", "r1"]) == 2


def test_run_window_comes_from_the_swarm_run(tmp_path: Path) -> None:
    from solforge.planner.report.gather import resolve_run_window
    from solforge.planner.swarm import SwarmStore

    ledger = Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        with pytest.raises(ReportError, match="no swarm run 'nope'"):
            resolve_run_window(ledger, "nope")
        store = SwarmStore(ledger)
        run = store.create_run("r1", {}, pid=1, host="h")
        since, until = resolve_run_window(ledger, "r1")
        assert since == pytest.approx(run.created_at) and until is None
        store.finalize("r1", "finished", reason="test")
        since, until = resolve_run_window(ledger, "r1")
        assert until is not None and until >= since
    finally:
        ledger.close()


def test_the_catalogue_section_draws_the_shipped_baselines_against_sol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default the report adds the H200 table's baselines against T_SOL: a histogram, a spread, two tables."""
    from solforge.problems.load import tables_dir
    from solforge.sandbox.sol.catalogue import catalogue_sol

    shipped = (tables_dir() / "nvidia-h200.jsonl").read_text().splitlines()
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "nvidia-h200.jsonl").write_text(
        "\n".join(line for line in shipped if json.loads(line)["problem"] == "deepseek_r1_rmsnorm") + "\n"
    )
    monkeypatch.setenv("SOLFORGE_BASELINE_TABLES", str(tables))
    monkeypatch.setenv("SOLFORGE_CACHE", str(tmp_path / "cache"))
    db = tmp_path / "ledger.db"
    Ledger.open(f"sqlite:///{db}").close()
    out = tmp_path / "report.html"
    assert cli_main(["report", "--db", str(db), "--out", str(out)]) == 0
    html, page = parse(out)
    assert page.svgs == 8  # the six ledger plots, then the catalogue's histogram and spread
    assert "baseline distance from SOL" in page.titles and "T_SOL / T_b by category" in page.titles
    expected = catalogue_sol("H200", tables_dir=tables, cache_dir=tmp_path / "cache")
    assert expected is not None and len(expected.workloads) == 15
    overall = expected.overall()
    assert overall is not None
    rows = {r[0]: r for r in page.rows if len(r) == 8}
    assert rows["memory"][1:3] == ["1", "15"] and rows["llm"][1:3] == ["1", "15"]
    assert float(rows["llm"][3]) == pytest.approx(overall.median, abs=5e-4)
    assert f"Median {overall.median:.3f}" in html
    bars = [t for t in page.titles if t.startswith("memory: ")]
    assert sum(int(t.rsplit(": ", 1)[1]) for t in bars) == 15  # every workload is in one bin
    # Leaving it out, and a GPU with no table: a note, no section.
    assert cli_main(["report", "--db", str(db), "--out", str(out), "--catalogue", "B200"]) == 0
    html, page = parse(out)
    assert page.svgs == 6 and "no baseline table ships for 'B200'" in "".join(page.text)


def test_the_scaling_section_plots_evaluations_per_hour_by_slots(tmp_path: Path) -> None:
    from solforge.planner.report.models import ScalingPoint

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger.open(url) as ledger:
        fill(ledger)
        data = gather(ledger)

    def point(run: str, slots: int, per_hour: float) -> ScalingPoint:
        return ScalingPoint(run=run, slots=slots, agents=8 * slots, minutes=10.0, evaluations=int(per_hour / 6),
                            evaluations_per_gpu_hour=per_hour / slots, lease_utilisation=0.9, queue_wait_p95_s=4.0)

    assert "<h2>Scaling across GPUs</h2>" not in render_html(data)  # only when asked for
    scaled = render_html(data.model_copy(update={"scaling": [point("a", 1, 300.0), point("b", 2, 560.0),
                                                              point("c", 4, 1000.0)]}))
    assert "<h2>Scaling across GPUs</h2>" in scaled
    assert "perfect scaling from 1 slot" in scaled and "measured (mean of the runs)" in scaled
    assert scaled.count("<path") > render_html(data).count("<path")  # the chart's two lines
    one = render_html(data.model_copy(update={"scaling": [point("a", 1, 300.0)]}))
    assert "One slot count only" in one
    none = render_html(data.model_copy(update={"scaling": []}))
    assert "No finished swarm run held a lease" in none
    # `solforge report --scaling` on a ledger without swarm runs says how to get the points
    out = tmp_path / "scaling.html"
    assert cli_main(["report", "--db", url, "--out", str(out), "--catalogue", "none", "--scaling"]) == 0
    assert "No finished swarm run held a lease" in out.read_text()
