"""``solforge init claude|cursor``: write the MCP client configuration for this machine.

Claude Code reads ``.mcp.json`` (project scope), ``.claude/settings.local.json`` and, for the folder's
trust, ``~/.claude.json``; Cursor reads
``.cursor/mcp.json``. Each file is merged, not overwritten: other servers and settings are kept, and
only the ``solforge`` entry is replaced. Paths are absolute (this virtual environment's
``solforge``), so the files are for this machine; HTTP entries read the bearer token from the
``SOLFORGE_TOKEN`` environment variable instead of storing it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Literal

from solforge.problems import config
from solforge.problems.files import write_text_atomic

SERVER_NAME = "solforge"
TOOL_TIMEOUT_MS = 180_000
"""Claude Code's per-call wall clock for solforge tools. Tools return within ~55 s (they hand back a
job_id rather than block), so this is slack; it also lifts Claude Code's 60 s HTTP fetch budget."""
STARTUP_TIMEOUT_MS = 30_000
"""MCP_TIMEOUT: how long Claude Code waits for the server to start (it starts in about a second)."""


def solforge_command() -> list[str]:
    """The command that starts this installation's solforge: the venv's script, else ``python -m``."""
    script = Path(sys.executable).parent / "solforge"
    if script.is_file():
        return [str(script.absolute())]
    found = shutil.which("solforge")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "solforge.server.cli"]


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}); fix or remove it and rerun"
        ) from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object; fix or remove it and rerun")
    return data


def _write_json(path: Path, data: dict[str, Any]) -> Path:
    return write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def _entry(client: Literal["claude", "cursor"], http: str | None) -> dict[str, Any]:
    if http is not None:
        url = http if http.startswith(("http://", "https://")) else f"http://{http}"
        url = url.rstrip("/")
        if not url.endswith("/mcp"):
            url += "/mcp"
        if client == "claude":
            return {
                "type": "http",
                "url": url,
                "headers": {"Authorization": "Bearer ${SOLFORGE_TOKEN}"},
                "timeout": TOOL_TIMEOUT_MS,
            }
        return {"url": url, "headers": {"Authorization": "Bearer ${env:SOLFORGE_TOKEN}"}}
    command = solforge_command()
    entry: dict[str, Any] = {
        "type": "stdio",
        "command": command[0],
        "args": [*command[1:], "serve", "--agent", client],
        "env": {},
    }
    if client == "claude":
        entry["timeout"] = TOOL_TIMEOUT_MS
    return entry


def claude_user_config() -> Path:
    """Claude Code's own per-user file (projects, trust): ``$CLAUDE_CONFIG_DIR/.claude.json`` or ``~/.claude.json``."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home()) / ".claude.json"


def trust_for_claude(target_dir: Path) -> Path:
    """Record ``target_dir`` as trusted in Claude Code's per-user file (its workspace-trust answer).

    Claude Code counts a project's ``.claude/settings.local.json`` (and so its approval of a
    ``.mcp.json`` server) only in a trusted folder, or in a git repository that does not track that
    file; elsewhere ``claude mcp list`` shows the server "Pending approval" and a headless agent is
    refused it. Everything else in the file is kept; it stays readable by its owner only.
    """
    path = claude_user_config()
    data = _read_json(path)
    projects = data.setdefault("projects", {})
    key = str(Path(target_dir).resolve())
    entry = projects.setdefault(key, {})
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: projects[{key!r}] is not an object; fix or remove it and rerun")
    entry["hasTrustDialogAccepted"] = True
    _write_json(path, data)
    with contextlib.suppress(OSError):
        path.chmod(0o600)
    return path


def init_client(client: Literal["claude", "cursor"], target_dir: Path, *, http: str | None,
                trust: bool = True) -> list[Path]:
    """Write (merge) the MCP configuration of ``client`` into ``target_dir``.

    Parameters
    ----------
    client
        ``claude`` (Claude Code) or ``cursor``.
    target_dir
        The project folder the client opens.
    http
        ``HOST:PORT`` (or a URL) of a running ``solforge serve --http`` to connect to; None starts
        solforge over stdio from the client.
    trust
        Claude Code only: record the folder as trusted in Claude Code's per-user file, without which
        its approval of the server does not count outside a git repository (:func:`trust_for_claude`).

    Returns
    -------
    list[Path]
        The files written.

    Raises
    ------
    ValueError
        For an unknown client, or an existing file that is not a JSON object.
    """
    if client not in ("claude", "cursor"):
        raise ValueError(f"unknown client {client!r}; use claude or cursor")
    if http is not None and not config.token():
        # The file names ${SOLFORGE_TOKEN}; the client expands it where it starts, not here.
        print(
            "warning: SOLFORGE_TOKEN is not set in this shell; the config sends 'Bearer ${SOLFORGE_TOKEN}', "
            "so export SOLFORGE_TOKEN where Claude Code or Cursor start (unless the server needs no token)",
            file=sys.stderr,
        )
    target_dir = Path(target_dir).absolute()
    written: list[Path] = []
    if client == "claude":
        path = target_dir / ".mcp.json"
        data = _read_json(path)
        data.setdefault("mcpServers", {})[SERVER_NAME] = _entry("claude", http)
        written.append(_write_json(path, data))
        # Approve the project server without a prompt, and give MCP the start-up and call timeouts.
        settings_path = target_dir / ".claude" / "settings.local.json"
        settings = _read_json(settings_path)
        enabled = settings.setdefault("enabledMcpjsonServers", [])
        if SERVER_NAME not in enabled:
            enabled.append(SERVER_NAME)
        env = settings.setdefault("env", {})
        env.setdefault("MCP_TIMEOUT", str(STARTUP_TIMEOUT_MS))
        env.setdefault("MCP_TOOL_TIMEOUT", str(TOOL_TIMEOUT_MS))
        written.append(_write_json(settings_path, settings))
        if trust:
            written.append(trust_for_claude(target_dir))
    else:
        path = target_dir / ".cursor" / "mcp.json"
        data = _read_json(path)
        data.setdefault("mcpServers", {})[SERVER_NAME] = _entry("cursor", http)
        written.append(_write_json(path, data))
    return written
