"""The dtypes a definition may name, and what each costs in memory.

torch is imported lazily: the MCP server reads definitions without loading it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


class DType(StrEnum):
    """A tensor element type, spelled as in SOL-ExecBench and FlashInfer-Trace."""

    float64 = "float64"
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"
    float8_e4m3fn = "float8_e4m3fn"
    float8_e5m2 = "float8_e5m2"
    float4_e2m1 = "float4_e2m1"
    """One fp4 value per byte (unpacked), stored as uint8 codes."""
    float4_e2m1fn_x2 = "float4_e2m1fn_x2"
    """Two fp4 values packed in one byte; a shape counts bytes, not values."""
    int64 = "int64"
    int32 = "int32"
    int16 = "int16"
    int8 = "int8"
    uint8 = "uint8"
    bool = "bool"

    @property
    def bits(self) -> int:
        """Storage bits per element of this dtype as laid out in memory."""
        return _BITS[self]

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_low_precision(self) -> bool:
        """fp8 and fp4: compared with the looser tolerances of quantised problems."""
        return self in (DType.float8_e4m3fn, DType.float8_e5m2, DType.float4_e2m1, DType.float4_e2m1fn_x2)

    def to_torch(self) -> torch.dtype:
        import torch

        if self is DType.float4_e2m1:
            return torch.uint8
        if self is DType.float4_e2m1fn_x2:
            return getattr(torch, "float4_e2m1fn_x2", torch.uint8)
        return getattr(torch, self.value)


_BITS = {
    DType.float64: 64,
    DType.float32: 32,
    DType.float16: 16,
    DType.bfloat16: 16,
    DType.float8_e4m3fn: 8,
    DType.float8_e5m2: 8,
    DType.float4_e2m1: 8,
    DType.float4_e2m1fn_x2: 8,
    DType.int64: 64,
    DType.int32: 32,
    DType.int16: 16,
    DType.int8: 8,
    DType.uint8: 8,
    DType.bool: 8,
}
_FLOATS = frozenset(
    {
        DType.float64,
        DType.float32,
        DType.float16,
        DType.bfloat16,
        DType.float8_e4m3fn,
        DType.float8_e5m2,
        DType.float4_e2m1,
        DType.float4_e2m1fn_x2,
    }
)


def from_torch(dtype: torch.dtype) -> DType:
    """Map a torch dtype back to the name a definition uses."""
    name = str(dtype).removeprefix("torch.")
    try:
        return DType(name)
    except ValueError:
        raise ValueError(f"torch dtype {dtype} has no solforge name; use one of {[d.value for d in DType]}") from None
