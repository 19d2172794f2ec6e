"""The typed contract of the sandbox: what callers ask for and what comes back.

Callers (the CLI, the planner's workers, tests) build an :class:`EvalRequest` and call
:func:`solforge.sandbox.evaluate.evaluate`, which runs the whole evaluation in child processes and
returns an :class:`EvalReport`. Nothing here imports torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from solforge.problems import Solution, Status, Trace

from .sol.counting import SolCounts


class SandboxModel(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class ProfileRequest(SandboxModel):
    """Profile one call of the solution instead of timing it (see :mod:`solforge.sandbox.profiling`)."""

    tool: Literal["auto", "ncu", "cupti"] = "auto"
    """auto: Nsight Compute when it is installed and can run, else per-kernel CUPTI durations."""
    kernel: int | None = Field(default=None, ge=1)
    """Show Nsight Compute's raw sections of this kernel (1-based, in launch order), paged."""
    page: int = Field(default=1, ge=1)
    """The page of those sections (about 4,000 characters each)."""


class EvalOptions(SandboxModel):
    """How thoroughly and where to evaluate. Every field has a working default."""

    workloads: list[str] | None = None
    """Workload uuids to evaluate; None evaluates all of them."""
    rounds: int = Field(default=5, ge=1, le=50)
    """Correctness rounds per workload, each with fresh random inputs."""
    warmup: int = Field(default=10, ge=0, le=1000)
    iterations: int = Field(default=50, ge=1, le=10000)
    """Timed calls per workload; the median is reported."""
    seed: int | None = None
    """Seed for input generation; None draws a secret one per evaluation."""
    device: Literal["auto", "cuda", "cpu"] = "auto"
    """auto: the GPU when one is visible, else the CPU."""
    gpu_index: int | None = None
    """Physical GPU to use (sets CUDA_VISIBLE_DEVICES for the child processes)."""
    target_arch: str | None = None
    """Compile target such as sm_90a or sm_100a; None: the visible GPU's, or sm_90a without one."""
    compile_timeout_s: float = Field(default=300.0, gt=0)
    run_timeout_s: float = Field(default=120.0, gt=0)
    """Limit for one workload's correctness rounds and timing together."""
    total_timeout_s: float = Field(default=1800.0, gt=0)
    time_baseline: bool = True
    """Measure (or reuse from the cache) the eager and torch.compile baselines."""
    timer: Literal["auto", "cupti", "cuda_events"] = "auto"
    submission: bool = False
    """Final evaluation: secret seed, every workload plus held-out ones, stricter checks."""
    compile_only: bool = False
    cache_dir: Path | None = None
    """Build and baseline caches; None: $SOLFORGE_CACHE or ~/.cache/solforge."""
    memory_limit_gb: float = Field(default=48.0, gt=0)
    """Address-space limit of the candidate process (host memory)."""
    profile: ProfileRequest | None = None
    """Profile instead of timing: the first selected workload's correctness rounds, then one call under
    the profiler, in a fresh candidate process; the report's ``profile`` holds the answer."""


class KernelResources(SandboxModel):
    """What ptxas reports for one compiled kernel."""

    name: str
    """Demangled kernel name."""
    mangled: str | None = None
    arch: str | None = None
    registers: int | None = None
    shared_bytes: int | None = None
    """Static shared memory."""
    constant_bytes: int | None = None
    stack_bytes: int | None = None
    spill_stores_bytes: int | None = None
    spill_loads_bytes: int | None = None


class BuildReport(SandboxModel):
    """The result of building a solution."""

    ok: bool
    status: Status | None = None
    """COMPILE_ERROR or TIMEOUT when not ok."""
    language: str
    target_arch: str | None = None
    log: str = ""
    """Errors first, trimmed to what matters; warnings when ok."""
    warnings: list[str] = Field(default_factory=list)
    kernels: list[KernelResources] = Field(default_factory=list)
    cached: bool = False
    """True when the build came from the cache untouched."""
    artifact_dir: str | None = None
    """Folder holding the built module (and, for C++, the .so)."""
    cache_key: str | None = None
    seconds: float = 0.0


class WorkloadSummary(SandboxModel):
    uuid: str
    axes: dict[str, int]
    status: Status
    latency_ms: float | None = None
    baseline_latency_ms: float | None = None
    sol_latency_ms: float | None = None
    sol_score: float | None = None
    speedup: float | None = None


class BaselineRecord(SandboxModel):
    """The measured baseline of one workload on one GPU model, shared by every judge that matches it.

    ``key`` decides who may use it: it covers the problem's definition (reference and axes), the
    workload, the GPU model, the torch version and the timer (:func:`solforge.sandbox.baseline.baseline_key`).
    """

    key: str
    problem: str
    workload: str
    hardware: str
    """The GPU's name (``torch.cuda.get_device_name``), or 'cpu'."""
    eager_ms: float | None = None
    compiled_ms: float | None = None
    baseline_ms: float
    """T_b: the faster of the two."""
    eager_error: str | None = None
    """Why the eager reference could not be timed (the end of its error, where the cause is)."""
    compiled_error: str | None = None
    source: str = "measured"
    """measured (by this judge), cache (this machine's baseline cache), ledger or table (shipped)."""


class StallShare(SandboxModel):
    reason: str
    """Nsight Compute's name: long_scoreboard, wait, barrier, math_pipe_throttle, ..."""
    cycles: float
    """Cycles a warp spends stalled on it per issued instruction."""


