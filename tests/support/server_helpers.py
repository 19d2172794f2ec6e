"""Helpers for the server's process-level tests (a uniquely named module: conftest names clash across folders)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLFORGE = Path(sys.executable).parent / "solforge"


def serve_command() -> list[str]:
    """``solforge serve`` when the console script exists, else ``python -m solforge.server``."""
    if SOLFORGE.is_file():
        return [str(SOLFORGE), "serve"]
    return [sys.executable, "-m", "solforge.server"]


def server_env(problems: Path, db_url: str, **extra: str) -> dict[str, str]:
    """Environment for a server subprocess: only the test problems, a private ledger and cache."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/root"),
        "SOLFORGE_PROBLEM_DIRS": str(problems),
        "SOLFORGE_ONLY_PROBLEM_DIRS": "1",
        "SOLFORGE_DB": db_url,
        "SOLFORGE_CACHE": str(problems.parent / "cache"),
        "SOLFORGE_HOME": str(problems.parent / "home"),
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    raise AssertionError(f"server at {url} did not become healthy in {timeout_s} s")
