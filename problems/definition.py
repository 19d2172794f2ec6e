"""definition.json: what a problem computes, over which axes, with which reference."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, model_validator

from . import expr
from .base import FormatModel, NonEmptyStr
from .dtypes import DType


class Category(StrEnum):
    """The kind of model a problem is taken from (a solforge extension)."""

    llm = "llm"
    diffusion = "diffusion"
    vision = "vision"
    audio = "audio"
    video = "video"
    multimodal = "multimodal"


class ConstAxis(FormatModel):
    """An axis whose size is fixed by the model's configuration."""

    type: Literal["const"] = "const"
    value: int
    """The size of the axis."""
    description: str | None = None


class VarAxis(FormatModel):
    """An axis whose size each workload sets (token count, batch size, image length)."""

    type: Literal["var"] = "var"
    description: str | None = None


class ExprAxis(FormatModel):
    """An axis computed from others, for example ``batch_size * seq_len``."""

    type: Literal["expr"] = "expr"
    expression: NonEmptyStr
    """Arithmetic over other axis names."""
    description: str | None = None


Axis = Annotated[ConstAxis | VarAxis | ExprAxis, Field(discriminator="type")]


class TensorSpec(FormatModel):
    """One input or output of the operation."""

    shape: list[str | int] | None
    """Axis names (or literal sizes) outermost first; ``[]`` is a 0-D tensor, ``null`` a Python scalar."""
    dtype: DType
    description: str | None = None


class SolOverride(FormatModel):
    """Counts that replace the ones solforge derives from the reference (a solforge extension).

    Each field is a number or an arithmetic expression over the axes.
    """

    tensor_core_flops: str | float | None = None
    """Matrix-multiply FLOPs (2 per multiply-add) that tensor cores can execute."""
    tensor_core_dtype: DType | None = None
    """The dtype whose tensor-core peak applies; defaults to the widest float input's dtype."""
    other_flops: str | float | None = None
    """FLOPs executed on the CUDA cores at fp32 rate."""


class Definition(FormatModel):
    """A problem: the operation, its axes, its inputs and outputs and its PyTorch reference."""

    name: NonEmptyStr
    """Unique name of the problem, for example ``qwen3_8b_rmsnorm``."""
    op_type: str | None = None
    """Operation family: gemm, rmsnorm, rope, attention, moe, ..."""
    hf_id: str | None = None
    """The Hugging Face id of the model the problem is taken from."""
    description: str | None = None
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec]
    reference: NonEmptyStr
    """PyTorch source defining ``run(*inputs)`` that returns the outputs (one tensor, or a tuple in output order)."""
    constraints: list[str] = Field(default_factory=list)
    """Assertions over the axes, for example ``"H_qo % H_kv == 0"``."""
    custom_inputs_entrypoint: str | None = None
    """Name of a function in ``reference``, ``fn(axes_and_scalars, device) -> dict[name, Tensor]``."""
    tags: list[str] = Field(default_factory=list)
    category: Category | None = None
    """solforge extension: llm, diffusion, vision, audio, video or multimodal."""
    flops: SolOverride | None = None
    """solforge extension: FLOP counts that replace the derived ones."""
    bytes: str | float | None = None
    """solforge extension: DRAM bytes (expression over axes) that replace inputs-read-once + outputs-written-once."""
    baseline: str | None = None
    """solforge extension: path (within the problem folder) of a solution.json used as a stronger baseline."""

    @model_validator(mode="after")
    def _validate_axis_references(self) -> Definition:
        for kind, specs in (("inputs", self.inputs), ("outputs", self.outputs)):
            for tensor_name, spec in specs.items():
                for dim in spec.shape or []:
                    # A digit string is a literal size, as SOL-ExecBench reads it ("1" in ["1", "H"]).
                    if isinstance(dim, str) and not dim.isdigit() and dim not in self.axes:
                        raise ValueError(
                            f"{kind}.{tensor_name}.shape names axis {dim!r}, which is not declared in axes; "
                            f"declare it or use one of {sorted(self.axes)}"
                        )
        for axis_name, axis in self.axes.items():
            if isinstance(axis, ExprAxis):
                unknown = expr.names_in(axis.expression) - set(self.axes)
                if unknown:
                    raise ValueError(f"axes.{axis_name}.expression uses undeclared axes {sorted(unknown)}")
        return self

    @model_validator(mode="after")
    def _validate_names_disjoint(self) -> Definition:
        clash = set(self.inputs) & set(self.outputs)
        if clash:
            raise ValueError(f"inputs and outputs share names {sorted(clash)}; rename the outputs")
        if self.custom_inputs_entrypoint and f"def {self.custom_inputs_entrypoint}" not in self.reference:
            raise ValueError(
                f"custom_inputs_entrypoint {self.custom_inputs_entrypoint!r} is not defined in reference; "
                "define it there or drop the field"
            )
        if "def run" not in self.reference:
            raise ValueError("reference defines no run(...) function; the reference must define run")
        return self

    @property
    def var_axes(self) -> list[str]:
        return [n for n, a in self.axes.items() if isinstance(a, VarAxis)]

    def resolve_axes(self, values: dict[str, int]) -> dict[str, int]:
        """All axis sizes for one workload: constants, the workload's values, then expressions.

        Raises
        ------
        ValueError
            If a var axis has no value, or a constraint fails.
        """
        missing = [n for n in self.var_axes if n not in values]
        if missing:
            raise ValueError(f"workload gives no value for var axes {missing}")
        sizes: dict[str, int] = {}
        for name, axis in self.axes.items():
            if isinstance(axis, ConstAxis):
                sizes[name] = axis.value
            elif isinstance(axis, VarAxis):
                sizes[name] = int(values[name])
        pending = {n: a.expression for n, a in self.axes.items() if isinstance(a, ExprAxis)}
        while pending:
            ready = {n: e for n, e in pending.items() if expr.names_in(e) <= set(sizes)}
            if not ready:
                raise ValueError(f"axis expressions depend on each other in a cycle: {sorted(pending)}")
            for n, e in ready.items():
                sizes[n] = int(expr.evaluate(e, sizes))
                del pending[n]
        for constraint in self.constraints:
            if not expr.evaluate(constraint, sizes):
                raise ValueError(f"constraint {constraint!r} fails for axes {sizes}")
        return sizes

    def shape_of(self, spec: TensorSpec, sizes: dict[str, int]) -> tuple[int, ...] | None:
        """The concrete shape of one tensor for resolved axis sizes (None for a Python scalar)."""
        if spec.shape is None:
            return None
        return tuple(sizes[d] if isinstance(d, str) and not d.isdigit() else int(d) for d in spec.shape)

    def input_shapes(self, sizes: dict[str, int]) -> dict[str, tuple[int, ...] | None]:
        return {n: self.shape_of(s, sizes) for n, s in self.inputs.items()}

    def output_shapes(self, sizes: dict[str, int]) -> dict[str, tuple[int, ...] | None]:
        return {n: self.shape_of(s, sizes) for n, s in self.outputs.items()}
