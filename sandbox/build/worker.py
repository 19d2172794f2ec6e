"""The build child: ``python -m solforge.sandbox.build.worker`` reads a :class:`BuildRequest` (JSON)
on stdin, builds in the staging folder it names, and writes one :class:`BuildReport` JSON line on
stdout.

It always runs under :func:`solforge.sandbox.isolation.run_isolated` (see
:func:`solforge.sandbox.build.build_solution`): compilers fed candidate sources, and for cuda_cpp and
cute_dsl the import of the result, run here and nowhere else.

While it works, file descriptor 1 points at ``build.log`` in the staging folder, so that ninja,
nvcc, ptxas and anything the candidate prints land in the log, and the real stdout carries only the
report.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from solforge.problems import Language, Solution, Status
from solforge.sandbox.api import BuildReport, KernelResources

from . import logs
from .staging import check_entry_symbol, check_python_syntax
from .toolchain import gencode_flags, has_arch_flag, libcuda_link_flags, nvidia_include_dir, torch_arch_list

__all__ = ["COMPILED_SUFFIXES", "MAX_KERNELS", "BuildRequest", "build_in_worker", "main"]

COMPILED_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
"""C++ sources handed to the compiler; headers (.h, .cuh, .hpp) are only included."""
MAX_KERNELS = 256
"""Most kernels listed in a report (heavily templated code can instantiate thousands)."""

_PYBIND_RE = re.compile(r"\bPYBIND11_MODULE\s*\(\s*(\w+)")


class BuildRequest(BaseModel):
    """What the parent asks the build child to do."""

    model_config = ConfigDict(extra="forbid")

    solution: Solution
    target_arch: str
    """Normalised target, for example ``sm_90a``."""
    stage_dir: str
    """Absolute staging folder; sources are already in ``src/``, the build goes to ``build/``."""
    module_name: str
    """``TORCH_EXTENSION_NAME`` for cuda_cpp: unique per cache key, a valid identifier."""
    import_check: bool = True
    """cute_dsl: import the entry module so its module-level ``cute.compile`` calls run."""
    pch_dir: str | None = None
    """cuda_cpp: a folder holding a precompiled ``torch/extension.h`` (see :mod:`.pch`), or None."""


def _report(request: BuildRequest, *, ok: bool, log: str = "", **fields: object) -> BuildReport:
    return BuildReport(
        ok=ok,
        status=None if ok else fields.pop("status", Status.COMPILE_ERROR),  # type: ignore[arg-type]
        language=request.solution.spec.language.value,
        target_arch=request.target_arch,
        log=log,
        **fields,  # type: ignore[arg-type]
    )


def _read_log(stage: Path) -> str:
    sys.stdout.flush()
    try:
        return (stage / "build.log").read_text(errors="replace")
    except OSError:
        return ""


def _pybind_problem(request: BuildRequest) -> str | None:
    """A message when no C++ source binds the module the way torch's loader expects."""
    spec = request.solution.spec
    found = [m.group(1) for s in request.solution.sources for m in _PYBIND_RE.finditer(s.content)]
    snippet = (
        "    #include <torch/extension.h>\n    ...\n"
        "    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
        f'        m.def("{spec.entry_symbol}", &{spec.entry_symbol});\n'
        "    }"
    )
    if not found:
        return (
            "No PYBIND11_MODULE found in the C++ sources. solforge loads a cuda_cpp solution as a torch "
            f"extension, so the solution binds its entry point itself. Add to {spec.entry_file}:\n{snippet}"
        )
    if "TORCH_EXTENSION_NAME" not in found:
        return (
            f"PYBIND11_MODULE({found[0]}, ...) names the module {found[0]!r}; solforge builds it under a name of "
            f"its own, so write the macro exactly as:\n{snippet}"
        )
    return None


