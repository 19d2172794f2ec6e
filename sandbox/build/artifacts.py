"""Using a finished build: load the module (inside the candidate process) or look at its machine code.

:func:`load_built_module` and :func:`load_python_entry` import candidate code into the calling
process: call them only inside a sandboxed candidate process, never in the server or the planner.
:func:`disassemble` only reads the binary (with cuobjdump, itself run isolated).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from solforge.problems import Language, Solution
from solforge.sandbox.api import BuildReport
from solforge.sandbox.child_env import scratch_dir, scrubbed_env
from solforge.sandbox.isolation import run_isolated

from .builder import MANIFEST_NAME
from .toolchain import find_cuobjdump

__all__ = ["DISASSEMBLY_LIMIT_CHARS", "disassemble", "load_built_module", "load_entry", "load_python_entry"]

DISASSEMBLY_LIMIT_CHARS = 200_000
"""Longest disassembly returned (a big templated kernel runs to megabytes of SASS)."""

_ENCODING_RE = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/")


def _manifest(report: BuildReport) -> dict[str, Any]:
    if not report.ok:
        raise ValueError(f"the build failed ({report.status}); there is nothing to load")
    if not report.artifact_dir:
        raise ValueError("the report names no artifact_dir; build it with build_solution first")
    path = Path(report.artifact_dir) / MANIFEST_NAME
    try:
        manifest: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise FileNotFoundError(
            f"no readable {MANIFEST_NAME} in {report.artifact_dir}; rebuild the solution"
        ) from exc
    return manifest


def _library(report: BuildReport) -> tuple[Path, dict[str, Any]]:
    manifest = _manifest(report)
    if manifest.get("language") != Language.cuda_cpp.value or not manifest.get("library"):
        raise ValueError(
            f"a {manifest.get('language')} build has no compiled library (only cuda_cpp builds do)"
        )
    library = Path(report.artifact_dir or "") / manifest["library"]
    if not library.is_file():
        raise FileNotFoundError(f"the built library {library} is missing; rebuild the solution")
    return library, manifest


def load_built_module(report: BuildReport) -> ModuleType:
    """Import the compiled torch extension of a cuda_cpp build.

    Raises
    ------
    ValueError
        The build failed or is not a cuda_cpp build.
    FileNotFoundError
        The cache entry lost its library.
    ImportError
        The library does not load here (for example it needs the CUDA driver and none is installed).
    """
    library, manifest = _library(report)
    name = manifest["module_name"]
    if name in sys.modules:
        return sys.modules[name]
    import torch  # noqa: F401  (loads libc10/libtorch, which the extension links against)

    loader = importlib.machinery.ExtensionFileLoader(name, str(library))
    spec = importlib.util.spec_from_loader(name, loader, origin=str(library))
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def load_python_entry(report: BuildReport, solution: Solution) -> Callable[..., Any]:
    """Import the entry file of a pytorch/triton/cute_dsl build and return its entry function.

    The sources folder goes to the front of ``sys.path`` so the entry's sibling modules import by
    plain name, as they would next to each other on disk.

    Raises
    ------
    ValueError
        The build failed, belongs to another solution, or is a cuda_cpp build.
    AttributeError
        The module has no callable entry symbol.
    """
    manifest = _manifest(report)
    if manifest.get("content_hash") != solution.content_hash():
        raise ValueError("this build is of a different solution (content hashes differ)")
    if manifest.get("language") == Language.cuda_cpp.value:
        raise ValueError("a cuda_cpp build loads with load_built_module")
    src = Path(report.artifact_dir or "") / manifest["sources_dir"]
    name = f"solforge_candidate_{manifest['module_name']}"
    module = sys.modules.get(name)
    if module is None:
        if str(src) not in sys.path:
            sys.path.insert(0, str(src))
        spec = importlib.util.spec_from_file_location(name, src / manifest["entry_file"])
        if spec is None or spec.loader is None:
            raise ValueError(f"cannot import {manifest['entry_file']}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    entry = getattr(module, manifest["entry_symbol"], None)
    if not callable(entry):
        raise AttributeError(f"{manifest['entry_file']} has no callable {manifest['entry_symbol']!r}")
    return entry


def load_entry(report: BuildReport, solution: Solution) -> Callable[..., Any]:
    """The solution's entry function, whatever its language."""
    if solution.spec.language is Language.cuda_cpp:
        entry = getattr(load_built_module(report), solution.spec.entry_symbol, None)
        if not callable(entry):
            raise AttributeError(f"the extension binds no callable {solution.spec.entry_symbol!r}")
        return entry
    return load_python_entry(report, solution)


