"""workload.jsonl: one line per concrete size at which a problem is evaluated."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .base import FormatModel, NonEmptyStr


class RandomInput(FormatModel):
    """Generated from the seed, by dtype and by the input's name (see problems.inputs)."""

    type: Literal["random"] = "random"


class ScalarInput(FormatModel):
    """A Python scalar or 0-D value given in the workload."""

    type: Literal["scalar"] = "scalar"
    value: int | float | bool


class SafetensorsInput(FormatModel):
    """A real tensor loaded from a safetensors file (relative to the problem folder or an absolute path)."""

    type: Literal["safetensors"] = "safetensors"
    path: NonEmptyStr
    tensor_key: NonEmptyStr


class CustomInput(FormatModel):
    """Produced by the definition's ``custom_inputs_entrypoint``; if one input is custom, all are."""

    type: Literal["custom"] = "custom"


InputDescriptor = Annotated[
    RandomInput | ScalarInput | SafetensorsInput | CustomInput, Field(discriminator="type")
]


class Tolerance(FormatModel):
    """How close a solution's outputs must be to the reference's (SOL-ExecBench ToleranceSpec)."""

    max_atol: float = 1e-2
    """Absolute tolerance: an element matches when |out - ref| <= max_atol + max_rtol * |ref|."""
    max_rtol: float = 1e-2
    """Relative tolerance."""
    required_matched_ratio: float = Field(default=0.99, ge=0.0, le=1.0)
    """Fraction of elements that must match."""
    max_error_cap: float | None = None
    """If set, the largest absolute error must stay at or below it."""
    allow_negative_inf: bool = False
    """If set, an element that is -inf in both the output and the reference counts as a match."""


class Workload(FormatModel):
    """One evaluation point of a problem."""

    uuid: NonEmptyStr
    axes: dict[str, int] = Field(default_factory=dict)
    """Values of the definition's var axes."""
    inputs: dict[str, InputDescriptor] = Field(default_factory=dict)
    """How to make each input; an input left out is random."""
    tolerance: Tolerance | None = None

    @model_validator(mode="after")
    def _validate_custom_all_or_none(self) -> Workload:
        kinds = {type(d) for d in self.inputs.values()}
        if CustomInput in kinds and len(kinds) > 1:
            bad = sorted(n for n, d in self.inputs.items() if not isinstance(d, CustomInput))
            raise ValueError(f"inputs mix custom with other descriptors ({bad}); if one input is custom, all must be")
        return self

    @property
    def effective_tolerance(self) -> Tolerance:
        return self.tolerance or Tolerance()
