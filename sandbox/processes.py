"""The judge's handles on candidate processes, and the spare kept ready for the next evaluation.

A :class:`CandidateProcess` is one ``python -m solforge.sandbox.candidate`` child with its own folder,
its own log and the judge's end of a socket pair. It is started with a :class:`ProcessProfile` (the
device, whether the defences apply, the memory limit): everything that must be fixed before the
process runs, since the candidate confines itself (Landlock, seccomp) first thing.

A :class:`SparePool` keeps one process per profile started ahead of need: Python, torch, CUDA and the
harness's own imports are up, and no solution has been loaded into it. Whoever takes it owns it (and
its folder); the pool never hands one process out twice, so every solution still runs in a process
that has never run other code.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import channel, child_env, isolation

__all__ = ["WARM_MARKER", "CandidateProcess", "ProcessProfile", "SparePool", "describe_exit"]

WARM_MARKER = ".solforge-warm"
"""The file a candidate process creates in its home once it has started up (before any solution)."""
STACK_SIGNAL = signal.SIGUSR2
"""Makes a candidate process write every thread's Python stack to its log (a hung call's TIMEOUT shows it)."""


@dataclass(frozen=True)
class ProcessProfile:
    """What a candidate process is started with (it cannot change once the process runs)."""

    device: str
    """``cuda:0`` (the judge's one visible GPU) or ``cpu``."""
    defences: bool
    """The defences of sandbox/defences/: confinement at start, guards at load."""
    memory_limit_bytes: int | None
    """Address-space limit (host memory); None on a GPU, where CUDA reserves huge virtual ranges."""

    def environment(self, home: Path) -> dict[str, str]:
        extra: dict[str, str] = {
            # Inductor's pool of compile workers are child processes, and a child of a confined process
            # cannot initialise CUDA (Landlock lets a process write only its own /proc/<pid>, which the
            # driver needs): compile in the process itself, as inductor does before its pool is up.
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
        }
        if self.device == "cpu":
            extra["TRITON_INTERPRET"] = "1"  # Triton on the CPU is its interpreter; harmless for the rest
        # Where solforge's own dependencies live when they are not in site-packages (a --target install).
        if os.environ.get("PYTHONPATH"):
            extra["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env = child_env.scrubbed_env(extra, gpu_index=None, scratch_dir=home)
        if self.device.startswith("cuda"):
            # The judge's CUDA_VISIBLE_DEVICES is already narrowed to the one GPU it serves.
            env["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES", "0")
        return env


class CandidateProcess:
    """The candidate's process, its folder and the judge's end of the socket."""

    def __init__(self, profile: ProcessProfile, folder: Path, *, language: str | None = None,
                 wrapper: Sequence[str] = ()) -> None:
        """``wrapper``: a program that runs the candidate as its child (Nsight Compute for a profile); the
        socket and the confinement reach the candidate through it, and ``proc`` is the wrapper."""
        self.profile = profile
        self.folder = folder
        self.sock, child = socket.socketpair()
        self.defences = profile.defences
        self.home = folder / "home"  # the only folder the candidate may write in
        self.home.mkdir(parents=True, exist_ok=True)
        self.log_path = folder / "candidate.log"
        self._log = self.log_path.open("ab")
        try:
            self.proc = isolation.spawn_isolated(
                [*wrapper, sys.executable, "-m", "solforge.sandbox.candidate", "--fd", str(child.fileno()),
                 "--defences", "on" if profile.defences else "off", "--device", profile.device,
                 *(["--language", language] if language else [])],
                cwd=self.home,
                env=profile.environment(self.home),
                memory_limit_bytes=profile.memory_limit_bytes,
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=self._log,
            ).popen
        except BaseException:
            self.sock.close()
            self._log.close()
            raise
        finally:
            child.close()

    def request(self, cmd: dict[str, Any], timeout_s: float, *, cuda_ipc: bool,
                blob_limit: int = channel.MAX_ANSWER_BYTES) -> tuple[dict[str, Any], bytes | None]:
        """Send one command and wait for its answer, killing the process on timeout.

        ``blob_limit`` bounds the outputs a CPU answer may carry (the judge sets it from the outputs
        it expects, so a hostile answer cannot exhaust its memory and a large honest one still fits).
        """
        self.sock.settimeout(max(0.05, timeout_s))
        nonce = None
        if self.defences:
            if self._unread_bytes():
                self.kill()
                return {"ok": False, "status": "REWARD_HACK", "error": "the candidate wrote to the result channel "
                        "outside an answer (a forged answer)"}, None
            nonce = secrets.token_hex(8)
            cmd = {**cmd, "nonce": nonce}
        try:
            channel.send_pickle(self.sock, cmd, cuda_ipc=cuda_ipc)
            answer = channel.recv_json(self.sock)
            if nonce is not None and answer.get("nonce") != nonce:
                self.kill()
                return {"ok": False, "status": "REWARD_HACK", "error": "an answer on the result channel did not "
                        "carry this command's nonce: it was forged by the solution"}, None
            blob = None
            if answer.get("has_blob"):
                kind, blob = channel.recv_frame(self.sock, blob_limit)
                if kind != channel.KIND_BYTES:
                    raise ValueError(f"expected an output blob, got frame kind {kind!r}")
            return answer, blob
        except TimeoutError:
            stacks = self.hung_stacks()
            self.kill()
            where = f" Where it was (Python stacks of every thread):\n{stacks}" if stacks else ""
            return {"ok": False, "status": "TIMEOUT", "hung": True,
                    "error": f"the call did not finish within {timeout_s:.0f} s; the candidate process tree was "
                    f"killed.{where}"}, None
        except (channel.ChannelClosed, ConnectionError, OSError, ValueError) as exc:
            try:  # a closed channel usually means the process is exiting: wait a moment to say how it ended
                code: int | None = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            self.kill()
            tail = self.log_tail()
            return {"ok": False, "status": "RUNTIME_ERROR", "died": True,
                    "error": f"the candidate process died ({describe_exit(code)}; {type(exc).__name__}). "
                    f"Last output:\n{tail}"}, None

    def _unread_bytes(self) -> bool:
        """Whether the candidate sent something nobody asked for (checked before each command)."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return bool(readable) and bool(self.sock.recv(1, socket.MSG_PEEK))
        except OSError:
            return False  # a closed channel is a death, which the request itself reports

    def hung_stacks(self, wait_s: float = 1.0, limit: int = 2500) -> str:
        """Ask a hung process for its stacks (``STACK_SIGNAL``, faulthandler) and return what it wrote."""
        if not self.alive:
            return ""
        with contextlib.suppress(OSError):
            before = self.log_path.stat().st_size
            os.kill(self.proc.pid, STACK_SIGNAL)
            deadline, size = time.monotonic() + wait_s, before
            while time.monotonic() < deadline:
                time.sleep(0.1)
                now = self.log_path.stat().st_size
                if now > before and now == size:
                    break  # written, and no longer growing
                size = now
            return self.log_path.read_bytes()[before:].decode("utf-8", "replace")[-limit:].strip()
        return ""

    def log_tail(self, limit: int = 2000) -> str:
        with contextlib.suppress(OSError):
            data = self.log_path.read_bytes()[-limit:]
            return data.decode("utf-8", "replace")
        return ""

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def warm(self) -> bool:
        """Whether the process has finished starting up (torch, CUDA, the harness imported)."""
        return (self.home / WARM_MARKER).exists()

    def wait_warm(self, timeout_s: float, poll_s: float = 0.005) -> bool:
        """Wait until the process has started up (or died, or ``timeout_s`` passed); whether it is warm."""
        deadline = time.monotonic() + timeout_s
        while not self.warm:
            if not self.alive or time.monotonic() > deadline:
                return False
            time.sleep(poll_s)
        return True

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to the process's group (it leads its own, as every isolated child does)."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signum)

    def kill(self) -> None:
        isolation.kill_tree(self.proc.pid)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(OSError):
            self._log.close()

    def close(self, wait_s: float = 5.0) -> None:
        """Ask the process to exit, wait up to ``wait_s`` for it (and a wrapper writing its report), then
        make sure it and everything it started are gone."""
        if self.alive:
            with contextlib.suppress(Exception):
                self.sock.settimeout(5)
                channel.send_pickle(self.sock, {"cmd": "exit"}, cuda_ipc=False)
                self.proc.wait(timeout=wait_s)
        self.kill()

    def discard(self) -> None:
        """Close the process and remove its folder (its home, its log, its JIT caches)."""
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        import signal

        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit code {code}"


class SparePool:
    """Started, never-loaded candidate processes, up to ``depth`` per profile, each handed out once.

    Two spares (the default) let evaluations that follow each other closely, as a busy queue sends
    them, each find a process that started one evaluation earlier and is warm by now.

    Parameters
    ----------
    root
        Folder under which each process gets a folder of its own (``spare-<n>``).
    depth
        How many processes :meth:`fill` keeps ready per profile.
    language
        The kernel language these processes will most likely run: they skip importing the other
        languages' packages (CuTe DSL's took 0.55-0.7 s on a CPU machine), which shortens the start-up
        a first workload or a quickly following evaluation waits for. None: ready for any language.
        A process started for one language still loads a solution in another; it imports that
        language's packages first (see ``candidate._import_language_packages``). A one-shot
        evaluation knows its language; a warm judge follows its recent requests
        (:meth:`follow`).
    """

    def __init__(self, root: Path, depth: int = 2, *, language: str | None = None) -> None:
        self.root = root
        self.depth = max(1, depth)
        self.language = language
        self._spares: dict[ProcessProfile, list[CandidateProcess]] = {}
        self._numbers = itertools.count(1)

    def follow(self, recent: Sequence[str]) -> None:
        """Start later processes for the languages of ``recent`` evaluations (oldest first): for the
        latest one, or for every language while a CuTe DSL solution is among them (only its packages
        are worth skipping)."""
        if recent:
            self.language = None if "cute_dsl" in recent else recent[-1]

    def _start(self, profile: ProcessProfile) -> CandidateProcess:
        return CandidateProcess(profile, self.root / f"spare-{next(self._numbers)}", language=self.language)

    def _live(self, profile: ProcessProfile) -> list[CandidateProcess]:
        waiting = self._spares.get(profile, [])
        for dead in [p for p in waiting if not p.alive]:
            waiting.remove(dead)
            dead.discard()
        return waiting

    def fill(self, profile: ProcessProfile, count: int | None = None) -> None:
        """Start processes for ``profile`` until ``count`` (default: the depth) are waiting."""
        waiting = self._live(profile)
        while len(waiting) < (self.depth if count is None else count):
            waiting.append(self._start(profile))
        self._spares[profile] = waiting

    def take(self, profile: ProcessProfile) -> CandidateProcess:
        """The longest-waiting process for ``profile`` (started now if there is none); the caller owns it."""
        waiting = self._live(profile)
        ready = [p for p in waiting if p.warm]
        chosen = (ready or waiting or [None])[0]
        if chosen is None:
            return self._start(profile)
        waiting.remove(chosen)
        # Taken inside a pause (a baseline process opened while the reference is timed): it must run.
        chosen.signal_group(signal.SIGCONT)
        return chosen

    @contextlib.contextmanager
    def starting_ones_paused(self) -> Iterator[int]:
        """Freeze every spare still starting up for the length of the block; yield how many.

        A spare's start-up (torch imports, a CUDA context) beside a timed loop would take CPU time
        and driver work from it. Stopping them (SIGSTOP, then SIGCONT) keeps them out of the timing
        without waiting for them, which cost up to a whole torch import when evaluations followed each
        other closely. A warm spare waits on its socket and needs no pause.
        """
        starting = [p for waiting in self._spares.values() for p in waiting if p.alive and not p.warm]
        for proc in starting:
            proc.signal_group(signal.SIGSTOP)
        try:
            yield len(starting)
        finally:
            for proc in starting:
                proc.signal_group(signal.SIGCONT)

    def keep_only(self, profile: ProcessProfile) -> None:
        """Stop the spares of every other profile (each holds a CUDA context)."""
        for other in [p for p in self._spares if p != profile]:
            for proc in self._spares.pop(other):
                proc.discard()

    def close(self) -> None:
        for waiting in self._spares.values():
            for proc in waiting:
                proc.discard()
        self._spares.clear()
