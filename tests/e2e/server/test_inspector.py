"""An outside MCP client: the MCP Inspector CLI (v2, Node 22) against ``solforge serve`` over stdio.

``scripts/setup --dev`` installs Node 22 and the Inspector into ``.tools/node22``; without them these
tests skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.server_helpers import ROOT, serve_command

from solforge.tools.testing import RMSNORM

NODE_DIR = ROOT / ".tools" / "node22" / "node_modules"
NODE = NODE_DIR / "node" / "bin" / "node"
INSPECTOR = NODE_DIR / ".bin" / "mcp-inspector"

pytestmark = pytest.mark.skipif(
    not (NODE.exists() and INSPECTOR.exists()),
    reason="MCP Inspector not installed (scripts/setup --dev puts Node 22 and it in .tools/node22)",
)


def inspector(problems: Path, tmp_path: Path, *args: str) -> tuple[int, Any, str]:
    """Run the Inspector CLI against a stdio solforge; return (exit code, parsed stdout, stderr)."""
    env_args: list[str] = []
    for key, value in {
        "SOLFORGE_PROBLEM_DIRS": str(problems),
        "SOLFORGE_ONLY_PROBLEM_DIRS": "1",
        "SOLFORGE_DB": f"sqlite:///{tmp_path / 'ledger.db'}",
        "SOLFORGE_HOME": str(tmp_path / "home"),
    }.items():
        env_args += ["-e", f"{key}={value}"]
    # The server command takes flags, so everything before "--" is the target (mcp.md section 5).
    command = [
        str(INSPECTOR),
        "--cli",
        *serve_command(),
        "--agent",
        "inspector",
        "--no-workers",
        "--",
        *env_args,
        *args,
        "--format",
        "json",
        "-q",
    ]
    env = {
        **os.environ,
        "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "MCP_STORAGE_DIR": str(tmp_path / "inspector"),
    }
    proc = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, out, proc.stderr


def test_inspector_lists_tools_strictly(problems: Path, tmp_path: Path) -> None:
    code, out, err = inspector(problems, tmp_path, "--method", "tools/list", "--strict")
    assert code == 0, err
    names = {t["name"] for t in out["result"]["tools"]}
    assert {"list_problems", "compile_kernel", "run_benchmark", "get_sol_score", "submit_solution"} <= names


def test_inspector_calls_a_tool(problems: Path, tmp_path: Path) -> None:
    code, out, err = inspector(
        problems, tmp_path, "--method", "tools/call", "--tool-name", "list_problems", "--tool-arg", "limit=5"
    )
    assert code == 0, err
    assert out["result"]["structuredContent"]["rows"][0]["name"] == RMSNORM
    code, out, err = inspector(
        problems, tmp_path, "--method", "tools/call", "--tool-name", "get_problem", "--tool-arg", "name=nope"
    )
    assert code == 5 and out["result"]["isError"] is True  # the Inspector's exit code for isError


def test_inspector_reads_a_resource(problems: Path, tmp_path: Path) -> None:
    code, out, err = inspector(
        problems, tmp_path, "--method", "resources/read", "--uri", f"solforge://problems/{RMSNORM}/definition"
    )
    assert code == 0, err
    assert json.loads(out["result"]["contents"][0]["text"])["name"] == RMSNORM


def test_inspector_modern_era(problems: Path, tmp_path: Path) -> None:
    code, out, err = inspector(problems, tmp_path, "--method", "tools/list", "--protocol-era", "modern")
    assert code == 0, err
    assert len(out["result"]["tools"]) == 11
