"""Rotary-embedding templates of language models beyond :mod:`.llm`'s: partial rotary (only the first
rotary_dim channels of each head turn) and rotary computed from positions with the model's long-context
scaling (Llama 3 or YaRN). Same conventions as :mod:`.llm` and :mod:`.llm_ops`.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

from ..load import Problem
from .common import BF16, const, make_problem, reference_source, tensor, var
from .llm_shapes import (
    BF,
    F32,
    I64,
    NUM_TOKENS,
    head_dim,
    kv_heads,
    q_heads,
    rotary_dim,
    token_workloads,
    tokens_between,
)
from .models import ModelConfig

_ROTATE = {
    False: (
        """
        def rotate(x, cos, sin):
            first, second = x[..., :HALF], x[..., HALF:]
            return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)
        """,
        "rotate-half (GPT-NeoX) layout: channel i pairs with channel i + {half}",
    ),
    True: (
        """
        def rotate(x, cos, sin):
            even, odd = x[..., 0::2], x[..., 1::2]
            out_even = even * cos - odd * sin
            out_odd = odd * cos + even * sin
            return torch.stack((out_even, out_odd), dim=-1).flatten(-2)
        """,
        "interleaved (GPT-J) layout: channel 2i pairs with channel 2i + 1",
    ),
}


def _rotate_source(interleaved: bool) -> str:
    return textwrap.dedent(_ROTATE[interleaved][0]).strip()


def rope_partial(
    model: ModelConfig,
    *,
    interleaved: bool = False,
    tokens: Sequence[int] = tokens_between(1, 8192, (1000,)),
) -> Problem:
    """Rotary embedding of the first rotary_dim channels of each head; the rest pass through."""
    n_q, n_kv, dim = q_heads(model), kv_heads(model), head_dim(model)
    rot = rotary_dim(model)
    half = rot // 2
    reference = reference_source(
        """
        import torch

        ROT = $ROT
        HALF = $HALF

        $ROTATE

        def run(q, k, cos, sin):
            # cos/sin: one entry per rotated pair, broadcast over heads.
            c = cos[:, None, :]
            s = sin[:, None, :]
            outs = []
            for x in (q, k):
                xf = x.to(torch.float32)
                rotated = rotate(xf[..., :ROT], c, s)
                outs.append(torch.cat((rotated, xf[..., ROT:]), dim=-1).to(x.dtype))
            return outs[0], outs[1]
        """,
        ROT=rot,
        HALF=half,
        ROTATE=_rotate_source(interleaved).strip(),
    )
    layout = _ROTATE[interleaved][1].format(half=half)
    factor = model.number("partial_rotary_factor") if "partial_rotary_factor" in model.config else 1.0
    return make_problem(
        name=f"{model.key}_partial_rope",
        model=model,
        op_type="rope",
        tags=[
            "rope",
            "partial-rotary",
            "attention",
            "elementwise",
            "memory-bound",
            "bf16",
            "decode",
            "prefill",
        ]
        + (["interleaved"] if interleaved else []),
        description=f"""
            Partial rotary position embedding of {model.display_name}: only the first {rot} of each head's
            {dim} channels rotate (partial_rotary_factor {factor:g}), the other {dim - rot} pass through
            unchanged. q is [num_tokens, {n_q}, {dim}] and k [num_tokens, {n_kv}, {dim}], bf16. cos and sin
            are fp32 [num_tokens, {half}] tables, one angle per rotated pair and token (already including
            rope_theta {model.number("rope_theta"):g}; use them as given). Pairs follow the {layout}; each
            pair (a, b) becomes (a cos - b sin, b cos + a sin), computed in fp32 and rounded to bf16.
            Both q_out and k_out are checked, pass-through channels included.
        """,
        axes={
            "num_tokens": var(NUM_TOKENS),
            "num_q_heads": const(n_q),
            "num_kv_heads": const(n_kv),
            "head_dim": const(dim),
            "rotary_pairs": const(half),
        },
        inputs={
            "q": tensor(["num_tokens", "num_q_heads", "head_dim"], BF, "query projection"),
            "k": tensor(["num_tokens", "num_kv_heads", "head_dim"], BF, "key projection"),
            "cos": tensor(["num_tokens", "rotary_pairs"], F32, "cos of each token's angle per rotated pair"),
            "sin": tensor(["num_tokens", "rotary_pairs"], F32, "sin of each token's angle per rotated pair"),
        },
        outputs={
            "q_out": tensor(["num_tokens", "num_q_heads", "head_dim"], BF, "rotated queries"),
            "k_out": tensor(["num_tokens", "num_kv_heads", "head_dim"], BF, "rotated keys"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


def _yarn_correction_range(model: ModelConfig, rot: int, base: float) -> tuple[float, float]:
    """Hugging Face ``_compute_yarn_parameters``: the dimension range over which YaRN ramps."""
    orig = model.number("rope_scaling.original_max_position_embeddings")
    beta_fast, beta_slow = model.number("rope_scaling.beta_fast"), model.number("rope_scaling.beta_slow")

    def correction_dim(rotations: float) -> float:
        return (rot * math.log(orig / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if model.config.get("rope_scaling.truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, rot - 1)
    if low == high:
        high += 0.001
    return float(low), float(high)


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 0.1 * mscale * math.log(scale) + 1.0 if scale > 1 else 1.0


_INV_FREQ = {
    "llama3": """
        inv_freq = 1.0 / (THETA ** (idx / ROT))
        wavelen = 2 * math.pi / inv_freq
        # Llama 3 scaling: long wavelengths are divided by FACTOR, short ones kept, a smooth blend between.
        scaled = torch.where(wavelen > OLD_CONTEXT / LOW_FREQ_FACTOR, inv_freq / FACTOR, inv_freq)
        smooth = (OLD_CONTEXT / wavelen - LOW_FREQ_FACTOR) / (HIGH_FREQ_FACTOR - LOW_FREQ_FACTOR)
        smoothed = (1 - smooth) * scaled / FACTOR + smooth * scaled
        medium = (wavelen >= OLD_CONTEXT / HIGH_FREQ_FACTOR) & (wavelen <= OLD_CONTEXT / LOW_FREQ_FACTOR)
        inv_freq = torch.where(medium, smoothed, scaled)""",
    "yarn": """
        pos_freqs = THETA ** (idx / ROT)
        extrapolation = 1.0 / pos_freqs
        interpolation = 1.0 / (FACTOR * pos_freqs)
        # YaRN: a linear ramp over dimensions [LOW, HIGH] blends interpolated and extrapolated frequencies.
        dims = torch.arange(ROT // 2, dtype=torch.float32, device=positions.device)
        ramp = ((dims - LOW) / (HIGH - LOW)).clamp(0, 1)
        extrapolation_factor = 1 - ramp
        inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor""",
}


def rope_scaled(
    model: ModelConfig,
    *,
    mla: bool = False,
    interleaved: bool = False,
    tokens: Sequence[int] = tokens_between(1, 8192, (1000,)),
    max_position: int = 65536,
) -> Problem:
    """Rotary embedding computed from positions, with the model's long-context scaling (Llama 3 or YaRN)."""
    kind = str(model.config.get("rope_scaling.rope_type", model.config.get("rope_scaling.type")))
    theta = model.number("rope_theta")
    factor = model.number("rope_scaling.factor")
    if mla:  # DeepSeek MLA: only the decoupled rope part rotates; one key head shared by all query heads
        n_q, n_kv, dim = q_heads(model), 1, model.integer("qk_rope_head_dim")
    else:
        n_q, n_kv, dim = q_heads(model), kv_heads(model), head_dim(model)
    rot = dim
    constants: dict[str, float | int | str] = {
        "THETA": float(theta),
        "ROT": rot,
        "HALF": rot // 2,
        "FACTOR": factor,
    }
    if kind == "llama3":
        constants.update(
            OLD_CONTEXT=float(model.integer("rope_scaling.original_max_position_embeddings")),
            LOW_FREQ_FACTOR=model.number("rope_scaling.low_freq_factor"),
            HIGH_FREQ_FACTOR=model.number("rope_scaling.high_freq_factor"),
        )
        attention_factor = 1.0
        scaling_text = (
            f"Llama 3 scaling (factor {factor:g}, low_freq_factor {constants['LOW_FREQ_FACTOR']:g}, "
            f"high_freq_factor {constants['HIGH_FREQ_FACTOR']:g}, original context "
            f"{int(constants['OLD_CONTEXT'])}): wavelengths 2 pi / f above original/low_freq_factor are "
            "divided "
            "by factor, those below original/high_freq_factor kept, and those between blended with "
            "s = (original / wavelength - low) / (high - low) as (1 - s) f / factor + s f"
        )
    elif kind == "yarn":
        low, high = _yarn_correction_range(model, rot, theta)
        constants.update(LOW=low, HIGH=high)
        if "rope_scaling.mscale" in model.config and "rope_scaling.mscale_all_dim" in model.config:
            attention_factor = _yarn_mscale(factor, model.number("rope_scaling.mscale")) / _yarn_mscale(
                factor, model.number("rope_scaling.mscale_all_dim")
            )
        else:
            attention_factor = _yarn_mscale(factor)
        scaling_text = (
            f"YaRN (factor {factor:g}, beta_fast {model.number('rope_scaling.beta_fast'):g}, beta_slow "
            f"{model.number('rope_scaling.beta_slow'):g}, original context "
            f"{model.integer('rope_scaling.original_max_position_embeddings')}): "
            f"with e = 1 / theta^(2i/{rot}), "
            f"f_i = (e_i / factor) * ramp_i + e_i * (1 - ramp_i), ramp_i = clamp((i - {low:g}) / "
            f"({high:g} - {low:g}), 0, 1), and cos/sin multiplied by the attention factor "
            f"{attention_factor:.6g}"
        )
    else:
        raise ValueError(f"{model.hf_id}: rope_scaling type {kind!r} has no template; use llama3 or yarn")
    constants["ATTENTION_FACTOR"] = attention_factor
    header = "\n".join(f"{k} = {v!r}" for k, v in constants.items())
    reference = reference_source(
        """
        import math

        import torch

        $HEADER

        $ROTATE

        def run(q, k, positions):
            idx = torch.arange(0, ROT, 2, dtype=torch.int64, device=positions.device).to(torch.float32)
            $INV_FREQ
            freqs = positions.to(torch.float32)[:, None] * inv_freq[None, :]
            cos = (torch.cos(freqs) * ATTENTION_FACTOR)[:, None, :]
            sin = (torch.sin(freqs) * ATTENTION_FACTOR)[:, None, :]
            q_out = rotate(q.to(torch.float32), cos, sin).to(q.dtype)
            return q_out, rotate(k.to(torch.float32), cos, sin).to(k.dtype)
        """,
        HEADER=header,
        ROTATE=_rotate_source(interleaved).strip(),
        INV_FREQ=_INV_FREQ[kind].strip().replace("\n        ", "\n    "),
    )
    layout = _ROTATE[interleaved][1].format(half=rot // 2)
    k_text = (
        f"k_pe [num_tokens, 1, {dim}] (the single rope key shared by all heads)"
        if mla
        else (f"k [num_tokens, {n_kv}, {dim}]")
    )
    q_name, k_name = ("q_pe", "k_pe") if mla else ("q", "k")
    return make_problem(
        name=f"{model.key}_{'mla_' if mla else ''}rope_{kind}",
        model=model,
        op_type="rope",
        tags=["rope", kind, "long-context", "attention", "elementwise", "bf16", "decode", "prefill"]
        + (["mla"] if mla else []),
        description=f"""
            Rotary embedding of {model.display_name} with its long-context frequency scaling, computed from
            token positions (the kernel derives the angles itself, as vLLM's rotary kernels do from a
            position index). {q_name} is [num_tokens, {n_q}, {dim}] bf16, {k_text}, bf16; positions is
            [num_tokens] int64 in [0, {max_position}). Frequencies: base theta {theta:g} over {rot} channels,
            {scaling_text}. Angles are fp32 position * f_i; cos and sin use accurate fp32 sin/cos (fast-math
            approximations drift at large angles). The {layout}; each pair (a, b) becomes
            (a cos - b sin, b cos + a sin) in fp32, rounded to bf16.
        """,
        axes={
            "num_tokens": var(NUM_TOKENS),
            "num_q_heads": const(n_q),
            "num_kv_heads": const(n_kv),
            "head_dim": const(dim),
        },
        inputs={
            q_name: tensor(["num_tokens", "num_q_heads", "head_dim"], BF, "queries (rotary part)"),
            k_name: tensor(["num_tokens", "num_kv_heads", "head_dim"], BF, "keys (rotary part)"),
            "positions": tensor(["num_tokens"], I64, f"token positions, in [0, {max_position})"),
        },
        outputs={
            f"{q_name}_out": tensor(["num_tokens", "num_q_heads", "head_dim"], BF, "rotated queries"),
            f"{k_name}_out": tensor(["num_tokens", "num_kv_heads", "head_dim"], BF, "rotated keys"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )
