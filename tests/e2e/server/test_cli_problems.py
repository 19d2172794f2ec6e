"""The command line as a new user meets it: `problems list|show` and `eval` in real subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from solforge.problems import ProblemNotFound, load_problem
from solforge.sandbox.baseline import shipped_by_gpu

DATA = Path(__file__).parents[2] / "data" / "sol_execbench_rmsnorm"
NAME = "rmsnorm_h4096_handwritten"


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "SOLFORGE_PROBLEM_DIRS"}
    full_env.update({"COLUMNS": "80", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "solforge.server.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=full_env,
    )


@pytest.fixture
def problem_dir(tmp_path: Path) -> Path:
    """A SOLFORGE_PROBLEM_DIRS folder holding one problem that is not in the catalogue."""
    root = tmp_path / "my-problems"
    root.mkdir()
    shutil.copytree(DATA, root / NAME, ignore=shutil.ignore_patterns("solution_*.json"))
    return root


def test_show_keeps_square_brackets_and_long_lines() -> None:
    done = _cli("problems", "show", "qwen3_8b_rmsnorm")
    assert done.returncode == 0, done.stderr
    assert "[num_tokens, 4096]" in done.stdout
    description = load_problem("qwen3_8b_rmsnorm").definition.description or ""
    assert description in done.stdout.splitlines()  # one line, not wrapped at 80 columns


def test_show_gives_each_workloads_shipped_baseline_and_says_which_are_launch_bound() -> None:
    problem = load_problem("qwen3_8b_rmsnorm")
    by_tokens = {w.axes["num_tokens"]: w.uuid for w in problem.workloads}
    text = _cli("problems", "show", "qwen3_8b_rmsnorm").stdout.splitlines()
    # One T_b per GPU whose shipped table holds the problem (the H200's and, as the catalogue grows, others),
    # named in the header in that order.
    gpus = sorted(shipped_by_gpu("qwen3_8b_rmsnorm"))
    assert "NVIDIA H200" in gpus
    assert any(line.endswith(f"(T_b shipped for {', '.join(gpus)}):") for line in text)
    one = next(line for line in text if by_tokens[1] in line)
    largest = next(line for line in text if by_tokens[16384] in line)
    assert one.count("T_b") == len(gpus) and one.endswith("launch-bound")
    assert largest.count("T_b") == len(gpus) and "launch-bound" not in largest
    shown = json.loads(_cli("problems", "show", "qwen3_8b_rmsnorm", "--json").stdout)
    assert sorted(shown["shipped_baselines"]) == gpus
    h200 = shown["shipped_baselines"]["NVIDIA H200"]
    assert h200[by_tokens[1]]["launch_bound"] and not h200[by_tokens[16384]]["launch_bound"]
    assert h200[by_tokens[16384]]["baseline_ms"] > 0.005


def test_list_at_80_columns_keeps_whole_names_and_matches_op_type_substrings() -> None:
    done = _cli("problems", "list", "--op-type", "rmsnorm")
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    assert "gemma3_1b_gemma_rmsnorm " in done.stdout
    assert "fused_add_rmsnorm" in done.stdout  # substring match, as list_problems does
    exact = _cli("problems", "list", "--op-type", "rmsnorm", "--json")
    kinds = {json.loads(line)["op_type"] for line in exact.stdout.splitlines()}
    assert {"rmsnorm", "fused_add_rmsnorm"} <= kinds


def test_list_json_into_a_closed_pipe_exits_quietly() -> None:
    cmd = f"{sys.executable} -m solforge.server.cli problems list --json | head -1"
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=120)
    assert len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_problem_dirs_env_reaches_load_problem_list_and_show(
    problem_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOLFORGE_PROBLEM_DIRS", raising=False)
    with pytest.raises(ProblemNotFound):
        load_problem(NAME)
    monkeypatch.setenv("SOLFORGE_PROBLEM_DIRS", os.pathsep.join([str(problem_dir.parent / "absent"), str(problem_dir)]))
    assert load_problem(NAME).folder == problem_dir / NAME
    env = {"SOLFORGE_PROBLEM_DIRS": str(problem_dir)}
    listed = _cli("problems", "list", "--text", "h4096_handwritten", "--json", env=env)
    assert [json.loads(line)["name"] for line in listed.stdout.splitlines()] == [NAME]
    shown = _cli("problems", "show", NAME, env=env)
    assert shown.returncode == 0 and shown.stdout.startswith(NAME), shown.stderr


def test_unknown_name_suggests_its_spelling_neighbour() -> None:
    with pytest.raises(ProblemNotFound) as caught:
        load_problem("qwen3_8b_rmsnrm")
    assert "['qwen3_8b_rmsnorm'" in str(caught.value)


def test_eval_by_env_name_with_path_only_source_on_cpu(problem_dir: Path, tmp_path: Path) -> None:
    solution = json.loads((DATA / "solution_pytorch.json").read_text())
    folder = tmp_path / "sol"
    folder.mkdir()
    (folder / "main.py").write_text(solution["sources"][0]["content"])
    solution["sources"] = [{"path": "main.py"}]
    (folder / "solution.json").write_text(json.dumps(solution))
    done = _cli(
        "eval", NAME, "--solution", str(folder / "solution.json"), "--device", "cpu",
        "--rounds", "1", "--iterations", "2", "--warmup", "0", "--no-baseline", "--cache-dir", str(tmp_path / "c"),
        env={"SOLFORGE_PROBLEM_DIRS": str(problem_dir)}, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = done.stderr + done.stdout
    assert "(pytorch, cpu," in out and "sm_" not in out
    uuids = [json.loads(line)["uuid"] for line in (problem_dir / NAME / "workload.jsonl").read_text().splitlines()]
    assert all(u in out for u in uuids)
    assert "PASSED" in out and "…" not in out and "T_SOL" not in out


def test_serve_http_on_a_busy_port_says_so_before_serving(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = _cli("serve", "--http", f"127.0.0.1:{port}", "--no-workers", "--db", f"sqlite:///{tmp_path}/l.db")
    assert done.returncode == 2
    assert f"port {port} is in use" in done.stderr and "serving MCP" not in done.stderr


def test_http_server_with_tokens_sets_validate_token_resource() -> None:
    from solforge.server.app import create_server
    from solforge.server.auth import SolforgeTokenVerifier
    from solforge.tools.base import ToolServices, ToolSettings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mcp = create_server(
            ToolServices(ToolSettings()),
            token_verifier=SolforgeTokenVerifier({"tok": "alice"}),
            public_url="http://127.0.0.1:9",
        )
    assert mcp is not None
