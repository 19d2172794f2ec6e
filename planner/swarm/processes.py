"""Child processes of a run: agents and the MCP server, each in its own process group.

Each child starts a new session (``start_new_session``), so stopping it signals its whole group: an
agent's tools, shells and compilers end with it. Output goes to a log file, never to the planner's
terminal.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ChildProcess", "kill_group", "last_tool_call", "pid_alive"]

_TOOL_RE = re.compile(
    r"\b(?:mcp__solforge__)?(list_problems|read_docs|get_problem|compile_kernel|run_benchmark|wait_job|"
    r"cancel_job|get_sol_score|submit_solution|get_leaderboard)\b"
)
_TAIL_BYTES = 16_384


class ChildProcess:
    """One child in its own process group, its output appended to ``log_path``.

    Parameters
    ----------
    argv, env, cwd
        What to run, its full environment and its folder.
    log_path
        Output (stdout and stderr together) is appended here, after a header line.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, log_path: Path) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_mono = 0.0
        self.started_wall = 0.0

    def start(self, header: str) -> int:
        """Start the child and return its pid.

        Raises
        ------
        OSError
            The program cannot be started (not found, not executable); the log says which.
        """
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {header}\n".encode())
            log.flush()
            try:
                self.proc = subprocess.Popen(
                    self.argv,
                    cwd=self.cwd,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                log.write(f"=== cannot start {self.argv[0]!r}: {exc}\n".encode())
                raise
        self.started_mono = time.monotonic()
        self.started_wall = time.time()
        return self.proc.pid

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def poll(self) -> int | None:
        """The exit code once it ended, else None."""
        return None if self.proc is None else self.proc.poll()

    def stop(self, grace_s: float) -> int | None:
        """SIGTERM its process group, then SIGKILL after ``grace_s``; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            kill_group(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                kill_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        else:
            kill_group(self.proc.pid, signal.SIGKILL)  # leftovers of a group whose leader exited
        return self.proc.returncode

    def log_mtime(self) -> float:
        """When its log last grew (wall clock), or its start."""
        try:
            return max(self.started_wall, self.log_path.stat().st_mtime)
        except OSError:
            return self.started_wall


def kill_group(pid: int, sig: int = signal.SIGTERM) -> bool:
    """Signal the process group led by ``pid``; False when there is none."""
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def pid_alive(pid: int | None) -> bool:
    """Whether a process with this pid exists on this host (zombies count as gone)."""
    if not pid:
        return False
    try:
        import psutil

        return bool(psutil.pid_exists(pid)) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except Exception:  # psutil.NoSuchProcess and friends: it is gone
        return False


def last_tool_call(log_path: Path) -> str | None:
    """The last solforge tool named in the tail of an agent's log (claude's stream-json, or plain text)."""
    with contextlib.suppress(OSError), open(log_path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - _TAIL_BYTES))
        tail = fh.read().decode("utf-8", "replace")
        found = _TOOL_RE.findall(tail)
        return found[-1] if found else None
    return None
