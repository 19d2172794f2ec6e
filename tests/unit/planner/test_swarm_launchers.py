"""Launchers up to the command line and the files they write (claude and cursor are not installed here)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from solforge.planner.swarm.config import LauncherConfig
from solforge.planner.swarm.launchers import SOLFORGE_TOOLS, Assignment, build_launch
from solforge.tools.registry import all_tools

URL = "http://127.0.0.1:8765/mcp"
TOKEN = "tok-secret-123"


def _assignment(tmp_path: Path) -> Assignment:
    return Assignment(
        agent="swarm-r1-03",
        index=3,
        token=TOKEN,
        url=URL,
        problem="qwen3_8b_rmsnorm",
        workspace=tmp_path / "ws",
        best_score=0.42,
        target_score=0.9,
        previous=("llama3_1_8b_rope",),
    )


def test_the_tool_list_matches_the_server() -> None:
    assert set(SOLFORGE_TOOLS) == {spec.name for spec in all_tools()}


def test_claude_command_line_and_mcp_config(tmp_path: Path) -> None:
    a = _assignment(tmp_path)
    cfg = LauncherConfig(kind="claude", model="opus", max_turns=40, extra_args=["--bare"])
    launch = build_launch(a, cfg, protocol="# PROTO")
    argv = launch.argv
    assert argv[:2] == ["claude", "-p"]
    prompt = argv[2]
    assert prompt.startswith("# PROTO") and "qwen3_8b_rmsnorm" in prompt and "0.420" in prompt
    assert "llama3_1_8b_rope" in prompt and TOKEN not in prompt
    mcp_file = Path(argv[argv.index("--mcp-config") + 1])
    assert "--strict-mcp-config" in argv
    config = json.loads(mcp_file.read_text())
    entry = config["mcpServers"]["solforge"]
    assert entry == {
        "type": "http",
        "url": URL,
        "headers": {"Authorization": "Bearer ${SOLFORGE_TOKEN}"},
        "timeout": 180000,
    }
    assert TOKEN not in mcp_file.read_text()
    allowed = argv[argv.index("--allowedTools") + 1 : argv.index("--permission-mode")]
    assert {f"mcp__solforge__{t}" for t in SOLFORGE_TOOLS} <= set(allowed) and "Write" in allowed
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert argv[argv.index("--output-format") + 1] == "stream-json" and "--verbose" in argv
    assert argv[argv.index("--max-turns") + 1] == "40" and argv[argv.index("--model") + 1] == "opus"
    assert argv[-1] == "--bare" and "--append-system-prompt" in argv
    assert launch.env["SOLFORGE_TOKEN"] == TOKEN and launch.env["MCP_TOOL_TIMEOUT"] == "180000"
    assert launch.cwd == a.workspace and (a.workspace / "prompt.md").read_text() == prompt


def test_cursor_command_line_and_workspace_files(tmp_path: Path) -> None:
    a = _assignment(tmp_path)
    launch = build_launch(a, LauncherConfig(kind="cursor", binary="agent", model="gpt-5"), protocol="# P")
    argv = launch.argv
    assert argv[:2] == ["agent", "-p"] and {"--force", "--approve-mcps", "--trust"} <= set(argv)
    assert argv[argv.index("--workspace") + 1] == str(a.workspace)
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert argv[-1].startswith("# P") and "qwen3_8b_rmsnorm" in argv[-1]
    mcp = json.loads((a.workspace / ".cursor" / "mcp.json").read_text())
    assert mcp == {
        "mcpServers": {"solforge": {"url": URL, "headers": {"Authorization": "Bearer ${env:SOLFORGE_TOKEN}"}}}
    }
    cli = json.loads((a.workspace / ".cursor" / "cli.json").read_text())
    assert "Mcp(solforge, *)" in cli["permissions"]["allow"]
    assert launch.env["SOLFORGE_TOKEN"] == TOKEN and launch.env["SOLFORGE_URL"] == URL


def test_command_template_placeholders_and_environment(tmp_path: Path) -> None:
    a = _assignment(tmp_path)
    template = "{python} agent.py --url {url} --token {token} --p {problem} --ws {workspace} --prompt {prompt_file} --a {agent} --i {index} --best {best_score} --goal {target_score}"
    launch = build_launch(a, LauncherConfig(kind="command", command=template))
    args = dict(zip(launch.argv[2::2], launch.argv[3::2], strict=True))
    assert launch.argv[0] == sys.executable
    assert args == {
        "--url": URL,
        "--token": TOKEN,
        "--p": "qwen3_8b_rmsnorm",
        "--ws": str(a.workspace),
        "--prompt": str(a.workspace / "prompt.md"),
        "--a": "swarm-r1-03",
        "--i": "3",
        "--best": "0.420000",
        "--goal": "0.900000",
    }
    env = launch.env
    assert (env["SOLFORGE_URL"], env["SOLFORGE_TOKEN"], env["SOLFORGE_PROBLEM"]) == (
        URL,
        TOKEN,
        "qwen3_8b_rmsnorm",
    )
    assert env["SOLFORGE_WORKSPACE"] == str(a.workspace) and env["SOLFORGE_AGENT_INDEX"] == "3"
    assert Path(env["SOLFORGE_PROMPT_FILE"]).read_text().count("# Your assignment") == 1


def test_bad_templates_say_what_is_allowed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\{workspace\}"):
        build_launch(_assignment(tmp_path), LauncherConfig(kind="command", command="run {nope}"))
    with pytest.raises(ValueError, match="needs a command template"):
        LauncherConfig(kind="command")
    quoted = build_launch(
        _assignment(tmp_path), LauncherConfig(kind="command", command="sh -c 'echo {problem}'")
    )
    assert quoted.argv == ["sh", "-c", "echo qwen3_8b_rmsnorm"] and shlex.join(quoted.argv)