def _resolve_kernel(report: BuildReport, kernel_name: str) -> str:
    """The mangled name of the kernel the caller means (mangled, demangled, or the bare function name)."""
    for kernel in report.kernels:
        mangled = kernel.mangled or kernel.name
        signature = kernel.name.split("(")[0]  # "void ns::kernel<256>"
        words = signature.split("<")[0].split()
        bare = words[-1].split("::")[-1] if words else signature
        if kernel_name in (mangled, kernel.name, signature, signature.removeprefix("void "), bare):
            return mangled
    matches = [k.mangled or k.name for k in report.kernels if kernel_name in k.name]
    if len(matches) == 1:
        return matches[0]
    known = [k.name for k in report.kernels]
    if matches:
        raise ValueError(f"{kernel_name!r} matches several kernels {known}; give the full name")
    raise ValueError(f"no kernel {kernel_name!r} in this build; it has {known or 'no kernels'}")


def _ptx_entry(ptx: str, mangled: str) -> str | None:
    lines = ptx.splitlines()
    for start, line in enumerate(lines):
        if re.search(rf"\.entry\s+{re.escape(mangled)}\s*\(", line):
            end = start
            while end < len(lines) and lines[end] != "}":
                end += 1
            return "\n".join(lines[start : end + 1])
    return None


def disassemble(
    report: BuildReport,
    kernel_name: str,
    kind: Literal["ptx", "sass"] = "sass",
    *,
    limit_chars: int = DISASSEMBLY_LIMIT_CHARS,
) -> str:
    """SASS or PTX of one kernel of a cuda_cpp build, read from the built library with cuobjdump.

    Parameters
    ----------
    report
        A successful cuda_cpp :class:`BuildReport`.
    kernel_name
        The kernel as listed in ``report.kernels`` (demangled or mangled), or its bare function name.
    kind
        ``sass`` (the machine code that runs) or ``ptx`` (embedded for the target by solforge's
        ``-gencode``; absent when the solution chose its own architecture flags without PTX).
    limit_chars
        Longest text returned; a longer listing is cut and says so.

    Raises
    ------
    ValueError
        Not a cuda_cpp build, unknown kernel, or no such code in the binary.
    FileNotFoundError
        cuobjdump is not installed.
    """
    if kind not in ("ptx", "sass"):
        raise ValueError(f"kind must be 'ptx' or 'sass', not {kind!r}")
    library, _ = _library(report)
    mangled = _resolve_kernel(report, kernel_name)
    tool = find_cuobjdump()
    if tool is None:
        raise FileNotFoundError("cuobjdump not found (CUDA toolkit bin/, PATH, or triton's bundled copy)")
    argv = [tool, "-sass", "-fun", mangled, str(library)] if kind == "sass" else [tool, "-ptx", str(library)]
    with scratch_dir() as scratch:
        result = run_isolated(
            argv,
            cwd=scratch,
            env=scrubbed_env(scratch_dir=scratch),
            timeout_s=120,
            output_limit_bytes=64 * 1024**2,
        )
    if not result.ok:
        raise ValueError(f"cuobjdump failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    if kind == "sass":
        text = "\n".join(
            stripped
            for line in result.stdout.splitlines()
            if (stripped := _ENCODING_RE.sub("", line).rstrip())
        )
        if "Function :" not in text:
            raise ValueError(f"no SASS for {mangled} in the library")
    else:
        found = _ptx_entry(result.stdout, mangled)
        if found is None:
            raise ValueError(
                f"no PTX for {mangled} in the library (the solution's own -gencode flags embed no PTX)"
            )
        text = found
    if len(text) > limit_chars:
        text = text[:limit_chars] + f"\n[cut at {limit_chars} characters of {len(text)}]"
    return text