def _build_cuda_cpp(request: BuildRequest, stage: Path) -> BuildReport:
    solution = request.solution
    spec = solution.spec
    problem = _pybind_problem(request)
    if problem:
        return _report(request, ok=False, log=problem)

    src = stage / "src"
    build = stage / "build"
    build.mkdir(exist_ok=True)
    options = spec.effective_compile_options
    warnings: list[str] = []
    cuda_cflags = list(options.cuda_cflags)
    if has_arch_flag(cuda_cflags):
        warnings.append(
            f"compile_options.cuda_cflags choose the architecture; solforge's target {request.target_arch} "
            "was not added"
        )
    else:
        cuda_cflags += gencode_flags(request.target_arch)
    cuda_cflags.append("-Xptxas=-v")  # per-kernel registers, shared memory, spills
    ld_flags, link_warnings = libcuda_link_flags(list(options.ld_flags))
    warnings += link_warnings
    includes = [str(src)]
    cflags = list(options.cflags)
    if request.pch_dir:
        # After the solution's own folder: GCC takes torch/extension.h.gch from here when its flags
        # match and reads the header itself otherwise (-Winvalid-pch says why in the log).
        includes.append(request.pch_dir)
        cflags.append("-Winvalid-pch")
    nvidia = nvidia_include_dir()
    if nvidia is not None:
        includes.append(str(nvidia))
    sources = [str(src / s.path) for s in solution.sources if s.path.endswith(COMPILED_SUFFIXES)]
    # torch only uses the list when no -arch/-gencode is given, but keep it consistent with the target.
    os.environ["TORCH_CUDA_ARCH_LIST"] = torch_arch_list(request.target_arch)

    from torch.utils.cpp_extension import load

    module = None
    failure: BaseException | None = None
    import_failure: ImportError | None = None
    try:
        module = load(
            name=request.module_name,
            sources=sources,
            extra_cflags=cflags,
            extra_cuda_cflags=cuda_cflags,
            extra_ldflags=ld_flags,
            extra_include_paths=includes,
            build_directory=str(build),
            verbose=True,  # ninja then prints the compilers' output (errors, ptxas -v) to fd 1
            with_cuda=True,
        )
    except ImportError as exc:  # built, but the .so does not load
        import_failure = exc
    except Exception as exc:  # the compiler or the linker failed (RuntimeError from ninja)
        failure = exc

    text = logs.shorten_paths(_read_log(stage), [src, build, stage])
    if failure is not None:
        trimmed = logs.trim_compile_log(text)
        if not text.strip():
            trimmed = logs.shorten_paths(f"{type(failure).__name__}: {failure}", [src, build, stage])
        return _report(request, ok=False, log=trimmed, warnings=warnings)

    kernels = _kernels(text)
    warnings += logs.collect_warnings(text)
    if request.pch_dir and "extension.h.gch: not used" in text:
        warnings.append("the precompiled torch/extension.h was not used (its flags differ); the build read the header")
    for obj in build.glob("*.o"):  # the .so is the artifact; objects only fill the cache
        obj.unlink(missing_ok=True)

    if import_failure is not None:
        message = logs.shorten_paths(str(import_failure), [src, build, stage])
        symbol = re.search(r"undefined symbol: (\S+)", message)
        if symbol and symbol.group(1).startswith("cu") and link_warnings:
            warnings.append(
                f"the module needs the CUDA driver ({symbol.group(1)}), which this build machine lacks; "
                "it was compiled and linked but not imported"
            )
            return _report(request, ok=True, kernels=kernels, warnings=warnings)
        if symbol:
            readable = logs.demangle([symbol.group(1)])[symbol.group(1)]
            message = (
                f"The extension compiled but does not load: undefined symbol {readable}. A function is declared "
                "but never defined (a template not instantiated, a missing source file), or a library is "
                "missing from compile_options.ld_flags.\n" + message
            )
        elif "PyInit_" in message:
            message = f"{_pybind_problem_text(request)}\n{message}"
        return _report(
            request, ok=False, log=logs.trim_compile_log(message), kernels=kernels, warnings=warnings
        )

    if module is not None and not hasattr(module, spec.entry_symbol):
        defined = sorted(n for n in dir(module) if not n.startswith("_"))
        return _report(
            request,
            ok=False,
            log=(
                f"The extension built, but its PYBIND11_MODULE binds no {spec.entry_symbol!r} (it binds "
                f'{defined or "nothing"}). Add m.def("{spec.entry_symbol}", &{spec.entry_symbol}); or fix '
                "spec.entry_point."
            ),
            kernels=kernels,
            warnings=warnings,
        )
    return _report(request, ok=True, kernels=kernels, warnings=warnings, log="\n".join(warnings))


def _pybind_problem_text(request: BuildRequest) -> str:
    spec = request.solution.spec
    return (
        "The built library has no module init function: PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { "
        f'm.def("{spec.entry_symbol}", &{spec.entry_symbol}); }} must be compiled in (not commented out or '
        "behind an #if)."
    )