class KernelProfile(SandboxModel):
    """One kernel launched by the profiled call. Percentages are of the GPU's peaks, as ncu measures them."""

    index: int
    """1-based, in launch order."""
    name: str
    duration_us: float
    grid: str | None = None
    block: str | None = None
    registers: int | None = None
    shared_bytes: int | None = None
    """Static and dynamic shared memory per block."""
    dram_pct: float | None = None
    """DRAM throughput."""
    sm_pct: float | None = None
    """Compute (SM) throughput: the busiest SM pipe or unit."""
    memory_pct: float | None = None
    """The busiest memory unit (L1, L2 or DRAM)."""
    dram_bytes: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    occupancy_limiter: str | None = None
    """What caps blocks per SM: registers, shared memory, warps or blocks."""
    waves: float | None = None
    """Blocks over what all SMs hold at once: below 1, part of the GPU idles."""
    l1_hit_pct: float | None = None
    l2_hit_pct: float | None = None
    tensor_pipe_pct: float | None = None
    """The busiest tensor-core pipe, of its peak while the SMs are active."""
    issue_cycles: float | None = None
    """Cycles between two instructions a warp issues (the stalls below add up to about this)."""
    stalls: list[StallShare] = Field(default_factory=list)
    """The largest stall reasons, largest first."""
    bound: str = ""
    """One line on what bounds the kernel."""


class ProfileReport(SandboxModel):
    """What profiling one call found, kernel by kernel."""

    tool: Literal["ncu", "cupti"]
    workload: str
    kernels: list[KernelProfile] = Field(default_factory=list)
    kernel_us: float = 0.0
    """The kernels' durations added up (under ncu each is replayed alone, caches flushed)."""
    sol_us: float | None = None
    """The workload's speed-of-light time on this GPU (T_SOL)."""
    note: str | None = None
    """Why Nsight Compute did not run (the CUPTI fallback), or what went wrong."""
    text: str = ""
    """The compact answer (at most about 4,000 characters), or the requested page of one kernel's sections."""
    page: int | None = None
    pages: int | None = None


class EvalReport(SandboxModel):
    """Everything one evaluation produced."""

    problem: str
    solution: str
    device: str
    """GPU name, or 'cpu'."""
    timer: str | None = None
    build: BuildReport | None = None
    traces: list[Trace] = Field(default_factory=list)
    ran: bool = True
    """False when the solution was only compiled (no GPU for a GPU-only language, or compile_only)."""
    note: str | None = None
    seconds: float = 0.0
    baselines: list[BaselineRecord] = Field(default_factory=list)
    """Baselines this evaluation measured (not those it found): the caller shares them (the ledger)."""
    counts: dict[str, SolCounts] = Field(default_factory=dict)
    """The speed-of-light counts behind each timed workload's T_SOL, by workload uuid (GPU runs only), so
    that get_sol_score explains a run without counting again (which imports torch into the server)."""
    profile: ProfileReport | None = None
    """The answer of a profiling request (``options.profile``)."""
    phases: dict[str, float] = Field(default_factory=dict)
    """Seconds spent in each phase, for turnaround figures: ``startup`` (a one-shot judge's own torch and
    CUDA), ``build``, ``load`` (taking a candidate process and loading the solution into it; it
    includes ``spare_wait``, the wait for a process still starting up, and ``import``, the solution's
    import as the candidate reports it), ``baseline_load`` (a gated request that will time baselines
    starting their processes before the gate), ``gpu_wait`` (a gated request's wait for the caller's go),
    ``inputs``, ``buffers``, ``check``, ``compare``, ``timed``, ``count``, ``score``, ``workloads`` (the
    workload loop, less load), and ``baseline`` (timing the baselines the cache lacked, after the loop,
    once the candidate process has gone: it also starts their processes when ``baseline_load`` did not)."""

    @property
    def all_passed(self) -> bool:
        return bool(self.traces) and all(t.evaluation and t.evaluation.status is Status.PASSED for t in self.traces)

    def summaries(self) -> list[WorkloadSummary]:
        out = []
        for t in self.traces:
            ev = t.evaluation
            assert ev is not None
            perf = ev.performance
            out.append(
                WorkloadSummary(
                    uuid=t.workload.uuid,
                    axes=t.workload.axes,
                    status=ev.status,
                    latency_ms=perf.latency_ms if perf else None,
                    baseline_latency_ms=perf.baseline_latency_ms if perf else None,
                    sol_latency_ms=perf.sol_latency_ms if perf else None,
                    sol_score=perf.sol_score if perf else None,
                    speedup=perf.speedup if perf else None,
                )
            )
        return out


class EvalRequest(SandboxModel):
    """What the judge process reads on stdin."""

    problem: str
    """A catalogue name or a problem folder path."""
    solution: Solution
    options: EvalOptions = Field(default_factory=EvalOptions)
    baselines: list[BaselineRecord] = Field(default_factory=list)
    """Baselines known to the caller (the ledger's, for this problem): the judge times none of these again."""
    gpu_gate: bool = False
    """Ask for the caller's go before any GPU work: the judge builds and loads the solution, sends a
    ``gpu`` event and reads one ``go`` line on stdin, so that a worker takes the GPU's lease only for
    the GPU work (a warm judge; see :meth:`solforge.sandbox.warm.WarmJudge.evaluate`)."""


class EvalEvent(SandboxModel):
    """One line the judge writes on stdout: progress, a trace, or the final report."""

    kind: Literal["progress", "build", "trace", "report", "error", "ready", "gpu", "gpu_done"]
    """``ready``: the judge is warm and waits for the next request (a warm judge's first line);
    ``gpu``: the solution is loaded and the judge waits for ``go`` (a request with ``gpu_gate``);
    ``gpu_done``: its GPU work is over before its report (a profile: what is left is writing and
    reading Nsight Compute's report on the CPU), so the caller may release the GPU now."""
    message: str | None = None
    done: int | None = None
    total: int | None = None
    build: BuildReport | None = None
    trace: Trace | None = None
    report: EvalReport | None = None
