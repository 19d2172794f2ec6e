"""Confinement of a whole process: Landlock and seccomp, applied in the candidate before any solution
code is loaded and in the build worker before a CuTe DSL import runs candidate code.

Landlock restricts writes to the scratch folder (and ``/dev``), forbids TCP and scopes signals and
ptrace to the sandbox; a seccomp filter refuses the system calls that leave a namespace or reach
into another process (setns, unshare, ptrace, process_vm_*, mount, bpf, ...). Both hold for native
code (cuda_cpp) too, which the audit hook cannot see. Where the kernel lacks them the evaluation
goes on and the notes of :func:`confine_process` say so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


_PR_SET_NO_NEW_PRIVS = 38
_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
# Write-side rights only: reads stay free (the toolchain, the venv, the build cache must be readable).
_FS_WRITE_FILE, _FS_REMOVE_DIR, _FS_REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_FS_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2

_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_EPERM = 1
_DENIED_SYSCALLS = ("ptrace", "process_vm_readv", "process_vm_writev", "setns", "unshare", "mount", "umount2",
                    "pivot_root", "chroot", "bpf", "kexec_load", "kexec_file_load", "init_module", "finit_module",
                    "delete_module", "reboot", "pidfd_getfd", "open_by_handle_at", "userfaultfd", "swapon",
                    "swapoff", "acct", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "sethostname",
                    "setdomainname", "fsopen", "fsconfig", "fsmount", "move_mount", "open_tree", "mount_setattr")
"""Leaving the sandbox's namespaces, reaching into other processes, changing the machine."""
_SYSCALLS: dict[str, tuple[int, int, dict[str, int]]] = {
    # machine: (AUDIT_ARCH, seccomp syscall number, table)
    "x86_64": (0xC000003E, 317, {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "setns": 308, "unshare": 272, "mount": 165,
        "umount2": 166, "pivot_root": 155, "chroot": 161, "bpf": 321, "kexec_load": 246, "kexec_file_load": 320,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169, "pidfd_getfd": 438,
        "open_by_handle_at": 304, "userfaultfd": 323, "swapon": 167, "swapoff": 168, "acct": 163,
        "settimeofday": 164, "clock_settime": 227, "adjtimex": 159, "clock_adjtime": 305, "sethostname": 170,
        "setdomainname": 171, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "move_mount": 429, "open_tree": 428,
        "mount_setattr": 442}),
    "aarch64": (0xC00000B7, 277, {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "setns": 268, "unshare": 97, "mount": 40,
        "umount2": 39, "pivot_root": 41, "chroot": 51, "bpf": 280, "kexec_load": 104, "kexec_file_load": 294,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "reboot": 142, "pidfd_getfd": 438,
        "open_by_handle_at": 265, "userfaultfd": 282, "swapon": 224, "swapoff": 225, "acct": 89,
        "settimeofday": 170, "clock_settime": 112, "adjtimex": 171, "clock_adjtime": 266, "sethostname": 161,
        "setdomainname": 162, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "move_mount": 429, "open_tree": 428,
        "mount_setattr": 442}),
}


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def _landlock(libc: ctypes.CDLL, writable: Sequence[Path]) -> str:
    abi = libc.syscall(_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    if abi < 1:
        return f"landlock unavailable ({os.strerror(ctypes.get_errno())}): writes are confined by the audit hook only"
    fs = _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE
    if abi >= 2:
        fs |= _FS_REFER
    if abi >= 3:
        fs |= _FS_TRUNCATE
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    buffer = ctypes.create_string_buffer(attr[:size], size)
    ruleset = libc.syscall(_LANDLOCK_CREATE_RULESET, buffer, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"landlock ruleset refused ({os.strerror(ctypes.get_errno())})"
    try:
        for folder in writable:
            try:
                fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", fs, fd), 12)  # packed struct
                if libc.syscall(_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                                rule, ctypes.c_uint32(0)) != 0:
                    return f"landlock rule for {folder} refused ({os.strerror(ctypes.get_errno())})"
            finally:
                os.close(fd)
        if libc.syscall(_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self refused ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    return f"landlock ABI {abi}: writes only under {', '.join(map(str, writable))}" + (
        "; no TCP" if net else "") + ("; signals scoped" if scoped else "")


def _seccomp(libc: ctypes.CDLL) -> str:
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        return f"seccomp filter not installed: no syscall table for {machine}"
    arch, seccomp_nr, table = _SYSCALLS[machine]
    numbers = sorted({table[name] for name in _DENIED_SYSCALLS})
    # BPF: load arch; foreign arch -> EPERM; load nr; (x86_64: x32 ABI -> EPERM); each denied nr -> EPERM; allow.
    program: list[tuple[int, int, int, int]] = [(0x20, 0, 0, 4)]
    program.append((0x15, 1, 0, arch))  # jeq arch: skip the next (errno) on equal
    program.append((0x06, 0, 0, _SECCOMP_RET_ERRNO | _EPERM))
    program.append((0x20, 0, 0, 0))  # ld nr
    body: list[tuple[int, int, int, int]] = []
    if machine == "x86_64":
        body.append((0x35, 0, 0, 0x40000000))  # jge x32 bit -> errno (jt patched below)
    body += [(0x15, 0, 0, nr) for nr in numbers]
    body.append((0x06, 0, 0, _SECCOMP_RET_ALLOW))
    body.append((0x06, 0, 0, _SECCOMP_RET_ERRNO | _EPERM))
    errno_at = len(body) - 1
    patched = []
    for index, (code, _jt, _jf, k) in enumerate(body[:-2]):
        patched.append((code, errno_at - index - 1, 0, k))
    program += patched + body[-2:]
    raw = b"".join(struct.pack("=HBBI", *insn) for insn in program)
    filters = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(len(program), ctypes.addressof(filters))
    if libc.syscall(seccomp_nr, ctypes.c_uint(_SECCOMP_SET_MODE_FILTER), ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC),
                    ctypes.byref(prog)) != 0:
        return f"seccomp filter refused ({os.strerror(ctypes.get_errno())})"
    return f"seccomp: {len(numbers)} system calls refused (setns, unshare, ptrace, process_vm_*, mount, bpf, ...)"


def confine_process(writable: Sequence[str | Path]) -> list[str]:
    """Confine the calling process and everything it starts afterwards; return what was applied.

    Sets ``no_new_privs``, then a Landlock domain in which only ``writable`` (and what lies under it)
    may be written, TCP is refused and signals cannot leave the sandbox (ABI 6), and a seccomp
    filter refusing :data:`_DENIED_SYSCALLS` with EPERM. Landlock also stops ptrace and
    ``/proc/<pid>/mem`` access to processes outside the domain (the judge). Call it while the
    process has a single thread: both apply to the calling thread and its future children (the
    seccomp filter is synchronised to every thread).

    Each step is best effort: where the kernel lacks Landlock or seccomp the process runs without
    it and the returned notes say so (the caller reports them).
    """
    notes: list[str] = []
    if sys.platform != "linux":
        return ["confinement skipped: not Linux"]
    try:
        libc = _libc()
    except OSError as exc:
        return [f"confinement skipped: libc not loadable ({exc})"]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return [f"confinement skipped: no_new_privs refused ({os.strerror(ctypes.get_errno())})"]
    folders = [Path(p) for p in writable]
    try:
        notes.append(_landlock(libc, folders))
    except Exception as exc:  # an unexpected ctypes failure must not take the evaluation down
        notes.append(f"landlock failed: {type(exc).__name__}: {exc}")
    try:
        notes.append(_seccomp(libc))
    except Exception as exc:
        notes.append(f"seccomp failed: {type(exc).__name__}: {exc}")
    return notes


def writable_folders(scratch: Path) -> list[Path]:
    """What a confined candidate may write: its scratch folder, ``/dev`` (the GPU's device files,
    ``/dev/null``, ``/dev/shm`` for CUDA IPC), its own ``/proc/<pid>`` and, where the machine runs
    it, the MPS pipe folder.

    The CUDA driver names the threads it starts by writing ``/proc/<pid>/task/<tid>/comm``; without
    that, ``cuInit`` fails with error 304 (seen on an H200 with Landlock ABI 7). Only this process's
    own folder is opened: ``/proc/<judge>/mem`` and the rest of ``/proc`` stay read-only.
    """
    folders = [Path(scratch), Path("/dev"), Path(f"/proc/{os.getpid()}")]
    for extra in (os.environ.get("CUDA_MPS_PIPE_DIRECTORY"), "/tmp/nvidia-mps", os.environ.get("CUDA_MPS_LOG_DIRECTORY")):
        if extra and Path(extra).is_dir():
            folders.append(Path(extra))
    return folders
