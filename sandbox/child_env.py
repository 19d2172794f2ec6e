"""What a child process is given: an environment without secrets, and a scratch folder of its own.

Every process solforge starts for candidate-controlled work (see :mod:`solforge.sandbox.isolation`) gets
:func:`scrubbed_env`: only the variables a compiler or torch needs, none that look like a credential, the
JIT caches pointed under its own home. Trusted children (a warm judge) get :func:`trusted_child_env`, which
still drops the ledger's URL and tokens. Scratch folders carry :data:`SCRATCH_PREFIX`, so that
:func:`sweep_stale_scratch` finds those a crashed parent left behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

__all__ = [
    "SCRATCH_PREFIX",
    "make_scratch_dir",
    "remove_tree",
    "scratch_dir",
    "scrubbed_env",
    "sweep_stale_scratch",
    "trusted_child_env",
]

SCRATCH_PREFIX = "solforge-scratch-"
"""Name prefix of scratch folders, so a sweep can find those a crashed parent left behind."""

_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE|AUTH|COOKIE|SESSION"
    r"|DATABASE|_DSN$|_URL$|^DSN$|_URI$",
    re.IGNORECASE,
)
"""Names that never reach a child, even through ``extra``: tokens, keys and database URLs."""

_TOOLS_ON_PATH = ("gcc", "g++", "cc", "c++", "nvcc", "ninja", "ptxas", "c++filt", "cu++filt", "cuobjdump")
"""Programs whose folders the sandboxed PATH keeps, wherever the parent found them."""
_PASSTHROUGH = ("LD_LIBRARY_PATH", "CC", "CXX", "CUDAHOSTCXX", "MAX_JOBS", "TZ")
"""Harmless host settings a compiler or the CUDA runtime may need, copied when the parent has them."""


def _cuda_home() -> str | None:
    for candidate in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if candidate and Path(candidate).is_dir():
            return candidate
    nvcc = shutil.which("nvcc")
    return str(Path(nvcc).resolve().parent.parent) if nvcc else None


_LEDGER_SECRETS = ("SOLFORGE_DB", "SOLFORGE_TOKEN")
"""solforge's own variables that carry a database URL (with its password) or a bearer token."""


