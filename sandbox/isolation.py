"""Running untrusted work in child processes that cannot outlive their budget.

Everything candidate-controlled (a compiler fed candidate sources, an import of candidate Python, the
candidate's kernels themselves) runs through :func:`run_isolated` or :func:`spawn_isolated`:

- the child starts a new session, so it and everything it forks share one process group;
- ``preexec`` caps its address space (``RLIMIT_AS``), core dumps (0), open files and processes;
- it loses the network: the child calls ``unshare(CLONE_NEWNET)`` (or, when not root,
  ``unshare(CLONE_NEWUSER | CLONE_NEWNET)``) and so sees only a loopback device that is down;
- on timeout or cancellation the whole tree dies: the group is frozen with SIGSTOP, every
  descendant psutil can see is frozen too (this catches a grandchild that moved to its own session
  while its parent lived), then all of them get SIGKILL;
- after a normal exit, whatever the child left running in its group is killed as well;
- stdout and stderr are read concurrently and only their last ``output_limit_bytes`` are kept, so
  a child printing gigabytes neither blocks on a full pipe nor fills the parent's memory.

Trade-offs, stated once:

- Network isolation is best effort. ``unshare(CLONE_NEWNET)`` needs CAP_SYS_ADMIN (root here), the
  user-namespace fallback needs unprivileged user namespaces; where neither is permitted the child
  runs with the host network and :attr:`IsolatedResult.network_isolated` says so. A child in a new
  network namespace also loses abstract Unix sockets and loopback, so anything that needs a local
  server (torch.distributed, NCCL bootstrap) fails there: candidates need neither.
- ``RLIMIT_AS`` limits virtual address space, not resident memory. CUDA maps large virtual ranges
  when it creates a context, so the limit for a process that touches the GPU must be generous
  (tens of GiB); it is a guard against runaway host allocations, not an exact memory budget.
- ``RLIMIT_NPROC`` counts every process of the real user and root ignores it; it is a fork-bomb
  backstop, while the real guarantee that nothing survives is the tree kill.
- A process that leaves the session and whose parent dies before the kill is reparented to init
  and cannot be found by process-tree walking; only a cgroup or a PID namespace would catch that.
  Candidates get no ptrace or privileges, so this needs deliberate effort and is out of scope here.
- Reads are not confined: a candidate can read what its user can. Secrets are kept out of the
  environment (:func:`solforge.sandbox.child_env.scrubbed_env`), not out of the filesystem. Writes, namespaces and ptrace are
  confined inside the candidate and build processes themselves, before candidate code loads
  (:func:`solforge.sandbox.defences.confine_process`: Landlock and seccomp, where the kernel has them).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import resource
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil

__all__ = [
    "DEFAULT_MAX_OPEN_FILES",
    "DEFAULT_MAX_PROCESSES",
    "OUTPUT_LIMIT_BYTES",
    "IsolatedProcess",
    "IsolatedResult",
    "kill_tree",
    "run_isolated",
    "run_isolated_async",
    "spawn_isolated",
]

OUTPUT_LIMIT_BYTES = 64 * 1024
"""Default tail of stdout and of stderr kept from a child (64 KiB each)."""
DEFAULT_MAX_OPEN_FILES = 4096
"""RLIMIT_NOFILE for children: ninja and nvcc need dozens, torch a few hundred."""
DEFAULT_MAX_PROCESSES = 4096
"""RLIMIT_NPROC for children (per real user; ignored for root)."""

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_READ_CHUNK = 64 * 1024
_DRAIN_GRACE_S = 2.0
"""After the child is gone, how long to keep reading pipes an escaped descendant might still hold."""
_POLL_S = 0.05
"""Wait granularity when the kernel has no pidfd (Linux < 5.3)."""

# Resolved in the parent: calling into ctypes after fork must not load libraries.
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_UNSHARE: Callable[[int], int] | None = getattr(_LIBC, "unshare", None)


@dataclass(frozen=True)
class IsolatedResult:
    """What one isolated child did."""

    returncode: int | None
    """Exit status; negative when a signal ended it (as subprocess reports), None if never reaped."""
    stdout: str
    """The last ``output_limit_bytes`` of stdout, decoded as UTF-8 with replacement."""
    stderr: str
    """The last ``output_limit_bytes`` of stderr."""
    timed_out: bool
    """True when the budget ran out and the tree was killed."""
    killed_by_signal: int | None
    """The signal that ended the child (SIGKILL after a timeout), None after a normal exit."""
    seconds: float
    """Wall time from spawn to reaping."""
    network_isolated: bool = False
    """True when the child ran in its own (empty) network namespace."""
    stdout_dropped_bytes: int = 0
    """Bytes of stdout dropped from the front to respect the limit."""
    stderr_dropped_bytes: int = 0

    @property
    def ok(self) -> bool:
        """Exited on its own with status 0."""
        return self.returncode == 0 and not self.timed_out


class _TailBuffer:
    """Keeps the last ``limit`` bytes written to it and counts what it dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    def append(self, chunk: bytes) -> None:
        self.data += chunk
        excess = len(self.data) - self.limit
        if excess > 0:
            del self.data[:excess]
            self.dropped += excess

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _make_preexec(
    memory_limit_bytes: int | None,
    max_open_files: int,
    max_processes: int,
    isolate_network: bool,
    status_fd: int,
) -> Callable[[], None]:
    """The function the child runs between fork and exec (after setsid)."""
    uid, gid = os.getuid(), os.getgid()

    def _limit(which: int, value: int) -> None:
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))  # hard too: the child cannot raise it back

    def _write(path: str, text: str) -> None:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def _unshare_network() -> bool:
        if _UNSHARE is None:
            return False
        if _UNSHARE(_CLONE_NEWNET) == 0:
            return True
        if uid == 0:
            return False
        # Unprivileged: a user namespace grants CAP_SYS_ADMIN over a new network namespace.
        # Map our own ids 1:1 so files and the GPU device nodes keep their usual permissions.
        if _UNSHARE(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
            return False
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError:
            pass  # the namespace exists either way; the ids merely show as nobody
        return True

    def preexec() -> None:
        _limit(resource.RLIMIT_CORE, 0)
        _limit(resource.RLIMIT_NOFILE, max_open_files)
        _limit(resource.RLIMIT_NPROC, max_processes)
        if memory_limit_bytes is not None:
            _limit(resource.RLIMIT_AS, memory_limit_bytes)
        isolated = isolate_network and _unshare_network()
        with contextlib.suppress(OSError):
            os.write(status_fd, b"1" if isolated else b"0")

    return preexec


def kill_tree(pid: int, *, timeout_s: float = 5.0) -> None:
    """Kill a process, its process group and every descendant, and wait until they are gone.

    Parameters
    ----------
    pid
        The root of the tree. When it leads its own process group (as every child of
        :func:`spawn_isolated` does) the whole group is killed too, including members whose parent
        already died.
    timeout_s
        How long to wait for the killed processes to disappear.

    Notes
    -----
    The group is first frozen with SIGSTOP so nothing forks while the tree is walked; descendants
    found outside the group (a grandchild that called setsid) are frozen individually. Then
    everything gets SIGKILL. The caller still reaps ``pid`` itself when it is its child.

    Calling it after the child was reaped is safe: a pid that :func:`spawn_isolated` started and
    that now belongs to a newer process is left alone.
    """
    if _reused(pid):
        # Ours was reaped and the pid now names an unrelated process. A free pid is never reused
        # while a process group of that id has members, so nothing of ours is left to kill either.
        return
    own_group = False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        own_group = os.getpgid(pid) == pid
    if own_group:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGSTOP)
    seen: dict[int, psutil.Process] = {}
    for _ in range(3):  # repeat: a process forked between the walk and the freeze is caught next round
        try:
            root = psutil.Process(pid)
            found = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            found = []
        fresh = [p for p in found if p.pid not in seen]
        if not fresh:
            break
        for proc in fresh:
            seen[proc.pid] = proc
            with contextlib.suppress(psutil.Error):
                proc.suspend()
    if own_group:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    for proc in seen.values():
        with contextlib.suppress(psutil.Error):
            proc.kill()
    # The root is the caller's to reap; the others only have to stop running (a zombie waiting for
    # init to reap it runs nothing).
    others = [p for p in seen.values() if p.pid != pid]
    deadline = time.monotonic() + timeout_s
    while others and time.monotonic() < deadline:
        others = [p for p in others if _alive(p)]
        if others:
            time.sleep(0.01)