def _kernels(text: str) -> list[KernelResources]:
    kernels = logs.parse_ptxas(text)[:MAX_KERNELS]
    names = logs.demangle(k.mangled or k.name for k in kernels)
    for kernel in kernels:
        kernel.name = names.get(kernel.mangled or kernel.name, kernel.name)
    return kernels


def _check_python(request: BuildRequest, stage: Path) -> BuildReport | None:
    """Syntax of every .py and presence of the entry symbol; a report when either fails."""
    src = stage / "src"
    errors = check_python_syntax(request.solution, src, Path(os.environ.get("TMPDIR", stage)) / "pyc")
    if errors:
        return _report(request, ok=False, log=logs.cap_log("\n\n".join(errors)))
    missing = check_entry_symbol(request.solution)
    if missing:
        return _report(request, ok=False, log=missing)
    return None


def _import_cute_entry(request: BuildRequest, stage: Path) -> BuildReport:
    """Import the entry module: by convention cute_dsl solutions call ``cute.compile`` at module level
    (on fake tensors), so the import compiles every kernel for ``CUTE_DSL_ARCH``."""
    src = stage / "src"
    spec = request.solution.spec
    sys.path.insert(0, str(src))  # sibling modules of the entry import by plain name
    name = f"solforge_candidate_{request.module_name}"
    module_spec = importlib.util.spec_from_file_location(name, src / spec.entry_file)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    started = time.monotonic()
    try:
        module_spec.loader.exec_module(module)
    except BaseException as exc:  # SystemExit too: anything the import raises is the candidate's
        if isinstance(exc, KeyboardInterrupt):
            raise
        log = logs.format_python_exception(exc, source_root=src)
        if re.search(r"no CUDA GPUs|CUDA driver|cudaGetDevice|no kernel image|device=.?cuda", log, re.I):
            log += (
                "\nBuilds run without a GPU: create the compile-time arguments of cute.compile with "
                "cutlass.cute.runtime.make_fake_compact_tensor (and cute.sym_int() for dynamic sizes), not "
                "with CUDA tensors."
            )
        return _report(request, ok=False, log=log)
    if not callable(getattr(module, spec.entry_symbol, None)):
        return _report(
            request, ok=False, log=f"after import, {spec.entry_file} has no callable {spec.entry_symbol!r}"
        )
    seconds = time.monotonic() - started
    return _report(
        request, ok=True, log=f"imported {spec.entry_file} for {request.target_arch} in {seconds:.1f} s"
    )


def build_in_worker(request: BuildRequest) -> BuildReport:
    """Build the staged solution (in this process: call it only inside the isolated child)."""
    stage = Path(request.stage_dir)
    language = request.solution.spec.language
    if language is Language.cuda_cpp:
        return _build_cuda_cpp(request, stage)
    if language in (Language.pytorch, Language.triton, Language.cute_dsl):
        failed = _check_python(request, stage)
        if failed is not None:
            return failed
        if language is Language.cute_dsl and request.import_check:
            return _import_cute_entry(request, stage)
        return _report(request, ok=True)
    return _report(request, ok=False, log=f"solforge cannot build language {language!r}")


def main(argv: list[str] | None = None) -> int:
    """Entry of the child process; returns the exit status."""
    if "--preload" in (sys.argv[1:] if argv is None else argv):
        # A spare worker (build/spare.py): torch's extension builder is ready before any request exists.
        # A failure here shows again, with its message, where the build imports it.
        with contextlib.suppress(Exception):
            import torch.utils.cpp_extension  # noqa: F401
    request = BuildRequest.model_validate_json(sys.stdin.buffer.read())
    stage = Path(request.stage_dir)
    report_fd = os.dup(1)
    log_fd = os.open(stage / "build.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    os.dup2(log_fd, 1)
    os.close(log_fd)
    os.set_inheritable(report_fd, False)  # compilers started from here must not write the report
    # Compilers and a CuTe DSL import run candidate-controlled work: from here on only the build output
    # folder and the scratch folder are writable (not src/, which becomes the cache entry's sources,
    # nor any other cache entry). Best effort: a kernel without Landlock builds unconfined.
    from solforge.sandbox.defences.confinement import confine_process

    (stage / "build").mkdir(exist_ok=True)
    scratch = Path(os.environ.get("HOME") or stage)
    confine_process([stage / "build", scratch, Path(os.environ.get("TMPDIR") or scratch), Path("/dev")])
    report = build_in_worker(request)
    sys.stdout.flush()
    os.write(report_fd, (report.model_dump_json() + "\n").encode())
    os.close(report_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
