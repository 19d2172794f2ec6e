"""The compilers and libraries a build depends on: versions (for the cache key), targets and paths.

Nothing here imports torch, triton or the CuTe DSL: versions come from package metadata, so the
server can compute a cache key (and answer from the cache) without loading any toolchain.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = [
    "BUILD_RECIPE_VERSION",
    "DEFAULT_TARGET_ARCH",
    "cuda_home",
    "find_cuobjdump",
    "find_demangler",
    "gencode_flags",
    "has_arch_flag",
    "libcuda_link_flags",
    "normalize_arch",
    "nvidia_include_dir",
    "resolve_target_arch",
    "toolchain_versions",
    "torch_arch_list",
]

BUILD_RECIPE_VERSION = 1
"""Bumped whenever the way solforge builds changes (flags it adds, files it keeps), so old cache
entries stop matching."""
DEFAULT_TARGET_ARCH = "sm_90a"
"""Target when none is given and no GPU is visible (the H100/H200 generation)."""

_ARCH_RE = re.compile(r"^(?:sm_|sm|compute_)?(\d{2,3})([af]?)$")
_DOTTED_RE = re.compile(r"^(\d{1,2})\.(\d)([af]?)$")
_ARCH_FLAG_RE = re.compile(r"^(?:-arch|--gpu-architecture|-gencode|--generate-code|-code|--gpu-code)(?:=|$)")


def normalize_arch(target_arch: str) -> str:
    """Spell a target the way nvcc's ``code=`` does: ``sm_90a``, ``sm_100a``, ``sm_80``.

    Accepts ``sm_90a``, ``sm90a``, ``90a``, ``compute_90a`` and the dotted ``9.0a``.

    Raises
    ------
    ValueError
        Not a GPU architecture; the message lists valid spellings.
    """
    text = target_arch.strip().lower()
    dotted = _DOTTED_RE.match(text)
    if dotted:
        text = f"{dotted.group(1)}{dotted.group(2)}{dotted.group(3)}"
    match = _ARCH_RE.match(text)
    if not match:
        raise ValueError(
            f"target_arch {target_arch!r} is not a GPU architecture; use e.g. 'sm_90a' (H100/H200), "
            "'sm_100a' (B200/B300) or 'sm_80' (A100)"
        )
    return f"sm_{match.group(1)}{match.group(2)}"


def gencode_flags(target_arch: str) -> list[str]:
    """The nvcc flags that build SASS for ``target_arch`` and embed its PTX (for disassembly)."""
    number = normalize_arch(target_arch).removeprefix("sm_")
    return [f"-gencode=arch=compute_{number},code=[sm_{number},compute_{number}]"]


def torch_arch_list(target_arch: str) -> str:
    """``TORCH_CUDA_ARCH_LIST`` for the target: ``sm_90a`` -> ``9.0a``, ``sm_100a`` -> ``10.0a``."""
    match = _ARCH_RE.match(normalize_arch(target_arch).removeprefix("sm_"))
    assert match is not None  # normalize_arch validated it
    digits, suffix = match.group(1), match.group(2)
    return f"{digits[:-1]}.{digits[-1]}{suffix}"


def has_arch_flag(flags: list[str]) -> bool:
    """True when nvcc flags already choose the architecture (-arch, -gencode, -code, ...)."""
    return any(_ARCH_FLAG_RE.match(flag) for flag in flags)


def resolve_target_arch(target_arch: str | None, gpu_index: int | None = None) -> str:
    """The target to build for: the one given, else the visible GPU's, else :data:`DEFAULT_TARGET_ARCH`.

    The GPU is asked through NVML (no CUDA context). Hopper and Blackwell get their ``a`` variants,
    which the architecture-specific instructions (wgmma, TMA multicast, tcgen05) need.
    """
    if target_arch:
        return normalize_arch(target_arch)
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(gpu_index or 0)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML, no driver or no GPU: all mean "compile for the default"
        return DEFAULT_TARGET_ARCH
    suffix = "a" if major >= 9 else ""
    return f"sm_{major}{minor}{suffix}"


def cuda_home() -> Path | None:
    """The CUDA toolkit: ``$CUDA_HOME``, ``$CUDA_PATH``, ``/usr/local/cuda``, or where nvcc lives."""
    for candidate in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    nvcc = shutil.which("nvcc")
    return Path(nvcc).resolve().parent.parent if nvcc else None


def _nvcc() -> str | None:
    home = cuda_home()
    if home and (home / "bin" / "nvcc").exists():
        return str(home / "bin" / "nvcc")
    return shutil.which("nvcc")


def _site_packages_dirs() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or spec.submodule_search_locations is None:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def nvidia_include_dir() -> Path | None:
    """``<site-packages>/nvidia/cu<major>/include`` matching torch's CUDA, when installed.

    The pip-installed CUDA build of torch needs it: its headers include cuBLAS/cuSPARSE headers that
    a bare toolkit (like the CPU machines') lacks.
    """
    major = (toolchain_versions().get("torch_cuda") or "").split(".")[0]
    for root in _site_packages_dirs():
        preferred = root / f"cu{major}" / "include"
        if major and preferred.is_dir():
            return preferred
        found = sorted(root.glob("cu*/include"))
        if found:
            return found[-1]
    return None


def _tool(name: str, *extra_dirs: Path) -> str | None:
    home = cuda_home()
    dirs = [home / "bin"] if home else []
    for folder in [*dirs, *extra_dirs]:
        if (folder / name).exists():
            return str(folder / name)
    return shutil.which(name)


def find_cuobjdump() -> str | None:
    """cuobjdump from the toolkit, PATH, or the copy triton bundles."""
    bundled = [Path(p) / "triton" / "backends" / "nvidia" / "bin" for p in sys.path if p]
    return _tool("cuobjdump", *bundled)


def find_demangler() -> str | None:
    """cu++filt (knows CUDA's extensions) or, failing that, c++filt (the same Itanium ABI)."""
    return _tool("cu++filt") or shutil.which("c++filt")


@functools.cache
def _libcuda() -> tuple[str | None, bool]:
    """(folder holding a linkable ``libcuda.so``, whether a driver ``libcuda.so.1`` is loadable)."""
    home = cuda_home()
    dirs = [Path(p) for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    dirs += [Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64"), Path("/usr/lib"), Path("/lib64")]
    if home:
        dirs += [home / "lib64", home / "lib", home / "lib64" / "stubs", home / "lib" / "stubs"]
    link_dir = next((str(d) for d in dirs if (d / "libcuda.so").exists()), None)
    driver = any((d / "libcuda.so.1").exists() for d in dirs if "stubs" not in d.parts)
    return link_dir, driver


def libcuda_link_flags(ld_flags: list[str]) -> tuple[list[str], list[str]]:
    """Make ``-lcuda`` linkable here; returns (flags, warnings).

    With a toolkit stub or a driver the flag stays (plus ``-L`` for a stub folder). On a machine with
    neither (a CPU build box) it is dropped with a warning: the extension links anyway (shared
    objects may leave symbols undefined) and resolves the driver API where a driver exists.
    """
    if "-lcuda" not in ld_flags:
        return list(ld_flags), []
    link_dir, driver = _libcuda()
    if link_dir:
        return [*ld_flags, f"-L{link_dir}"], []
    if driver:
        return [("-l:libcuda.so.1" if flag == "-lcuda" else flag) for flag in ld_flags], []
    return [flag for flag in ld_flags if flag != "-lcuda"], [
        "-lcuda dropped: this build machine has no NVIDIA driver and no libcuda stub; driver API calls "
        "resolve when the module is loaded on a GPU machine"
    ]


def _read_torch_cuda() -> str | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    try:
        text = (Path(spec.origin).parent / "version.py").read_text()
    except OSError:
        return None
    match = re.search(r"^cuda\s*(?::[^=]*)?=\s*'([^']+)'", text, re.MULTILINE)
    return match.group(1) if match else None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def toolchain_versions() -> dict[str, str | None]:
    """Everything whose change could change a built artifact (part of the build cache key).

    Computed once per process: nvcc is asked for its version, the Python packages answer from
    their metadata (nothing is imported).
    """
    nvcc = _nvcc()
    nvcc_version = None
    if nvcc:
        try:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
            nvcc_version = " | ".join(out.strip().splitlines()[-2:]) or None
        except (OSError, subprocess.SubprocessError):
            nvcc_version = None
    link_dir, driver = _libcuda()
    home = cuda_home()
    return {
        "recipe": str(BUILD_RECIPE_VERSION),
        "python": sys.version.split()[0],
        "platform": f"{platform.system()}-{platform.machine()}",
        "nvcc": nvcc_version,
        "cuda_home": str(home) if home else None,
        "torch": _version("torch"),
        "torch_cuda": _read_torch_cuda(),
        "triton": _version("triton"),
        "cutlass_dsl": _version("nvidia-cutlass-dsl"),
        "libcuda": "link" if link_dir else ("driver" if driver else None),
    }