_SPAWNED: dict[int, float] = {}
"""Creation time of every child spawn_isolated started, by pid, to recognise a reused pid."""
_SPAWNED_MAX = 4096


def _remember(pid: int) -> None:
    with contextlib.suppress(psutil.Error):
        if len(_SPAWNED) >= _SPAWNED_MAX:  # forget the oldest half; they are long reaped
            for old in list(_SPAWNED)[: _SPAWNED_MAX // 2]:
                _SPAWNED.pop(old, None)
        _SPAWNED[pid] = psutil.Process(pid).create_time()


def _reused(pid: int) -> bool:
    expected = _SPAWNED.get(pid)
    if expected is None:
        return False
    try:
        return abs(psutil.Process(pid).create_time() - expected) > 0.01
    except psutil.NoSuchProcess:
        return False


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class IsolatedProcess:
    """A child started by :func:`spawn_isolated`: wait for it with :meth:`communicate`, cancel with
    :meth:`kill_tree`."""

    def __init__(self, popen: subprocess.Popen[bytes], network_isolated: bool, started: float) -> None:
        self.popen = popen
        """The underlying process; its pid leads the child's process group."""
        self.network_isolated = network_isolated
        """True when the child runs in its own network namespace."""
        self.started = started
        self._cancelled = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def kill_tree(self) -> None:
        """Kill the child and everything it started (safe to call from another thread, and twice)."""
        self._cancelled = True
        if self.popen.returncode is None:
            kill_tree(self.pid)

    def communicate(
        self,
        stdin_bytes: bytes | None = None,
        *,
        timeout_s: float | None = None,
        output_limit_bytes: int = OUTPUT_LIMIT_BYTES,
    ) -> IsolatedResult:
        """Feed stdin, collect the tail of stdout/stderr, and wait for the child within the budget.

        Parameters
        ----------
        stdin_bytes
            Written to the child's stdin, which is then closed; None closes it at once.
        timeout_s
            Budget from now; when it runs out the whole tree is killed and ``timed_out`` is set.
        output_limit_bytes
            How much of the end of stdout and of stderr to keep.

        Returns
        -------
        IsolatedResult
            Always; a timeout or a crash is data, not an exception.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        out, err = _TailBuffer(output_limit_bytes), _TailBuffer(output_limit_bytes)
        timed_out = False
        sel = selectors.DefaultSelector()
        pidfd = _open_pidfd(self.pid)
        try:
            buffers: dict[int, _TailBuffer] = {}
            for stream, buf in ((self.popen.stdout, out), (self.popen.stderr, err)):
                if stream is None:  # redirected by the caller (a file, DEVNULL): nothing to collect
                    continue
                os.set_blocking(stream.fileno(), False)
                sel.register(stream.fileno(), selectors.EVENT_READ)
                buffers[stream.fileno()] = buf
            pending = memoryview(stdin_bytes or b"")
            stdin = self.popen.stdin
            stdin_fd = stdin.fileno() if stdin is not None else None
            if stdin is not None:
                if pending:
                    os.set_blocking(stdin.fileno(), False)
                    sel.register(stdin.fileno(), selectors.EVENT_WRITE)
                else:
                    _close_quietly(stdin)
            if pidfd is not None:
                sel.register(pidfd, selectors.EVENT_READ)

            exited_at: float | None = None
            while True:
                now = time.monotonic()
                if exited_at is None and (self._cancelled or self._exited()):
                    exited_at = now
                    # Nothing is reaped yet: while the zombie holds the pid its group id cannot be
                    # reused, so killing the group here cannot hit an unrelated process.
                    _kill_group(self.pid)
                if exited_at is None and deadline is not None and now >= deadline:
                    timed_out = True
                    kill_tree(self.pid)
                    exited_at = now = time.monotonic()
                wait: float | None
                if exited_at is not None:
                    # Keep reading what the dead tree wrote, but not forever: a descendant that
                    # escaped the group may hold the pipes open.
                    wait = _DRAIN_GRACE_S - (now - exited_at)
                    if wait <= 0 or not any(fd in buffers for fd in _registered(sel)):
                        break
                else:
                    wait = None if pidfd is not None else _POLL_S
                    if deadline is not None:
                        wait = min(deadline - now, wait if wait is not None else deadline - now)
                for key, _ in sel.select(max(0.0, wait) if wait is not None else None):
                    fd = key.fd
                    if fd == pidfd:
                        sel.unregister(fd)  # level-triggered: stays readable once the child is gone
                    elif fd == stdin_fd:
                        try:
                            written = os.write(fd, pending[:_READ_CHUNK])
                        except BlockingIOError:
                            continue
                        except OSError:  # EPIPE: the child stopped reading; drop the rest
                            written = len(pending)
                        pending = pending[written:]
                        if not pending:
                            sel.unregister(fd)
                            _close_quietly(stdin)
                    else:
                        try:
                            chunk = os.read(fd, _READ_CHUNK)
                        except BlockingIOError:
                            continue
                        if chunk:
                            buffers[fd].append(chunk)
                        else:
                            sel.unregister(fd)
        finally:
            sel.close()
            if pidfd is not None:
                os.close(pidfd)
            for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
                if stream is not None:
                    _close_quietly(stream)
        try:
            returncode: int | None = self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:  # unkillable (D state); report and leave it to init
            returncode = None
        signum = -returncode if returncode is not None and returncode < 0 else None
        return IsolatedResult(
            returncode=returncode,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            killed_by_signal=signum,
            seconds=time.monotonic() - self.started,
            network_isolated=self.network_isolated,
            stdout_dropped_bytes=out.dropped,
            stderr_dropped_bytes=err.dropped,
        )

    def _exited(self) -> bool:
        """True once the child is a zombie (not reaped: WNOWAIT)."""
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None


def _open_pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def _registered(sel: selectors.BaseSelector) -> list[int]:
    return [key.fd for key in sel.get_map().values()]


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _close_quietly(stream: object) -> None:
    with contextlib.suppress(OSError):
        stream.close()  # type: ignore[attr-defined]


def spawn_isolated(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    memory_limit_bytes: int | None = None,
    isolate_network: bool = True,
    max_open_files: int = DEFAULT_MAX_OPEN_FILES,
    max_processes: int = DEFAULT_MAX_PROCESSES,
    pass_fds: Sequence[int] = (),
    stdin: int | IO[Any] | None = subprocess.PIPE,
    stdout: int | IO[Any] | None = subprocess.PIPE,
    stderr: int | IO[Any] | None = subprocess.PIPE,
) -> IsolatedProcess:
    """Start ``argv`` in a new session with limits applied, and return a handle to it.

    Parameters
    ----------
    argv
        Program and arguments (no shell).
    cwd
        Working folder of the child.
    env
        The complete environment of the child (build it with :func:`solforge.sandbox.child_env.scrubbed_env`).
    memory_limit_bytes
        ``RLIMIT_AS`` of the child and of everything it starts; None leaves it unlimited.
    isolate_network
        Put the child in a new, empty network namespace when the kernel permits it.
    max_open_files, max_processes
        ``RLIMIT_NOFILE`` and ``RLIMIT_NPROC``.
    pass_fds
        File descriptors the child keeps (the judge passes its end of the candidate's socket).
    stdin, stdout, stderr
        As for :class:`subprocess.Popen`; pipes by default (what :meth:`IsolatedProcess.communicate` reads).

    Returns
    -------
    IsolatedProcess
        Call :meth:`IsolatedProcess.communicate` to wait for it, :meth:`IsolatedProcess.kill_tree`
        (or :func:`kill_tree` with its pid) to cancel it.

    Raises
    ------
    OSError
        The program could not be started (not found, not executable).
    """
    status_r, status_w = os.pipe()
    try:
        started = time.monotonic()
        popen = subprocess.Popen(
            list(argv),
            cwd=str(cwd),
            env=dict(env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            close_fds=True,
            pass_fds=tuple(pass_fds),
            preexec_fn=_make_preexec(
                memory_limit_bytes, max_open_files, max_processes, isolate_network, status_w
            ),
        )
    except BaseException:
        os.close(status_r)
        raise
    finally:
        os.close(status_w)
    try:
        # Popen returns after the exec succeeded, so preexec has already written its byte.
        os.set_blocking(status_r, False)
        try:
            status = os.read(status_r, 1)
        except BlockingIOError:
            status = b""
    finally:
        os.close(status_r)
    _remember(popen.pid)
    return IsolatedProcess(popen, network_isolated=status == b"1", started=started)


def run_isolated(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    timeout_s: float | None,
    memory_limit_bytes: int | None = None,
    stdin_bytes: bytes | None = None,
    output_limit_bytes: int = OUTPUT_LIMIT_BYTES,
    isolate_network: bool = True,
    max_open_files: int = DEFAULT_MAX_OPEN_FILES,
    max_processes: int = DEFAULT_MAX_PROCESSES,
) -> IsolatedResult:
    """Run ``argv`` isolated (see :func:`spawn_isolated`) and wait for it within ``timeout_s``.

    On timeout the whole process tree is killed and the result has ``timed_out=True``; when the
    child exits, anything it left running in its process group is killed too. Nothing is raised
    for the child's own failures.

    Examples
    --------
    >>> from solforge.sandbox.child_env import scrubbed_env
    >>> run_isolated([sys.executable, "-c", "print(1)"], cwd="/", env=scrubbed_env(), timeout_s=30).stdout
    '1\\n'
    """
    proc = spawn_isolated(
        argv,
        cwd=cwd,
        env=env,
        memory_limit_bytes=memory_limit_bytes,
        isolate_network=isolate_network,
        max_open_files=max_open_files,
        max_processes=max_processes,
    )
    try:
        return proc.communicate(stdin_bytes, timeout_s=timeout_s, output_limit_bytes=output_limit_bytes)
    except BaseException:  # KeyboardInterrupt or a bug: never leave the tree behind
        proc.kill_tree()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(timeout=10)
        raise


async def run_isolated_async(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    timeout_s: float | None,
    memory_limit_bytes: int | None = None,
    stdin_bytes: bytes | None = None,
    output_limit_bytes: int = OUTPUT_LIMIT_BYTES,
    isolate_network: bool = True,
) -> IsolatedResult:
    """Async twin of :func:`run_isolated`: cancelling the awaiting task kills the process tree.

    The waiting happens in a worker thread (anyio), so the event loop stays free.
    """
    import anyio.to_thread

    proc = spawn_isolated(
        argv, cwd=cwd, env=env, memory_limit_bytes=memory_limit_bytes, isolate_network=isolate_network
    )
    try:
        return await anyio.to_thread.run_sync(
            lambda: proc.communicate(stdin_bytes, timeout_s=timeout_s, output_limit_bytes=output_limit_bytes),
            abandon_on_cancel=True,
        )
    except BaseException:
        # Cancelled (or failed): the abandoned thread notices the death, reaps and returns.
        proc.kill_tree()
        raise


# ---------------------------------------------------------------------------------------------
# The environment
