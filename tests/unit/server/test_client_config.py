"""``solforge init claude|cursor``: the files written, merged with what is there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solforge.server.client_config import init_client, solforge_command


@pytest.fixture(autouse=True)
def claude_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Claude Code's per-user file goes to a folder of the test's own, never the real ~/.claude.json."""
    home = tmp_path_factory.mktemp("claude-home")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    return home


def test_claude_stdio(tmp_path: Path, claude_home: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    (claude_home / ".claude.json").write_text(json.dumps({"userID": "u", "projects": {"/elsewhere": {"x": 1}}}))
    written = init_client("claude", tmp_path, http=None)
    assert written == [tmp_path / ".mcp.json", tmp_path / ".claude" / "settings.local.json",
                       claude_home / ".claude.json"]
    user = json.loads((claude_home / ".claude.json").read_text())
    assert user["userID"] == "u" and user["projects"]["/elsewhere"] == {"x": 1}  # kept
    assert user["projects"][str(tmp_path.resolve())]["hasTrustDialogAccepted"] is True
    assert (claude_home / ".claude.json").stat().st_mode & 0o077 == 0
    assert init_client("claude", tmp_path / "other", http=None, trust=False)[-1].name == "settings.local.json"
    servers = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"other", "solforge"}
    entry = servers["solforge"]
    assert entry["type"] == "stdio" and Path(entry["command"]).is_absolute()
    assert entry["args"][-3:] == ["serve", "--agent", "claude"] and entry["timeout"] >= 60_000
    assert entry["command"] == solforge_command()[0]
    settings = json.loads((tmp_path / ".claude" / "settings.local.json").read_text())
    assert settings["enabledMcpjsonServers"] == ["solforge"]
    assert (
        int(settings["env"]["MCP_TIMEOUT"]) >= 10_000 and int(settings["env"]["MCP_TOOL_TIMEOUT"]) >= 60_000
    )
    init_client("claude", tmp_path, http=None)  # idempotent
    assert json.loads((tmp_path / ".claude" / "settings.local.json").read_text())[
        "enabledMcpjsonServers"
    ] == ["solforge"]


def test_claude_and_cursor_http(tmp_path: Path) -> None:
    init_client("claude", tmp_path, http="127.0.0.1:8765")
    entry = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["solforge"]
    assert entry == {
        "type": "http",
        "url": "http://127.0.0.1:8765/mcp",
        "headers": {"Authorization": "Bearer ${SOLFORGE_TOKEN}"},
        "timeout": entry["timeout"],
    }
    (written,) = init_client("cursor", tmp_path, http="http://gpu-box:9000/")
    assert written == tmp_path / ".cursor" / "mcp.json"
    cursor = json.loads(written.read_text())["mcpServers"]["solforge"]
    assert cursor == {
        "url": "http://gpu-box:9000/mcp",
        "headers": {"Authorization": "Bearer ${env:SOLFORGE_TOKEN}"},
    }


def test_cursor_stdio_and_bad_files(tmp_path: Path) -> None:
    (path,) = init_client("cursor", tmp_path, http=None)
    entry = json.loads(path.read_text())["mcpServers"]["solforge"]
    assert entry["type"] == "stdio" and entry["args"][-3:] == ["serve", "--agent", "cursor"]
    path.write_text("{broken")
    with pytest.raises(ValueError, match="not valid JSON"):
        init_client("cursor", tmp_path, http=None)
    with pytest.raises(ValueError, match="unknown client"):
        init_client("vscode", tmp_path, http=None)  # type: ignore[arg-type]


def test_http_config_warns_when_the_token_variable_is_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SOLFORGE_TOKEN", raising=False)
    init_client("claude", tmp_path, http="127.0.0.1:8765")
    assert "SOLFORGE_TOKEN is not set" in capsys.readouterr().err
    monkeypatch.setenv("SOLFORGE_TOKEN", "t0k")
    init_client("cursor", tmp_path, http="127.0.0.1:8765")
    assert capsys.readouterr().err == ""
