"""A CUDA C++ build worker started before it is needed, with torch already imported.

A torch extension's build imports torch before ninja can start (``torch.utils.cpp_extension``): 3.7 s of
the 14-16 s that a changed CUDA C++ source took through MCP on an H200 host (2026-12-03). A process that
builds CUDA C++ once usually builds it again (an agent iterating on a kernel), so after each such build
the builder starts the next worker: it imports torch, then waits for its request on stdin. Nothing of a
solution is in it until then; it reads one request, confines itself and builds, exactly as a worker
started for that request would (see :mod:`solforge.sandbox.build.worker`), and is never reused.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from solforge.sandbox.child_env import make_scratch_dir, remove_tree, scrubbed_env
from solforge.sandbox.isolation import IsolatedProcess, IsolatedResult, spawn_isolated

__all__ = ["SpareWorker", "close_spares", "start_spare", "take_spare", "worker_argv"]


_Key = tuple[tuple[tuple[str, str], ...], int | None]


def _key(extra_env: Mapping[str, str], memory_limit_bytes: int | None) -> _Key:
    """What a waiting worker must have been started with to take a build: its environment and limit."""
    return tuple(sorted(extra_env.items())), memory_limit_bytes


def worker_argv(*, preload: bool) -> list[str]:
    return [sys.executable, "-m", "solforge.sandbox.build.worker", *(["--preload"] if preload else [])]


class SpareWorker:
    """One started build worker, its scratch folder, and what it was started with."""

    def __init__(self, extra_env: Mapping[str, str], memory_limit_bytes: int | None) -> None:
        self.key = _key(extra_env, memory_limit_bytes)
        self.scratch = make_scratch_dir()
        try:
            self.proc: IsolatedProcess = spawn_isolated(
                worker_argv(preload=True),
                cwd=self.scratch,
                env=scrubbed_env(extra_env, None, scratch_dir=self.scratch),
                memory_limit_bytes=memory_limit_bytes,
            )
        except BaseException:
            remove_tree(self.scratch)
            raise

    @property
    def alive(self) -> bool:
        return self.proc.popen.poll() is None

    def run(self, request_json: bytes, timeout_s: float, output_limit_bytes: int) -> IsolatedResult:
        """Hand the worker its request and wait for the report; the worker and its folder are gone after."""
        try:
            return self.proc.communicate(request_json, timeout_s=timeout_s, output_limit_bytes=output_limit_bytes)
        finally:
            self.discard()

    def discard(self) -> None:
        self.proc.kill_tree()
        with contextlib.suppress(Exception):
            self.proc.popen.wait(timeout=10)
        for stream in (self.proc.popen.stdin, self.proc.popen.stdout, self.proc.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        remove_tree(Path(self.scratch))


_lock = threading.Lock()
_spares: list[SpareWorker] = []


def take_spare(extra_env: Mapping[str, str], memory_limit_bytes: int | None) -> SpareWorker | None:
    """The waiting worker started with this environment and limit, if one is still alive; the caller owns it."""
    key = _key(extra_env, memory_limit_bytes)
    with _lock:
        for spare in list(_spares):
            if not spare.alive:
                _spares.remove(spare)
                spare.discard()
            elif spare.key == key:
                _spares.remove(spare)
                return spare
    return None


def start_spare(extra_env: Mapping[str, str], memory_limit_bytes: int | None) -> None:
    """Start a worker for the next build with this environment and limit, unless one waits already."""
    key = _key(extra_env, memory_limit_bytes)
    with _lock:
        if any(s.key == key and s.alive for s in _spares):
            return
        with contextlib.suppress(OSError):
            _spares.append(SpareWorker(extra_env, memory_limit_bytes))


@atexit.register
def close_spares() -> None:
    """Stop every waiting worker (at exit, and for tests)."""
    with _lock:
        waiting = list(_spares)
        _spares.clear()
    for spare in waiting:
        spare.discard()
