"""Traces: one per workload evaluated, as SOL-ExecBench and FlashInfer-Bench write them."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field, model_validator

from .base import FormatModel
from .workload import Workload


class Status(StrEnum):
    """The outcome of evaluating one workload."""

    PASSED = "PASSED"
    """Correct in every round, and timed."""
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    """An output has the wrong shape."""
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    """Outputs are outside tolerance, or hold NaN/Inf, or are all zero against a non-zero reference."""
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    """An output has the wrong dtype."""
    RUNTIME_ERROR = "RUNTIME_ERROR"
    """The solution raised, crashed, ran out of memory or tripped a device assert."""
    COMPILE_ERROR = "COMPILE_ERROR"
    """The solution failed to build or import."""
    TIMEOUT = "TIMEOUT"
    """The build or the run exceeded its time limit; the whole process tree was killed."""
    REWARD_HACK = "REWARD_HACK"
    """The solution tampered with the harness or was timed faster than the hardware allows."""
    INVALID_REFERENCE = "INVALID_REFERENCE"
    """The reference itself failed on this workload; the problem, not the solution, is at fault."""

    @property
    def is_correct(self) -> bool:
        return self is Status.PASSED


class Correctness(FormatModel):
    """Worst-case error statistics over the correctness rounds."""

    max_absolute_error: float = 0.0
    max_relative_error: float = 0.0
    matched_ratio: float = 1.0
    rounds: int = 0
    """Rounds of fresh inputs checked."""


class Performance(FormatModel):
    """Timing of the solution and its place against the baseline and the speed of light."""

    latency_ms: float
    """Median time of one call, every stream included."""
    reference_latency_ms: float | None = None
    """Median time of the eager reference."""
    speedup_factor: float | None = None
    """reference_latency_ms / latency_ms, as SOL-ExecBench reports it."""
    baseline_latency_ms: float | None = None
    """T_b: the faster of the eager reference and the reference under torch.compile (or the problem's baseline)."""
    sol_latency_ms: float | None = None
    """T_SOL: the speed-of-light time for this workload on this GPU."""
    sol_bound: Literal["memory", "compute"] | None = None
    sol_score: float | None = None
    """1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)); 0.5 at the baseline, 1.0 at speed of light."""
    speedup: float | None = None
    """baseline_latency_ms / latency_ms."""
    timer: str | None = None
    """cupti, cuda_events or cpu (CPU timings carry no SOL score)."""
    peak_source: str | None = None
    """Where the peaks behind T_SOL came from: datasheet:<GPU> or calibrated:<GPU>."""
    iterations: int | None = None
    latency_iqr_ms: float | None = None


class Environment(FormatModel):
    """Where the evaluation ran."""

    hardware: str = "unknown"
    """The GPU's name, or 'cpu'."""
    libs: dict[str, str] = Field(default_factory=dict)
    """Versions of torch, triton, CUDA, the driver and solforge."""


class Evaluation(FormatModel):
    """The result of evaluating one solution on one workload."""

    status: Status
    log: str = ""
    """What went wrong, trimmed to what matters; empty when PASSED."""
    correctness: Correctness | None = None
    performance: Performance | None = None
    environment: Environment = Field(default_factory=Environment)
    timestamp: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @model_validator(mode="after")
    def _validate_payload_matches_status(self) -> Evaluation:
        if self.status is Status.PASSED and (self.correctness is None or self.performance is None):
            raise ValueError("a PASSED evaluation carries correctness and performance")
        if self.status in (Status.COMPILE_ERROR, Status.TIMEOUT, Status.RUNTIME_ERROR) and self.performance:
            raise ValueError(f"a {self.status} evaluation carries no performance")
        if self.status is not Status.PASSED and not self.log:
            raise ValueError(f"a {self.status} evaluation must say why in log")
        return self


class Trace(FormatModel):
    """One line of a traces.jsonl file."""

    definition: str
    solution: str | None = None
    workload: Workload
    evaluation: Evaluation | None = None
