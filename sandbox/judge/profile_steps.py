"""The judge's part of ``solforge profile``: one checked call of the solution under Nsight Compute, then its report
read back. A mixin of :class:`~solforge.sandbox.judge.evaluation.Judge`, apart because only profiling runs it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from solforge.problems import (
    Correctness,
    Evaluation,
    Performance,
    Status,
    Trace,
    Workload,
)

from ..api import EvalEvent, EvalReport, ProfileReport
from ..baseline import attach_scores, tail
from .state import PROFILE_TIMEOUT_S, blob_limit, emit, failed_trace


class ProfileSteps:
    """Judge methods of a profile run; they use the evaluation's own attributes (request, candidate, state)."""

    def profile_report_path(self, workload: Workload) -> Path:
        """Where Nsight Compute's report of this build on this workload is kept (the cache, by build)."""
        assert self.build is not None and self.build.cache_key
        return self.cache_dir / "profiles" / self.build.cache_key / f"{workload.uuid}.ncu-rep"

    def prepare_profile(self, workload: Workload, report: EvalReport) -> bool:
        """Choose the profiler; True when the report is already answered (the CPU's refusal, or a page of a
        kernel from a profile kept in the cache), so that nothing runs."""
        from .. import profiling

        request = self.options.profile
        assert request is not None
        report.timer = None
        if self.device.type != "cuda":
            report.ran = False
            report.note = ("profiling needs an NVIDIA GPU (Nsight Compute or CUPTI), and this machine has none: "
                           "use run_benchmark's timings, and compile_kernel's registers, spills and SASS instruction mix")
            return True
        ncu = profiling.ncu_path() if request.tool in ("auto", "ncu") else None
        kept = self.profile_report_path(workload) if self.build and self.build.cache_key else None
        if request.kernel is not None:
            if ncu is None:
                raise ValueError("a kernel's raw sections come from Nsight Compute, which is not on this machine")
            if kept is not None and kept.exists():
                self.profiled = ProfileReport(tool="ncu", workload=workload.uuid)
                self.profiled.text, self.profiled.pages = profiling.details_page(ncu, kept, request.kernel, request.page)
                self.profiled.page = request.page
                report.profile, report.ran = self.profiled, False
                return True
        if ncu is None and request.tool == "ncu":
            raise ValueError("tool='ncu' was asked for, but Nsight Compute (ncu) is not on this machine's PATH")
        if ncu is not None:
            self.profiler_argv = profiling.ncu_prefix(ncu, self.scratch / "profile.ncu-rep")
        return False

    def profile_workload(self, workload: Workload, sizes: dict[str, int],
                         last: tuple[list[Any], list[Any], dict[str, Any]], correctness: Correctness,
                         deadline: float) -> Trace:
        """One call of the checked solution under the profiler; the answer goes in ``self.profiled``."""
        from .. import profiling

        shared_inputs, buffers, references = last
        assert self.candidate is not None and self.options.profile is not None
        tool = "ncu" if self.profiler_argv else "cupti"
        with self.phase("profile"):
            answer, _ = self.candidate.request(
                {"cmd": "profile", "inputs": shared_inputs, "outputs": buffers, "tool": tool},
                max(PROFILE_TIMEOUT_S, deadline - time.monotonic()), cuda_ipc=True, blob_limit=blob_limit(references))
        if not answer.get("ok"):
            return self._fail(workload, answer, "while profiling: ")
        counts = self.flops_and_bytes(sizes, shared_inputs)  # may read the inputs on the GPU
        if self.request.gpu_gate and self.state.warm:
            # ncu replayed each kernel inside the call; writing and reading its report is CPU work
            # (several seconds), which need not hold the GPU's lease.
            emit(EvalEvent(kind="gpu_done"))
        with self.phase("profile_report"):
            if tool == "cupti":
                self.profiled = ProfileReport(tool="cupti", workload=workload.uuid,
                                              kernels=profiling.cupti_kernels(answer.get("kernels") or []),
                                              note=profiling.cupti_note(self.options.profile.tool))
            else:
                self.profiled = self.read_ncu_report(workload)
            self.profiled.kernel_us = round(sum(k.duration_us for k in self.profiled.kernels), 3)
            # The trace's latency is the profiled kernels' time (one call, each kernel replayed alone under ncu),
            # marked by its timer: not a timing to compare with run_benchmark's medians. T_SOL as for a timing.
            perf = Performance(latency_ms=self.profiled.kernel_us / 1e3, timer=tool, iterations=1)
            verdict = attach_scores(perf, None, counts=counts,
                                    hardware=self.env.hardware, calibration_dir=self.cache_dir / "calibration")
            if verdict is not None:
                return failed_trace(self.problem, self.solution.name, workload, Status.REWARD_HACK, verdict, self.env)
            if perf.sol_latency_ms is not None:
                self.profiled.sol_us = round(perf.sol_latency_ms * 1e3, 3)
            if not self.profiled.text:
                self.profiled.text = profiling.summary_text(self.profiled)
        return Trace(definition=self.problem.name, solution=self.solution.name, workload=workload,
                     evaluation=Evaluation(status=Status.PASSED, log=f"profiled with {tool} (one call), not timed",
                                           correctness=correctness, performance=perf, environment=self.env))

    def read_ncu_report(self, workload: Workload) -> ProfileReport:
        """Close the candidate so that ncu writes its report, keep the report in the cache, and read it."""
        from .. import profiling

        assert self.candidate is not None
        self.candidate.close(wait_s=PROFILE_TIMEOUT_S)
        written = self.scratch / "profile.ncu-rep"
        ncu = self.profiler_argv[0]
        if not written.exists():
            log = tail(self.candidate.log_path.read_text(errors="replace")) if self.candidate.log_path.exists() else ""
            return ProfileReport(tool="ncu", workload=workload.uuid,
                                 note=f"Nsight Compute wrote no report (its output: {log[-800:]})")
        kept = self.profile_report_path(workload)
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(written, kept)
        kernels = profiling.kernels_from_raw(profiling.read_raw(ncu, kept))
        report = ProfileReport(tool="ncu", workload=workload.uuid, kernels=kernels)
        request = self.options.profile
        if request is not None and request.kernel is not None:
            report.text, report.pages = profiling.details_page(ncu, kept, request.kernel, request.page)
            report.page = request.page
        return report
