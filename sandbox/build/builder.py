"""``build_solution``: build a solution in an isolated child, through a content-addressed cache.

Cache layout, one folder per key::

    <cache_dir>/builds/<key>/
        src/            the sources as the solution gave them
        build/          cuda_cpp: torch's build folder with the extension (<module>.so)
        build.log       everything the compilers printed
        report.json     the BuildReport
        manifest.json   what the loaders need (language, module name, library path, entry)

The key is the SHA-256 of the solution's content hash, the toolchain versions, the target and the
build recipe. A build happens in ``builds/.stage-<key>-*`` and is renamed into place when it
finished (atomic on one filesystem), under a per-key file lock, so concurrent builders of the same
solution build once and readers never see half an entry. Successful builds and compile errors are
cached (both are deterministic); timeouts and crashed builds are not.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from solforge.problems import InfrastructureError, Language, Solution, Status
from solforge.sandbox.api import BuildReport
from solforge.sandbox.child_env import remove_tree, scratch_dir, scrubbed_env
from solforge.sandbox.isolation import IsolatedResult, run_isolated

from . import logs
from .toolchain import resolve_target_arch, toolchain_versions
from .worker import BuildRequest

__all__ = [
    "DEFAULT_BUILD_MEMORY_BYTES",
    "MANIFEST_NAME",
    "REPORT_NAME",
    "build_cache_key",
    "build_solution",
    "module_name_for",
]

DEFAULT_BUILD_MEMORY_BYTES = 16 * 1024**3
"""Address-space limit of the build child and each compiler it runs; heavy CUTLASS templates need
several GiB, a template bomb would take the machine."""
REPORT_NAME = "report.json"
MANIFEST_NAME = "manifest.json"
_REPORT_OUTPUT_BYTES = 4 * 1024 * 1024
"""The child's stdout carries only the report; allow a large one (many kernels)."""
_LOCK_POLL_S = 0.1
_STAGE_PREFIX = ".stage-"
_STALE_STAGE_S = 6 * 3600
"""A staging folder this old belongs to a builder that died (builds are limited to minutes)."""


