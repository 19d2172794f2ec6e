"""What the language-model templates share: the model's attention shapes, token sweeps, counting overrides.

Config files spell the same quantity differently (``num_key_value_heads``, Falcon's ``num_kv_heads`` and
``multi_query``, DBRX's ``attn_config.kv_n_heads``) and leave some to the modelling code's defaults
(``head_dim`` = hidden_size / num_attention_heads when absent). These helpers read whichever the model
has, so the templates stay one code path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..definition import SolOverride
from ..dtypes import DType
from ..load import Problem
from .models import ModelConfig

BF = DType.bfloat16
F32 = DType.float32
I32 = DType.int32
I64 = DType.int64
E4M3 = DType.float8_e4m3fn
FP4X2 = DType.float4_e2m1fn_x2
U8 = DType.uint8

NUM_TOKENS = "tokens in the batch: 1 for a single decode step, thousands for a prefill chunk"

DECODE_TOKENS = (1, 2, 4, 8, 16, 32, 64)
PREFILL_TOKENS = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def _has(model: ModelConfig, key: str) -> bool:
    return key in model.config


def hidden_size(model: ModelConfig) -> int:
    return model.integer("d_model") if _has(model, "d_model") else model.integer("hidden_size")


def q_heads(model: ModelConfig) -> int:
    return model.integer("n_heads") if _has(model, "n_heads") else model.integer("num_attention_heads")


def kv_heads(model: ModelConfig) -> int:
    """Key/value heads: num_key_value_heads, Falcon's num_kv_heads / multi_query, DBRX's kv_n_heads;
    multi-head attention (as many as query heads) when the config names none."""
    for key in ("num_key_value_heads", "num_kv_heads", "attn_config.kv_n_heads"):
        if _has(model, key):
            return model.integer(key)
    if model.config.get("multi_query") is True:
        return 1
    return q_heads(model)


def head_dim(model: ModelConfig) -> int:
    """config head_dim, else hidden_size / num_attention_heads (the Hugging Face default)."""
    if _has(model, "head_dim"):
        return model.integer("head_dim")
    hidden, heads = hidden_size(model), q_heads(model)
    if hidden % heads:
        raise ValueError(
            f"{model.hf_id}: hidden_size {hidden} is not a multiple of {heads} heads; add head_dim"
        )
    return hidden // heads


def rms_eps(model: ModelConfig) -> float:
    for key in ("rms_norm_eps", "norm_eps", "layer_norm_eps", "layer_norm_epsilon"):
        if _has(model, key):
            return model.number(key)
    return model.number("rms_norm_eps")  # raises, naming the key


def rotary_dim(model: ModelConfig) -> int:
    """Channels of each head that rotate: head_dim * partial_rotary_factor (all of them when absent)."""
    dim = head_dim(model)
    if not _has(model, "partial_rotary_factor"):
        return dim
    rot = int(dim * model.number("partial_rotary_factor"))
    return rot - rot % 2


def shard(size: int, tp: int, what: str, model: ModelConfig) -> int:
    """One tensor-parallel rank's share of ``size``; raises when it does not divide."""
    if size % tp:
        raise ValueError(f"{model.hf_id}: {what} {size} does not split over tp={tp}")
    return size // tp


def tp_text(tp: int) -> str:
    return (
        ""
        if tp == 1
        else f" on one GPU of a tensor-parallel group of {tp} (each rank holds 1/{tp} of the weight)"
    )


def tp_suffix(tp: int) -> str:
    return "" if tp == 1 else f"_tp{tp}"


def tokens_between(low: int, high: int, extra: Iterable[int] = ()) -> tuple[int, ...]:
    """Powers of two from ``low`` to ``high`` plus ``extra`` (uneven sizes), sorted and distinct."""
    values = {t for t in (*DECODE_TOKENS, *PREFILL_TOKENS, 32768) if low <= t <= high} | set(extra)
    return tuple(sorted(values))


def token_workloads(tokens: Sequence[int], axis: str = "num_tokens") -> list[dict[str, int]]:
    return [{axis: t} for t in tokens]


def limit_bytes(sizes: Iterable[tuple[int, ...]], cost: int, budget: int) -> list[tuple[int, ...]]:
    """The sizes whose product times ``cost`` bytes stays within ``budget``."""
    out = []
    for size in sizes:
        product = 1
        for s in size:
            product *= s
        if product * cost <= budget:
            out.append(size)
    return out


def with_counting(
    problem: Problem,
    *,
    tensor_core_dtype: DType | None = None,
    tensor_core_flops: str | None = None,
    other_flops: str | None = None,
) -> Problem:
    """Attach counting overrides (``flops`` in definition.json) to a built problem.

    ``tensor_core_dtype`` re-keys the FLOPs of a reference that dequantises fp8/fp4 operands before a
    wider matmul, so the speed of light uses the low-precision tensor-core peak a kernel would use;
    ``tensor_core_flops`` replaces the count of a reference that computes more than the operation needs
    (a dense pass over all experts).
    """
    problem.definition.flops = SolOverride(
        tensor_core_dtype=tensor_core_dtype, tensor_core_flops=tensor_core_flops, other_flops=other_flops
    )
    return problem
