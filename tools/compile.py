"""compile_kernel: build a solution without a GPU lease and report errors, warnings and per-kernel resources.

The build runs in the sandbox's judge process (``evaluate`` with ``compile_only``), never in the
server. Builds run on a small thread pool shared by all callers; a second call with the same solution
joins the build in flight, and an unchanged solution answers from the sandbox's build cache.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import anyio
from pydantic import Field

from solforge.problems import Language
from solforge.sandbox.build.sass import InstructionMix

from .base import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MAX_WAIT_S, ToolContext, ToolResult, clip, clip_lines
from .errors import ToolInputError
from .solutions import SolutionInput, solution_and_problem

if TYPE_CHECKING:
    from solforge.problems import Problem, Solution
    from solforge.sandbox.api import BuildReport

log = logging.getLogger(__name__)

_ERROR_RE = re.compile(r"\berror\b|Error:|Traceback|FAILED", re.IGNORECASE)
_WARNING_RE = re.compile(r"\bwarning\b", re.IGNORECASE)


class CompileKernelInput(SolutionInput):
    """What to build and what to show."""

    target_arch: str | None = Field(default=None, pattern=r"^sm_\d{2,3}[af]?$")
    """Compile target such as 'sm_90a' (H100/H200) or 'sm_100a' (B200); default: this server's GPU, or sm_90a."""
    disassemble: Literal["none", "ptx", "sass"] = "none"
    """Also return the PTX or SASS of one kernel (C++ solutions)."""
    kernel: str | None = Field(default=None, max_length=300)
    """Which kernel to disassemble (substring of its name); default the first one."""
    loop: int | None = Field(default=None, ge=1, le=10_000)
    """SASS only: just this loop (1 = first, outer before inner)."""
    wait_s: float = Field(default=45.0, ge=0.0, le=MAX_WAIT_S)
    """Seconds to wait for the build; then 'still building' (call again to keep waiting)."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Largest answer in characters (logs and disassembly are cut to fit)."""


class KernelInfo(ToolResult):
    """Resources of one compiled kernel, as ptxas reports them."""

    name: str
    registers: int | None = None
    """Registers per thread (occupancy falls as this grows; 255 is the maximum)."""
    shared_bytes: int | None = None
    """Static shared memory per block."""
    spill_stores_bytes: int | None = None
    spill_loads_bytes: int | None = None
    stack_bytes: int | None = None