def build_cache_key(solution: Solution, target_arch: str, *, import_check: bool = True) -> str:
    """SHA-256 over everything that decides the artifact: sources and flags, toolchain, target."""
    payload = {
        "solution": solution.content_hash(),
        "toolchain": toolchain_versions(),
        "target_arch": target_arch,
        # Only cute_dsl builds differ by it: with the import they compiled the kernels, without they did not.
        "import_check": import_check if solution.spec.language is Language.cute_dsl else None,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def module_name_for(key: str) -> str:
    """The extension's ``TORCH_EXTENSION_NAME``: unique per key so two builds never share a module name."""
    return f"solforge_ext_{key[:24]}"


def _load_cached(entry: Path) -> BuildReport | None:
    """The stored report when the entry is complete; None (and the entry removed) when it is not."""
    report_path = entry / REPORT_NAME
    if not report_path.is_file():
        return None
    try:
        report = BuildReport.model_validate_json(report_path.read_text())
        manifest = json.loads((entry / MANIFEST_NAME).read_text())
    except (OSError, ValueError, ValidationError):
        remove_tree(entry)
        return None
    library = manifest.get("library")
    if report.ok and library and not (entry / library).is_file():
        remove_tree(entry)  # someone pruned the artifact: build again
        return None
    return report


@contextlib.contextmanager
def _key_lock(path: Path, deadline: float) -> Iterator[bool]:
    """An exclusive flock on ``path``; yields False when it could not be had before ``deadline``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(_LOCK_POLL_S)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _failure(language: str, arch: str | None, status: Status, log: str, seconds: float) -> BuildReport:
    return BuildReport(ok=False, status=status, language=language, target_arch=arch, log=log, seconds=seconds)


def build_solution(
    solution: Solution,
    *,
    target_arch: str | None,
    cache_dir: Path,
    timeout_s: float,
    memory_limit_bytes: int | None = DEFAULT_BUILD_MEMORY_BYTES,
    import_check: bool = True,
    keep_spare: bool = False,
) -> BuildReport:
    """Build ``solution`` for ``target_arch`` in an isolated child, or return the cached build.

    Parameters
    ----------
    solution
        The candidate. cuda_cpp is compiled with nvcc as a torch extension; pytorch and triton are
        staged, byte-compiled and their entry point looked up (their code is not run); cute_dsl is
        staged, checked, and (with ``import_check``) imported so that its module-level
        ``cute.compile`` calls compile every kernel.
    target_arch
        ``sm_90a``, ``sm_100a``, ...; None: the visible GPU's, or sm_90a without one.
    cache_dir
        Root of the solforge cache; builds go to ``<cache_dir>/builds/<key>/``.
    timeout_s
        Budget for the whole build, waiting for another builder of the same key included. When it
        runs out the compiler's whole process tree is killed and the report says TIMEOUT.
    memory_limit_bytes
        Address-space limit of the build child and every compiler under it.
    import_check
        cute_dsl only: import the entry module in the child (the real compile check).
    keep_spare
        cuda_cpp only: after compiling, start the worker for the next build in this process, so that it
        has imported torch when the next changed source arrives (:mod:`solforge.sandbox.build.spare`).
        For long-lived callers: a warm judge, a worker's compile jobs.

    Returns
    -------
    BuildReport
        ``ok`` with kernels and warnings, or ``COMPILE_ERROR`` / ``TIMEOUT`` with a trimmed log that
        says what to fix. ``cached`` is True when nothing was compiled.

    Raises
    ------
    InfrastructureError
        The build child itself failed for a reason that is not the candidate's (a solforge bug, a
        broken toolchain install); the message carries the child's stderr.
    """
    started = time.monotonic()
    deadline = started + timeout_s
    language = solution.spec.language.value
    try:
        arch = resolve_target_arch(target_arch)
    except ValueError as exc:
        return _failure(language, target_arch, Status.COMPILE_ERROR, str(exc), 0.0)
    if solution.source(solution.spec.entry_file) is None:  # the model refuses this; constructed ones may not
        paths = [s.path for s in solution.sources]
        return _failure(
            language,
            arch,
            Status.COMPILE_ERROR,
            f"entry file {solution.spec.entry_file!r} (from spec.entry_point) is not among the sources {paths}",
            0.0,
        )

    key = build_cache_key(solution, arch, import_check=import_check)
    builds = Path(cache_dir) / "builds"
    builds.mkdir(parents=True, exist_ok=True)
    entry = builds / key

    def finish(report: BuildReport, *, cached: bool) -> BuildReport:
        return report.model_copy(
            update={
                "cached": cached,
                "seconds": time.monotonic() - started,
                "cache_key": key,
                "artifact_dir": str(entry),
            }
        )

    stored = _load_cached(entry)
    if stored is not None:
        return finish(stored, cached=True)

    with _key_lock(builds / ".locks" / f"{key}.lock", deadline) as locked:
        if not locked:
            return _failure(
                language,
                arch,
                Status.TIMEOUT,
                f"another build of this exact solution was still running after {timeout_s:g} s; try again "
                "shortly (its result will be cached) or raise the compile timeout",
                time.monotonic() - started,
            )
        stored = _load_cached(entry)  # built by whoever held the lock
        if stored is not None:
            return finish(stored, cached=True)

        _sweep_stale_stages(builds)
        stage = Path(tempfile.mkdtemp(prefix=f"{_STAGE_PREFIX}{key[:16]}-", dir=builds))
        try:
            from .staging import stage_sources

            try:
                stage_sources(solution, stage / "src")
            except ValueError as exc:
                return _failure(language, arch, Status.COMPILE_ERROR, str(exc), time.monotonic() - started)
            pch_dir = None
            if solution.spec.language is Language.cuda_cpp:
                from . import pch_cache

                found = pch_cache.find(Path(cache_dir), list(solution.spec.effective_compile_options.cflags))
                pch_dir = str(found) if found is not None else None
            request = BuildRequest(
                solution=solution,
                target_arch=arch,
                stage_dir=str(stage),
                module_name=module_name_for(key),
                import_check=import_check,
                pch_dir=pch_dir,
            )
            result = _run_worker(request, deadline, memory_limit_bytes, keep_spare=keep_spare)
            report, cacheable = _interpret(result, request, stage, timeout_s, memory_limit_bytes)
            report = report.model_copy(update={"seconds": time.monotonic() - started})
            if report.ok:
                from .lint import lint_warnings

                report = report.model_copy(update={"warnings": [*report.warnings, *lint_warnings(solution)]})
            if not cacheable:
                return report
            _write_entry(stage, report, request, key)
            try:
                os.rename(stage, entry)  # atomic publish; under the lock nobody else publishes this key
                stage = None
            except OSError:
                if _load_cached(entry) is None:  # a lock-ignoring writer beat us: keep theirs
                    raise
            return finish(report, cached=False)
        finally:
            if stage is not None:
                remove_tree(stage)


def _run_worker(request: BuildRequest, deadline: float, memory_limit_bytes: int | None, *,
                keep_spare: bool = False) -> IsolatedResult:
    from . import spare

    extra: dict[str, str] = {"CUTE_DSL_ARCH": request.target_arch}
    if os.environ.get("PYTHONPATH"):
        # Only so the child can import solforge the way this process did (a source checkout).
        extra["PYTHONPATH"] = os.environ["PYTHONPATH"]
    payload = request.model_dump_json().encode()
    cuda_cpp = request.solution.spec.language is Language.cuda_cpp
    waiting = spare.take_spare(extra, memory_limit_bytes) if cuda_cpp else None
    try:
        if waiting is not None:
            return waiting.run(payload, max(1.0, deadline - time.monotonic()), _REPORT_OUTPUT_BYTES)
        with scratch_dir() as scratch:
            return run_isolated(
                spare.worker_argv(preload=False),
                cwd=scratch,
                env=scrubbed_env(extra, None, scratch_dir=scratch),
                timeout_s=max(1.0, deadline - time.monotonic()),
                memory_limit_bytes=memory_limit_bytes,
                stdin_bytes=payload,
                output_limit_bytes=_REPORT_OUTPUT_BYTES,
            )
    finally:
        if cuda_cpp and keep_spare:
            spare.start_spare(extra, memory_limit_bytes)


def _interpret(
    result: IsolatedResult,
    request: BuildRequest,
    stage: Path,
    timeout_s: float,
    memory_limit_bytes: int | None,
) -> tuple[BuildReport, bool]:
    """The child's report, or one describing how the child died; and whether it may be cached
    (only what the compiler decided is deterministic: not a timeout, not a kill)."""
    language = request.solution.spec.language.value
    arch = request.target_arch
    if result.timed_out:
        tail = _log_tail(stage)
        return _failure(
            language,
            arch,
            Status.TIMEOUT,
            f"The build ran past its {timeout_s:g} s limit and was stopped (the compiler and every process it "
            "started were killed). Usual causes: runaway template or constexpr recursion, huge unrolled "
            "loops, very many template instantiations. Simplify that code or raise the compile timeout."
            + (f"\nLast compiler output:\n{tail}" if tail else ""),
            result.seconds,
        ), False
    for line in reversed(result.stdout.strip().splitlines()):
        try:
            report = BuildReport.model_validate_json(line)
        except ValidationError:
            continue
        if report.language != language or report.target_arch != arch:
            break  # not ours: something in the child printed a look-alike
        return report, True
    if result.killed_by_signal is not None:
        try:
            name = signal.Signals(result.killed_by_signal).name
        except ValueError:
            name = ""
        limit = f"{memory_limit_bytes / 1024**3:g} GiB" if memory_limit_bytes else "none"
        return _failure(
            language,
            arch,
            Status.COMPILE_ERROR,
            f"The build process was killed by signal {result.killed_by_signal} {name}. SIGKILL usually means it "
            f"ran out of memory (limit {limit}); reduce template instantiations or unrolling.\n"
            + logs.trim_compile_log(_log_tail(stage) + "\n" + result.stderr),
            result.seconds,
        ), False
    raise InfrastructureError(
        f"the build worker exited with status {result.returncode} without a report; stderr:\n{result.stderr[-4000:]}"
    )


def _sweep_stale_stages(builds: Path) -> None:
    cutoff = time.time() - _STALE_STAGE_S
    for stale in builds.glob(f"{_STAGE_PREFIX}*"):
        with contextlib.suppress(OSError):
            if stale.stat().st_mtime < cutoff:
                remove_tree(stale)


def _log_tail(stage: Path, lines: int = 15) -> str:
    try:
        text = (stage / "build.log").read_text(errors="replace")
    except OSError:
        return ""
    text = logs.shorten_paths(text, [stage / "src", stage / "build", stage])
    kept = [line for line in text.splitlines() if line.strip() and not line.startswith("[")][-lines:]
    return "\n".join(line[:300] for line in kept)


def _write_entry(stage: Path, report: BuildReport, request: BuildRequest, key: str) -> None:
    spec = request.solution.spec
    library = None
    if spec.language is Language.cuda_cpp and report.ok:
        candidate = Path("build") / f"{request.module_name}.so"
        library = str(candidate) if (stage / candidate).is_file() else None
    manifest = {
        "cache_key": key,
        "content_hash": request.solution.content_hash(),
        "language": spec.language.value,
        "target_arch": request.target_arch,
        "module_name": request.module_name,
        "library": library,
        "sources_dir": "src",
        "entry_file": spec.entry_file,
        "entry_symbol": spec.entry_symbol,
    }
    (stage / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2))
    # Stored with the build's own seconds; artifact_dir is filled in on reading (the folder may move).
    stored = report.model_copy(update={"cache_key": key, "cached": False, "artifact_dir": None})
    (stage / REPORT_NAME).write_text(stored.model_dump_json(indent=2))
