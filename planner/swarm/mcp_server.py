"""The MCP server a swarm run starts for its agents: its address, command line and environment, and the
wait until it answers.

Separate from :mod:`.runner`, whose loop only starts the server and restarts it when it exits: how
that child is built and reached is one job, checked by itself (``--http``, the ledger it is handed).
"""

from __future__ import annotations

import os
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from ..ledger import Ledger
from .config import SwarmConfig
from .problems import server_problem_env
from .processes import ChildProcess
from .runs import SwarmError

__all__ = ["HEALTH_WAIT_S", "server_command", "start_server", "wait_healthy"]

HEALTH_WAIT_S = 90.0
"""How long the MCP server may take to answer /health after it starts."""


def start_server(ledger: Ledger, config: SwarmConfig, run_id: str, *, url: str = "") -> tuple[ChildProcess, str]:
    """Start ``solforge serve --http`` on the run's ledger (tokens required: the agents hold them);
    returns the process and its base URL, for :func:`wait_healthy`. ``url``: the MCP URL of the server
    it replaces, whose port a restart keeps since the agents know it.

    Raises SwarmError when ``--http`` does not parse.
    """
    host, port = _split_http(config.http)
    if url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
    elif port == 0:
        port = _free_port(host)
    argv, env = server_command(ledger, config, host, port)
    run_dir = Path(config.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    server = ChildProcess(argv, env, run_dir, run_dir / "server.log")
    server.start(f"solforge serve for swarm {run_id}")
    return server, f"http://{'[' + host + ']' if ':' in host else host}:{port}"


def server_command(ledger: Ledger, config: SwarmConfig, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    """The MCP server's command line and environment.

    The server runs in the run folder, so it is handed the URL of the ledger this planner opened
    (absolute, resolved once), never ``config.db`` as typed: a relative ``--db ledger.db`` would
    open a second, empty ledger there. It goes in the environment to keep passwords out of ``ps``.
    """
    argv = [*_solforge_argv(), "serve", "--http", f"{host}:{port}", "--no-workers"]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SOLFORGE_TOKEN", "SOLFORGE_TOKENS", "SOLFORGE_AGENT")
    }
    env.update(server_problem_env(config.problem_filter))
    env["SOLFORGE_DB"] = ledger.resolved.shareable
    return argv, env


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _solforge_argv() -> list[str]:
    script = Path(sys.executable).parent / "solforge"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "solforge.server"]


def _split_http(spec: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); raises SwarmError with the expected form."""
    spec = spec.strip()
    if spec.startswith("["):
        host, _, rest = spec[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        host, _, port_text = spec.rpartition(":")
    try:
        port = int(port_text)
    except ValueError:
        raise SwarmError(
            f"--http {spec!r}: expected HOST:PORT, for example 127.0.0.1:8765 (port 0: any free one)"
        ) from None
    return host or "127.0.0.1", port


def wait_healthy(url: str, proc: ChildProcess, timeout_s: float) -> None:
    """Return once ``url`` answers 200; raises SwarmError when ``proc`` exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SwarmError(f"the MCP server exited with code {proc.poll()}; see {proc.log_path}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            time.sleep(0.2)
    raise SwarmError(f"the MCP server did not answer {url} within {timeout_s:.0f} s; see {proc.log_path}")