class CompileKernelResult(ToolResult):
    """The outcome of a build."""

    state: Literal["done", "building", "failed"]
    """'building': not finished yet (queued or running, see job_state); call compile_kernel again with
    the same solution to wait for it. 'failed': the build job itself failed (the harness, not your code);
    the note says why."""
    job_id: str | None = None
    """The compile job in the ledger, when this server has one."""
    job_state: Literal["queued", "running"] | None = None
    """While building through the ledger: whether the compile job waits in the queue or runs on a worker."""
    queue_position: int | None = None
    """Jobs ahead of a queued compile job."""
    live_workers: int | None = None
    """Workers alive on the ledger, reported while the job is queued; 0 means no worker serves the queue."""
    ok: bool | None = None
    """True when the solution built. For Python languages that means the sources byte-compiled (no syntax
    error); nothing is imported here, so a failing import shows up when run_benchmark loads the module."""
    status: str | None = None
    """COMPILE_ERROR or TIMEOUT when not ok."""
    problem: str
    solution: str
    language: str
    target_arch: str | None = None
    cached: bool = False
    """The build came from the cache (the solution did not change)."""
    seconds: float = 0.0
    errors: list[str] = Field(default_factory=list)
    """The first error lines of the log."""
    warnings: list[str] = Field(default_factory=list)
    log: str = ""
    """The build log, cut to fit; errors first."""
    log_truncated: bool = False
    kernels: list[KernelInfo] = Field(default_factory=list)
    disassembly: str | None = None
    disassembly_kind: str | None = None
    disassembly_kernel: str | None = None
    disassembly_truncated: bool = False
    instruction_mix: InstructionMix | None = None
    """SASS only: the shown code's instruction mix."""
    loops: int | None = None
    """SASS only: how many loops the kernel has."""
    note: str | None = None
    next_step: str

    def render(self) -> str:
        if self.state == "building":
            return self._render_waiting()
        if self.state == "failed":
            return f"The build job for {self.solution} failed in the harness: {self.note}. {self.next_step}"
        head = (
            f"{'OK' if self.ok else 'FAILED'}: {self.solution} ({self.language}) for {self.problem}"
            f"{' on ' + self.target_arch if self.target_arch else ''}, {self.seconds:.1f} s"
            f"{' (cached)' if self.cached else ''}{'' if self.ok else ' - ' + str(self.status)}"
        )
        out = [head]
        if self.note:
            out.append(f"note: {self.note}")
        if self.errors:
            out.append("errors:")
            out += [f"  {e}" for e in self.errors]
        if self.warnings:
            out.append("warnings:")
            out += [f"  {w}" for w in self.warnings]
        if self.kernels:
            out.append(
                "kernels (registers/thread, static smem bytes, spill stores/loads bytes, stack bytes):"
            )
            for k in self.kernels:
                out.append(
                    f"  {k.name}: regs {k.registers if k.registers is not None else '?'}, "
                    f"smem {k.shared_bytes if k.shared_bytes is not None else '?'}, "
                    f"spills {k.spill_stores_bytes or 0}/{k.spill_loads_bytes or 0}, stack {k.stack_bytes or 0}"
                )
        if self.log and not self.ok:
            out.append("log:\n" + self.log)
        if self.instruction_mix is not None:
            out.append(f"instruction mix of what is shown: {self.instruction_mix.summary()}")
        if self.loops is not None:
            out.append(f"loops in the kernel: {self.loops}" + (" (loop=N shows one)" if self.loops else ""))
        if self.disassembly is not None:
            out.append(f"{self.disassembly_kind} of {self.disassembly_kernel}:\n{self.disassembly}")
        out.append(f"Next: {self.next_step}")
        return "\n".join(out)

    def _render_waiting(self) -> str:
        what = f"{self.solution} for {self.problem}"
        if self.job_state == "queued":
            ahead = self.queue_position or 0
            text = (
                f"Queued: the compile job for {what} has waited {self.seconds:.0f} s and has not started"
                f" ({ahead} job{'' if ahead == 1 else 's'} ahead)."
            )
            if self.live_workers == 0:
                text += (
                    " No worker serves this ledger's queue (none is registered and alive), so it will not"
                    " start until one does."
                )
            return f"{text} {_sentence(self.next_step)}"
        where = " on a worker" if self.job_state == "running" else ""
        return f"Still building {what}{where} ({self.seconds:.0f} s so far). {_sentence(self.next_step)}"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_inflight: dict[tuple[str, str | None], tuple[float, concurrent.futures.Future[BuildReport]]] = {}


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            workers = max(1, min(4, (os.cpu_count() or 2) // 2))
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=workers, thread_name_prefix="solforge-build"
            )
        return _pool


def _build(problem: Problem, solution: Solution, target_arch: str | None, ctx: ToolContext) -> BuildReport:
    from solforge.problems import InfrastructureError
    from solforge.sandbox.api import BuildReport, EvalOptions, EvalRequest
    from solforge.sandbox.evaluate import evaluate

    options = EvalOptions(
        compile_only=True,
        target_arch=target_arch,
        cache_dir=ctx.settings.cache_dir,
        compile_timeout_s=ctx.settings.compile_timeout_s,
        time_baseline=False,
    )
    where = str(problem.folder) if problem.folder is not None else problem.name
    report = evaluate(EvalRequest(problem=where, solution=solution, options=options))
    if report.build is None:
        raise InfrastructureError(f"the sandbox returned no build report ({report.note or 'no note'})")
    return BuildReport.model_validate(report.build.model_dump())


def start_build(
    problem: Problem, solution: Solution, target_arch: str | None, ctx: ToolContext
) -> tuple[float, concurrent.futures.Future[BuildReport]]:
    """Start building ``solution`` (or join the build of the same content in flight)."""
    key = (solution.content_hash(), target_arch)
    with _pool_lock:
        current = _inflight.get(key)
        if current is not None and not current[1].done():
            return current
    future = _executor().submit(_build, problem, solution, target_arch, ctx)
    entry = (time.monotonic(), future)
    with _pool_lock:
        _inflight[key] = entry
        for k in [k for k, (_, f) in _inflight.items() if f.done() and k != key]:
            del _inflight[k]
    return entry


@dataclass(frozen=True)
class CodeView:
    """One kernel's code as compile_kernel shows it."""

    kernel: str
    text: str
    mix: InstructionMix | None = None
    loops: int | None = None


def _code_view(report: BuildReport, args: CompileKernelInput) -> CodeView:
    """The disassembly ``args`` asks for: one kernel, or one loop of it, with the SASS's instruction mix."""
    from solforge.sandbox.build.sass import instruction_mix, loop_text, loops

    if args.loop is not None and args.disassemble != "sass":
        raise ToolInputError("loop applies to SASS only: pass disassemble='sass' with it")
    name, text = _disassemble(report, args.kernel, args.disassemble)
    if args.disassemble != "sass":
        return CodeView(name, text)
    found = len(loops(text))
    if args.loop is not None:
        try:
            text, _, found = loop_text(text, args.loop)
        except ValueError as exc:
            raise ToolInputError(f"{exc}; call again without loop, or with a loop number in range") from exc
    return CodeView(name, text, instruction_mix(text), found)


def _disassemble(report: BuildReport, kernel: str | None, kind: str) -> tuple[str, str]:
    from solforge.sandbox.build import disassemble

    names = [k.name for k in report.kernels]
    if not names:
        raise ToolInputError(
            "the build reported no kernels to disassemble (Python solutions have none before they run)"
        )
    chosen = names[0]
    if kernel:
        matches = [n for n in names if kernel in n]
        if not matches:
            raise ToolInputError(f"no kernel matches {kernel!r}; kernels: {names[:20]}")
        chosen = matches[0]
    try:
        return chosen, str(disassemble(report, chosen, kind))  # type: ignore[arg-type]
    except (ValueError, FileNotFoundError) as exc:
        raise ToolInputError(f"cannot disassemble {chosen!r}: {exc}") from exc


def build_result(
    report: BuildReport, problem: str, solution: str, args: CompileKernelInput, disasm: CodeView | None
) -> CompileKernelResult:
    """Shape a BuildReport into the agent's answer, within ``args.max_chars``."""
    lines = report.log.splitlines()
    errors, _ = clip_lines([ln.strip() for ln in lines if _ERROR_RE.search(ln)], 20, args.max_chars // 4)
    warning_src = report.warnings or [ln.strip() for ln in lines if _WARNING_RE.search(ln)]
    warnings, more_w = clip_lines(warning_src, 10, args.max_chars // 8)
    if more_w:
        warnings.append(f"... {more_w} more warnings")
    kernels = [
        KernelInfo(
            name=k.name[:200],
            registers=k.registers,
            shared_bytes=k.shared_bytes,
            spill_stores_bytes=k.spill_stores_bytes,
            spill_loads_bytes=k.spill_loads_bytes,
            stack_bytes=k.stack_bytes,
        )
        for k in report.kernels[:24]
    ]
    if report.ok:
        nxt = "run_benchmark with the same solution to check correctness and time it."
        if args.disassemble == "none" and kernels:
            nxt += " (compile_kernel with disassemble='sass' or 'ptx' shows a kernel's code.)"
    else:
        nxt = "fix the errors above and call compile_kernel again (read_docs(query=...) for the language's rules)."
    result = CompileKernelResult(
        state="done",
        note=_PYTHON_NOTE if report.ok and report.language in _PYTHON_LANGUAGES else None,
        ok=report.ok,
        status=str(report.status) if report.status else None,
        problem=problem,
        solution=solution,
        language=report.language,
        target_arch=report.target_arch,
        cached=report.cached,
        seconds=round(report.seconds, 2),
        errors=errors,
        warnings=warnings,
        kernels=kernels,
        next_step=nxt,
    )
    used = len(result.render()) + 300
    room = max(500, args.max_chars - used)
    if disasm is not None:
        name, text = disasm.kernel, disasm.text
        result.instruction_mix, result.loops = disasm.mix, disasm.loops
        result.disassembly_kernel = name[:200]
        result.disassembly_kind = args.disassemble
        share = room * 2 // 3 if not report.ok else room
        result.disassembly, result.disassembly_truncated = clip(
            text, share, hint="call again with a larger max_chars or a kernel filter"
        )
        room -= len(result.disassembly)
    if not report.ok or args.max_chars > DEFAULT_MAX_CHARS:
        result.log, result.log_truncated = clip(
            report.log, max(300, room), hint="call again with a larger max_chars"
        )
    return result


_PYTHON_LANGUAGES = frozenset(lang.value for lang in Language if not lang.is_cpp)
_PYTHON_NOTE = (
    "Python sources are byte-compiled and their entry point is looked up here; their imports run when "
    "run_benchmark loads the module."
)

_compile_jobs: dict[tuple[str, str, str | None], str] = {}
"""(agent, solution hash, target) -> the compile job in flight for it, so a repeated call joins it."""


async def _compile_in_ledger(
    problem: Problem, solution: Solution, target: str | None, args: CompileKernelInput, ctx: ToolContext
) -> CompileKernelResult:
    from .ledger_port import enqueue, job_for, live_workers, open_compile_job, wait_for

    key = (ctx.agent, solution.content_hash(), target)
    job_id = _compile_jobs.get(key)
    if job_id is None and target == ctx.settings.target_arch:
        # Another server process (or this one before a restart) may have queued the same build; the
        # ledger's job list does not record the target, so only a default-target build is joined this way.
        job_id = await open_compile_job(ctx, problem, solution)
    snap = None
    if job_id is not None:
        snap = await job_for(ctx, job_id)
        if snap.state in ("failed", "cancelled"):
            snap = None
    if snap is None:
        job_id = await enqueue(ctx, "compile", problem, solution, target_arch=target)
        _compile_jobs[key] = job_id
        snap = await job_for(ctx, job_id)
    assert job_id is not None
    deadline = time.monotonic() + args.wait_s
    step = 0
    while not snap.terminal and time.monotonic() < deadline:
        step += 1
        await ctx.progress(float(step), None, snap.progress or f"compile job {snap.state}")
        snap = await wait_for(ctx, job_id, min(1.0, max(0.0, deadline - time.monotonic())))
    common = {
        "job_id": job_id,
        "problem": problem.name,
        "solution": solution.name,
        "language": solution.spec.language.value,
        "target_arch": target,
        "seconds": round(snap.elapsed_s or 0.0, 1),
    }
    if not snap.terminal:
        queued = snap.state == "queued"
        workers = await live_workers(ctx) if queued else None
        if workers == 0:
            nxt = (
                "start a worker on the same ledger (`solforge worker`, or `solforge serve` without"
                f" --no-workers), then call compile_kernel again; cancel_job(job_id={job_id!r}) drops it."
            )
        else:
            nxt = "call compile_kernel again with the same solution to keep waiting (the build continues)."
        return CompileKernelResult(
            state="building",
            job_state="queued" if queued else "running",
            queue_position=snap.queue_position if queued else None,
            live_workers=workers,
            next_step=nxt,
            **common,
        )
    _compile_jobs.pop(key, None)
    report = snap.build or (snap.report.build if snap.report is not None else None)
    if snap.state != "done" or report is None:
        return CompileKernelResult(
            state="failed",
            note=snap.error or f"the compile job ended {snap.state} without a build report",
            next_step="call compile_kernel again; if it fails the same way, report it.",
            **common,
        )
    disasm = None
    if args.disassemble != "none" and report.ok:
        disasm = await anyio.to_thread.run_sync(_code_view, report, args)
    result = build_result(report, problem.name, solution.name, args, disasm)
    result.job_id = job_id
    return result


async def compile_kernel(args: CompileKernelInput, ctx: ToolContext) -> CompileKernelResult:
    """Build a solution for its target without a GPU lease.

    With a ledger the build is a compile job (any worker's CPU, fair between agents); without one it
    runs on this server's build pool. Either way it runs in the sandbox's processes, not here.

    Raises
    ------
    ToolInputError, FormatError, ProblemNotFound
        For a malformed solution or an unknown problem, before anything is built.
    """
    solution, problem = solution_and_problem(args, ctx)
    target = args.target_arch or ctx.settings.target_arch
    if ctx.services.has_ledger:
        return await _compile_in_ledger(problem, solution, target, args, ctx)
    started, future = start_build(problem, solution, target, ctx)
    deadline = time.monotonic() + args.wait_s
    tick = 0
    while not future.done() and time.monotonic() < deadline:
        await anyio.sleep(0.1)
        tick += 1
        if tick % 20 == 0:
            elapsed = time.monotonic() - started
            await ctx.progress(elapsed, None, f"building {solution.name} ({elapsed:.0f} s)")
    if not future.done():
        return CompileKernelResult(
            state="building",
            problem=problem.name,
            solution=solution.name,
            language=solution.spec.language.value,
            target_arch=target,
            seconds=round(time.monotonic() - started, 1),
            next_step="call compile_kernel again with the same solution to keep waiting (the build continues).",
        )
    report = future.result()
    disasm = None
    if args.disassemble != "none" and report.ok:
        disasm = await anyio.to_thread.run_sync(_code_view, report, args)
    return build_result(report, problem.name, solution.name, args, disasm)