def trusted_child_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a trusted child that starts candidates (the judge): the parent's, less
    anything that looks like a secret.

    A candidate cannot read the judge's memory, but on some machines it can read the judge's
    ``/proc/<pid>/environ`` (a root-run sandbox keeps that right), so the judge must not hold the
    ledger's password, a bearer token or an agent's API key in its environment.
    """
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k not in _LEDGER_SECRETS and not _SECRET_NAME.search(k)}


def scrubbed_env(
    extra: Mapping[str, str] | None = None,
    gpu_index: int | None = None,
    *,
    scratch_dir: Path | None = None,
    jit_cache_dir: Path | None = None,
) -> dict[str, str]:
    """A minimal environment for a child: nothing of the parent's but a short allowlist.

    Parameters
    ----------
    extra
        Variables to add or override (``PYTHONPATH``, ``CUTE_DSL_ARCH``, ...). Names that look
        like secrets (tokens, keys, passwords, database URLs) are refused.
    gpu_index
        The physical GPU the child may see (``CUDA_VISIBLE_DEVICES``); None hides every GPU.
    scratch_dir
        The child's private folder: ``HOME`` and ``TMPDIR`` point into it (so nvcc's temporary
        files vanish with it). None uses the system temporary folder (for trusted tools only).
    jit_cache_dir
        Where the JIT caches (Triton, CuTe DSL, torch extensions, inductor, the CUDA driver's PTX
        cache) go. None puts them in ``scratch_dir``, so no candidate sees another's cache: a
        shared cache lets one candidate plant compiled kernels for another. Pass a folder owned by
        one solution to reuse its compiled kernels across its own runs.

    Returns
    -------
    dict[str, str]
        The complete environment.

    Raises
    ------
    ValueError
        ``extra`` names a variable that looks like a secret.
    """
    bad = sorted(name for name in (extra or {}) if _SECRET_NAME.search(name))
    if bad:
        raise ValueError(f"refusing to pass {bad} to a sandboxed child: they look like secrets")
    home = Path(scratch_dir) if scratch_dir is not None else Path(tempfile.gettempdir())
    tmp = home / "tmp" if scratch_dir is not None else home
    if scratch_dir is not None:
        tmp.mkdir(parents=True, exist_ok=True)
    jit = Path(jit_cache_dir) if jit_cache_dir is not None else home / "jit-cache"

    cuda_home = _cuda_home()
    path = [str(Path(sys.executable).parent)]  # the venv's ninja and console scripts
    if cuda_home:
        path.append(str(Path(cuda_home) / "bin"))
    # The host compilers where the parent finds them (some images keep gcc in /opt/gcc/bin): Triton
    # builds its launcher and inductor its kernels with them at run time, inside the sandbox.
    for tool in _TOOLS_ON_PATH:
        found = shutil.which(tool)
        if found:
            path.append(str(Path(found).parent))
    path += ["/usr/local/bin", "/usr/bin", "/bin"]

    env: dict[str, str] = {
        "PATH": os.pathsep.join(dict.fromkeys(path)),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONNOUSERSITE": "1",  # HOME moved; never pick up ~/.local packages either
        "PYTHONSAFEPATH": "1",  # the cwd is not importable: a candidate's torch.py shadows nothing
        "PYTHONDONTWRITEBYTECODE": "1",
        "NO_COLOR": "1",  # compilers and the CuTe DSL colour errors otherwise
        "TERM": "dumb",
        "CUDA_VISIBLE_DEVICES": "" if gpu_index is None else str(int(gpu_index)),
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",  # indices match nvidia-smi / NVML
        "TORCH_EXTENSIONS_DIR": str(jit / "torch_extensions"),
        "TRITON_CACHE_DIR": str(jit / "triton"),
        "CUTE_DSL_CACHE_DIR": str(jit / "cute_dsl"),
        "CUTE_DSL_DUMP_DIR": str(tmp),
        "TORCHINDUCTOR_CACHE_DIR": str(jit / "inductor"),
        "CUDA_CACHE_PATH": str(jit / "cuda"),
        "XDG_CACHE_HOME": str(jit / "xdg"),
    }
    if cuda_home:
        env["CUDA_HOME"] = cuda_home
    for name in _PASSTHROUGH:
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra or {})
    return env


# ---------------------------------------------------------------------------------------------
# Scratch folders


def make_scratch_dir(base: Path | None = None) -> Path:
    """Create a private (0700) scratch folder named ``solforge-scratch-*``.

    Parameters
    ----------
    base
        Parent folder; None uses the system temporary folder.

    Returns
    -------
    Path
        The new folder; remove it with :func:`remove_tree` (or use :func:`scratch_dir`).
    """
    if base is not None:
        Path(base).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=None if base is None else str(base)))


def remove_tree(path: Path | str) -> None:
    """Delete a folder even when a child left read-only files or folders in it; never raises."""

    def _onerror(func: Callable[..., object], target: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            parent = os.path.dirname(target)
            os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, stat.S_IRWXU)
            func(target)

    if os.path.lexists(path):
        shutil.rmtree(path, onerror=_onerror)  # rmtree never follows symlinks out of the tree


@contextlib.contextmanager
def scratch_dir(base: Path | None = None) -> Iterator[Path]:
    """A scratch folder for the length of a ``with`` block, removed afterwards."""
    path = make_scratch_dir(base)
    try:
        yield path
    finally:
        remove_tree(path)


def sweep_stale_scratch(base: Path | None = None, *, older_than_s: float = 6 * 3600) -> int:
    """Remove scratch folders that a killed parent left behind; returns how many were removed."""
    root = Path(base) if base is not None else Path(tempfile.gettempdir())
    cutoff = time.time() - older_than_s
    removed = 0
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            if not entry.name.startswith(SCRATCH_PREFIX):
                continue
            try:
                if entry.is_symlink() or entry.stat().st_mtime > cutoff or entry.stat().st_uid != os.getuid():
                    continue
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    raise
                continue
            remove_tree(entry)
            removed += 1
    return removed
