"""Claude Code's own CLI as an outside client: the configuration ``solforge init claude`` writes is
approved and connected as Claude Code reports it (``claude mcp list`` / ``get`` run a real MCP
handshake with the server), over stdio and over HTTP with a bearer token.

The CLI is installed by ``scripts/setup --dev`` into ``.tools/claude``; without it these tests skip.
No model is called.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from support.server_helpers import ROOT, free_port, serve_command, wait_healthy

CLAUDE = ROOT / ".tools" / "claude" / "node_modules" / ".bin" / "claude"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CLAUDE.exists(), reason="Claude Code's CLI is not installed (scripts/setup --dev)")]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update({"HOME": str(home), "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "SOLFORGE_HOME": str(home / "solforge"), **extra})
    return env


def _solforge(*args: str, env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "solforge.server.cli", *args], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr


def _claude(*args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([str(CLAUDE), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)
    return done.stdout + done.stderr


def test_an_initialised_folder_is_approved_and_connected_over_stdio(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "kernels"
    home.mkdir()
    project.mkdir()
    env = _env(home)
    _solforge("init", "claude", "--dir", str(project), env=env)
    listed = _claude("mcp", "list", cwd=project, env=env)
    assert "solforge:" in listed and "Connected" in listed and "Pending approval" not in listed, listed
    got = _claude("mcp", "get", "solforge", cwd=project, env=env)
    assert "Status: ✔ Connected" in got and "serve --agent claude" in got, got


def test_without_the_folders_trust_claude_code_asks_first(tmp_path: Path) -> None:
    """What an approval needs, shown: outside a git repository the settings alone do not count."""
    home, project = tmp_path / "home", tmp_path / "kernels"
    home.mkdir()
    project.mkdir()
    env = _env(home)
    _solforge("init", "claude", "--dir", str(project), "--no-trust", env=env)
    assert "Pending approval" in _claude("mcp", "list", cwd=project, env=env)


def test_an_http_server_with_a_token_is_connected(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "kernels"
    home.mkdir()
    project.mkdir()
    token = secrets.token_hex(16)
    env = _env(home, SOLFORGE_TOKEN=token)
    port = free_port()
    server = subprocess.Popen([*serve_command(), "--http", f"127.0.0.1:{port}", "--agent", "alice", "--token", token,
                               "--no-workers"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health", server)
        _solforge("init", "claude", "--dir", str(project), "--http", f"127.0.0.1:{port}", env=env)
        listed = _claude("mcp", "list", cwd=project, env=env)
        assert "solforge:" in listed and "Connected" in listed, listed
        wrong = _claude("mcp", "list", cwd=project, env={**env, "SOLFORGE_TOKEN": "not-the-token"})
        assert "Connected" not in wrong.split("solforge:", 1)[-1].splitlines()[0], wrong
    finally:
        server.terminate()
        server.wait(20)
