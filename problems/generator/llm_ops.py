"""Single-operator (L1) templates of language models beyond :mod:`.llm`: norm variants, rotary variants,
the layer GEMMs at real (tensor-parallel) shapes, activations, embedding, logit soft-capping, sampling.

Same conventions as :mod:`.llm`: ``(model, **options) -> Problem``; constants baked into a step-by-step
PyTorch reference; workloads from single-token decode to long prefill.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

from ..load import Problem
from .common import BF16, FP32, const, make_problem, reference_source, tensor, var
from .llm_shapes import (
    BF,
    F32,
    I32,
    I64,
    NUM_TOKENS,
    head_dim,
    hidden_size,
    kv_heads,
    q_heads,
    rms_eps,
    rotary_dim,
    shard,
    token_workloads,
    tokens_between,
    tp_suffix,
    tp_text,
)
from .models import ModelConfig

# -- norms ---------------------------------------------------------------------------------------------

_LAYERNORM_AFFINE = {
    "weight_bias": ("norm_weight, norm_bias", "x * norm_weight + norm_bias", "a learned gain and bias"),
    "weight": ("norm_weight", "x * norm_weight", "a learned gain and no bias"),
    "none": ("", "x", "no learned parameters (non-parametric)"),
}


def layernorm(
    model: ModelConfig,
    *,
    affine: str = "weight_bias",
    eps: float | None = None,
    tokens: Sequence[int] = tokens_between(1, 16384, (1000,)),
) -> Problem:
    """LayerNorm in fp32, rounded to bf16 (Falcon, Phi-2, StableLM, Cohere, OLMo)."""
    hidden = hidden_size(model)
    eps = rms_eps(model) if eps is None else eps
    params, apply, text = _LAYERNORM_AFFINE[affine]
    signature = ", ".join(p for p in ("hidden_states", params) if p)
    casts = "".join(f"\n    {p} = {p}.to(torch.float32)" for p in params.split(", ") if p)
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def run($SIGNATURE):
            x = hidden_states.to(torch.float32)
            mean = x.mean(dim=-1, keepdim=True)
            variance = (x - mean).pow(2).mean(dim=-1, keepdim=True)
            x = (x - mean) * torch.rsqrt(variance + EPS)$CASTS
            return ($APPLY).to(hidden_states.dtype)
        """,
        EPS=eps,
        SIGNATURE=signature,
        CASTS=casts,
        APPLY=apply,
    )
    inputs = {"hidden_states": tensor(["num_tokens", "hidden_size"], BF, "activations, row-major")}
    if affine != "none":
        inputs["norm_weight"] = tensor(["hidden_size"], BF, "LayerNorm gain")
    if affine == "weight_bias":
        inputs["norm_bias"] = tensor(["hidden_size"], BF, "LayerNorm bias")
    return make_problem(
        name=f"{model.key}_layernorm",
        model=model,
        op_type="layernorm",
        tags=["norm", "layernorm", "memory-bound", "bf16", "decode", "prefill"],
        description=f"""
            LayerNorm over the hidden dimension of {model.display_name} (hidden_size {hidden}, eps {eps:g}),
            with {text}. hidden_states is a row-major [num_tokens, {hidden}] bf16 activation. Per token,
            in fp32: mean and biased variance over the {hidden} channels, (x - mean) * rsqrt(var + eps),
            then {apply.replace("x", "the normalised value", 1)} in fp32, rounded to bf16 once. Two
            reductions per row (or one pass with Welford/sum-of-squares in fp32) and one read and write of
            the activation: memory-bound. num_tokens sweeps from one decode token to a long prefill chunk.
        """,
        axes={"num_tokens": var(NUM_TOKENS), "hidden_size": const(hidden)},
        inputs=inputs,
        outputs={"output": tensor(["num_tokens", "hidden_size"], BF, "normalised activations")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


def gemma_rmsnorm(
    model: ModelConfig, *, tokens: Sequence[int] = tokens_between(1, 16384, (1000,))
) -> Problem:
    """Gemma's RMSNorm: the gain is stored as an offset from one and applied in fp32, (1 + w) * x_hat."""
    hidden = hidden_size(model)
    eps = rms_eps(model)
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def run(hidden_states, norm_weight):
            x = hidden_states.to(torch.float32)
            x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS)
            # Gemma: the stored weight is an offset; multiply by (1 + w) in fp32, round once.
            return (x * (1.0 + norm_weight.to(torch.float32))).to(hidden_states.dtype)
        """,
        EPS=eps,
    )
    return make_problem(
        name=f"{model.key}_gemma_rmsnorm",
        model=model,
        op_type="rmsnorm",
        tags=["norm", "rmsnorm", "memory-bound", "bf16", "decode", "prefill"],
        description=f"""
            Gemma-style RMSNorm of {model.display_name} (hidden_size {hidden}, rms_norm_eps {eps:g}).
            hidden_states is row-major [num_tokens, {hidden}] bf16 and norm_weight the [{hidden}] bf16
            stored weight w, which Gemma applies as an offset from one. Per token in fp32:
            x * rsqrt(mean(x^2) + eps) * (1 + w), rounded to bf16 once at the end (unlike Llama, which
            rounds before the gain). A kernel that multiplies by w instead of (1 + w) fails. One read and
            one write of the activation: memory-bound.
        """,
        axes={"num_tokens": var(NUM_TOKENS), "hidden_size": const(hidden)},
        inputs={
            "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "activations, row-major"),
            "norm_weight": tensor(["hidden_size"], BF, "stored RMSNorm weight w (applied as 1 + w)"),
        },
        outputs={"output": tensor(["num_tokens", "hidden_size"], BF, "normalised activations")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


def gemma2_sandwich_norm(
    model: ModelConfig, *, tokens: Sequence[int] = tokens_between(1, 8192, (1000,))
) -> Problem:
    """Gemma 2's post-attention norm, residual add and pre-feed-forward norm, fused."""
    hidden = hidden_size(model)
    eps = rms_eps(model)
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def gemma_rmsnorm(x, weight):
            xf = x.to(torch.float32)
            xf = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
            return (xf * (1.0 + weight.to(torch.float32))).to(x.dtype)


        def run(attn_output, residual, post_attention_norm_weight, pre_feedforward_norm_weight):
            residual_out = residual + gemma_rmsnorm(attn_output, post_attention_norm_weight)
            return gemma_rmsnorm(residual_out, pre_feedforward_norm_weight), residual_out
        """,
        EPS=eps,
    )
    return make_problem(
        name=f"{model.key}_sandwich_norm",
        model=model,
        op_type="fused_add_rmsnorm",
        tags=["norm", "rmsnorm", "residual", "fusion", "memory-bound", "bf16", "decode", "prefill"],
        description=f"""
            The norms around the residual add between attention and MLP in {model.display_name}
            (hidden_size {hidden}, rms_norm_eps {eps:g}), which normalises each sub-block's output before
            adding it to the residual stream and again before the next sub-block. With Gemma's
            RMSNorm g(x, w) = bf16(fp32 x * rsqrt(mean(x^2) + eps) * (1 + w)): residual_out = residual +
            g(attn_output, post_attention_norm_weight), added in bf16; output =
            g(residual_out, pre_feedforward_norm_weight). All activations are row-major
            [num_tokens, {hidden}] bf16, both outputs are checked. Fused, the three activation streams are
            read once and two written, instead of the five passes of separate kernels.
        """,
        axes={"num_tokens": var(NUM_TOKENS), "hidden_size": const(hidden)},
        inputs={
            "attn_output": tensor(
                ["num_tokens", "hidden_size"], BF, "output of the attention block (o_proj)"
            ),
            "residual": tensor(["num_tokens", "hidden_size"], BF, "residual stream"),
            "post_attention_norm_weight": tensor(
                ["hidden_size"], BF, "post-attention RMSNorm weight (1 + w)"
            ),
            "pre_feedforward_norm_weight": tensor(
                ["hidden_size"], BF, "pre-feed-forward RMSNorm weight (1 + w)"
            ),
        },
        outputs={
            "output": tensor(["num_tokens", "hidden_size"], BF, "normalised input of the MLP"),
            "residual_out": tensor(["num_tokens", "hidden_size"], BF, "new residual stream"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


_QK_GAIN = {
    # How each family applies the gain: (expression on fp32 x_hat and weight w, wording).
    "hf": (
        "w * xn.to(x.dtype)",
        "rounded to bf16, then multiplied by the bf16 gain (Hugging Face Qwen3 order)",
    ),
    "fp32": ("(w.to(torch.float32) * xn).to(x.dtype)", "multiplied by the gain in fp32 and rounded once"),
    "one_plus": (
        "((1.0 + w.to(torch.float32)) * xn).to(x.dtype)",
        "multiplied by (1 + w) in fp32, rounded once",
    ),
}


def qk_norm(
    model: ModelConfig,
    *,
    per_head: bool = True,
    gain: str = "hf",
    tokens: Sequence[int] = tokens_between(1, 8192, (1000,)),
) -> Problem:
    """RMSNorm of the query and key projections before rotary: per head (Qwen3, Gemma 3) or over the
    whole projection (OLMo 2)."""
    n_q, n_kv, dim = q_heads(model), kv_heads(model), head_dim(model)
    eps = rms_eps(model)
    expression, wording = _QK_GAIN[gain]
    q_shape = ["num_tokens", "num_q_heads", "head_dim"] if per_head else ["num_tokens", "q_size"]
    k_shape = ["num_tokens", "num_kv_heads", "head_dim"] if per_head else ["num_tokens", "kv_size"]
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def rms(x, w):
            xn = x.to(torch.float32)
            xn = xn * torch.rsqrt(xn.pow(2).mean(dim=-1, keepdim=True) + EPS)
            return $EXPRESSION


        def run(q, k, q_norm_weight, k_norm_weight):
            return rms(q, q_norm_weight), rms(k, k_norm_weight)
        """,
        EPS=eps,
        EXPRESSION=expression,
    )
    scope = (
        f"each head's {dim} channels separately (q is [num_tokens, {n_q}, {dim}], "
        f"k [num_tokens, {n_kv}, {dim}], "
        f"one [{dim}] gain shared by all heads)"
        if per_head
        else f"the whole projection (q is [num_tokens, {n_q * dim}], k [num_tokens, {n_kv * dim}], one gain "
        "per channel)"
    )
    axes = {
        "num_tokens": var(NUM_TOKENS),
        "num_q_heads": const(n_q),
        "num_kv_heads": const(n_kv),
        "head_dim": const(dim),
    }
    if not per_head:
        axes = {"num_tokens": var(NUM_TOKENS), "q_size": const(n_q * dim), "kv_size": const(n_kv * dim)}
    return make_problem(
        name=f"{model.key}_qk_norm",
        model=model,
        op_type="rmsnorm",
        tags=["norm", "rmsnorm", "qk-norm", "attention", "memory-bound", "bf16", "decode", "prefill"],
        description=f"""
            Query/key normalisation of {model.display_name}: after the q and k projections and before
            rotary embedding, an RMSNorm (eps {eps:g}) over {scope}. Mean of squares and rsqrt in fp32, the
            normalised value {wording}. Outputs have the inputs' shapes and bf16 dtype; both are checked. Many
            short rows ({dim if per_head else n_q * dim} channels): memory-bound, and usually fused into
            the rotary or QKV-projection epilogue.
        """,
        axes=axes,
        inputs={
            "q": tensor(q_shape, BF, "query projection"),
            "k": tensor(k_shape, BF, "key projection"),
            "q_norm_weight": tensor([q_shape[-1]], BF, "query RMSNorm weight"),
            "k_norm_weight": tensor([k_shape[-1]], BF, "key RMSNorm weight"),
        },
        outputs={
            "q_out": tensor(q_shape, BF, "normalised queries"),
            "k_out": tensor(k_shape, BF, "normalised keys"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


# -- rotary embedding -----------------------------------------------------------------------------------

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


# -- GEMMs at the layer's real shapes -----------------------------------------------------------------

_GEMM_TEXT = {
    "qkv": "the fused [q; k; v] projection",
    "o_proj": "the attention output projection",
    "gate_up": "the fused [gate; up] projection of the MLP",
    "down": "the MLP down projection",
    "lm_head": "the vocabulary projection (lm_head)",
}


def gemm_shape(model: ModelConfig, which: str, tp: int = 1) -> tuple[int, int]:
    """(N, K) of one layer GEMM on one tensor-parallel rank."""
    hidden = hidden_size(model)
    dim = head_dim(model)
    if which == "qkv":
        kv_per_rank = max(1, kv_heads(model) // tp)  # KV heads are replicated when tp exceeds them
        return shard(q_heads(model), tp, "num_attention_heads", model) * dim + 2 * kv_per_rank * dim, hidden
    if which == "o_proj":
        return hidden, shard(q_heads(model), tp, "num_attention_heads", model) * dim
    inter = (
        model.integer("ffn_config.ffn_hidden_size") if "ffn_config.ffn_hidden_size" in model.config else None
    )
    inter = inter or model.integer("intermediate_size")
    if which == "gate_up":
        return 2 * shard(inter, tp, "intermediate_size", model), hidden
    if which == "down":
        return hidden, shard(inter, tp, "intermediate_size", model)
    if which == "lm_head":
        return shard(model.integer("vocab_size"), tp, "vocab_size", model), hidden
    raise ValueError(f"unknown layer GEMM {which!r}; use one of {sorted(_GEMM_TEXT)}")


def layer_gemm(
    model: ModelConfig,
    *,
    which: str,
    tp: int = 1,
    bias: bool = False,
    tokens: Sequence[int] | None = None,
) -> Problem:
    """y = x W^T (+ b) in bf16 with fp32 accumulation, at one layer GEMM's shape on one TP rank."""
    n, k = gemm_shape(model, which, tp)
    if tokens is None:
        tokens = tokens_between(1, 1024 if which == "lm_head" else 8192, (3, 100, 1000))
    weight_mib = n * k * 2 / 2**20
    signature = "hidden_states, weight, bias" if bias else "hidden_states, weight"
    reference = reference_source(
        """
        import torch


        def run($SIGNATURE):
            # bf16 GEMM, fp32 accumulation, one rounding to bf16 (cuBLAS semantics).
            return torch.nn.functional.linear($SIGNATURE)
        """,
        SIGNATURE=signature,
    )
    inputs = {
        "hidden_states": tensor(["num_tokens", "in_features"], BF, "activations, row-major"),
        "weight": tensor(["out_features", "in_features"], BF, "weight in nn.Linear layout [out, in]"),
    }
    if bias:
        inputs["bias"] = tensor(["out_features"], BF, "bias added before rounding")
    bias_text = " + bias (added to the fp32 accumulator before the bf16 rounding)" if bias else ""
    return make_problem(
        name=f"{model.key}_{which}_gemm{tp_suffix(tp)}",
        model=model,
        op_type="gemm",
        tags=["gemm", "linear", "bf16", "decode", "prefill", "tensor-core"]
        + (["tensor-parallel"] if tp > 1 else []),
        description=f"""
            {_GEMM_TEXT[which].capitalize()} of {model.display_name}{tp_text(tp)}: output = hidden_states @
            weight^T{bias_text}. hidden_states is [num_tokens, {k}] bf16 row-major, weight [{n}, {k}] bf16 in
            nn.Linear layout (K-major); output [num_tokens, {n}] bf16 with fp32 accumulation. Decode-sized
            num_tokens stream the {weight_mib:.0f} MiB weight once (GEMV-like: many CTAs or split-K to reach
            full bandwidth); prefill-sized num_tokens are tensor-core bound (M={max(tokens)}, N={n},
            K={k}). Uneven token counts (3, 100, 1000) are included: pad or predicate tiles.
        """,
        axes={"num_tokens": var(NUM_TOKENS), "in_features": const(k), "out_features": const(n)},
        inputs=inputs,
        outputs={"output": tensor(["num_tokens", "out_features"], BF, "projection output")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


# -- activations ---------------------------------------------------------------------------------------

_ACTIVATIONS = {
    # kind: (gated, expression on fp32 tensors, name, formula text)
    "silu": (
        True,
        "gate * torch.sigmoid(gate) * up",
        "silu_and_mul",
        "silu(gate) * up = gate * sigmoid(gate) * up",
    ),
    "gelu_tanh": (
        True,
        "torch.nn.functional.gelu(gate, approximate='tanh') * up",
        "gelu_tanh_and_mul",
        "gelu_tanh(gate) * up with gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
    ),
    "gelu_new": (
        False,
        "torch.nn.functional.gelu(x, approximate='tanh')",
        "gelu_tanh",
        "gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hugging Face gelu_new)",
    ),
    "gelu": (
        False,
        "torch.nn.functional.gelu(x)",
        "gelu",
        "gelu(x) = 0.5 x (1 + erf(x / sqrt(2))) (exact erf GELU)",
    ),
    "relu2": (False, "torch.relu(x).square()", "relu2", "relu(x)^2 (squared ReLU)"),
}


def activation(
    model: ModelConfig,
    *,
    kind: str,
    intermediate: int | None = None,
    tp: int = 1,
    tokens: Sequence[int] = tokens_between(1, 8192, (1000,)),
) -> Problem:
    """The MLP activation between the up and down GEMMs, gated (x = [gate | up]) or not."""
    gated, expression, label, formula = _ACTIVATIONS[kind]
    inter = shard(intermediate or model.integer("intermediate_size"), tp, "intermediate_size", model)
    width = 2 * inter if gated else inter
    if gated:
        body = f"gate, up = xf[..., :{inter}], xf[..., {inter}:]\n    out = {expression}"
        layout = (
            f"x is [num_tokens, {width}] bf16 = [gate | up] (the fused gate_up projection output: gate in "
            f"columns 0-{inter - 1}, up in {inter}-{width - 1}); output is [num_tokens, {inter}] bf16"
        )
    else:
        body = f"x = xf\n    out = {expression}"
        layout = f"x is [num_tokens, {inter}] bf16 (the up projection output); output has the same shape"
    reference = reference_source(
        """
        import torch


        def run(x):
            dtype = x.dtype
            xf = x.to(torch.float32)
            $BODY
            return out.to(dtype)
        """,
        BODY=body,
    )
    return make_problem(
        name=f"{model.key}_{label}{tp_suffix(tp)}",
        model=model,
        op_type="activation",
        tags=["activation", label, "elementwise", "memory-bound", "bf16", "decode", "prefill"]
        + (["gated"] if gated else []),
        description=f"""
            The MLP activation of {model.display_name} (intermediate_size {inter}{tp_text(tp)}): {formula}.
            {layout}. Computed in fp32 from the bf16 inputs and rounded once (a kernel computing in bf16
            throughout drifts by a few ulps, still inside the tolerance). Elementwise and memory-bound: read
            {width} and write {inter} values per token; usually fused into the up-projection's epilogue.
        """,
        axes={"num_tokens": var(NUM_TOKENS), "in_width": const(width), "intermediate_size": const(inter)},
        inputs={
            "x": tensor(["num_tokens", "in_width"], BF, "[gate | up]" if gated else "up projection output")
        },
        outputs={"output": tensor(["num_tokens", "intermediate_size"], BF, "activated intermediate")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


def gpt_oss_swiglu(
    model: ModelConfig, *, tokens: Sequence[int] = tokens_between(1, 8192, (1000,))
) -> Problem:
    """gpt-oss's clamped SwiGLU with alpha 1.702 and the (up + 1) term, on interleaved gate/up columns."""
    inter = model.integer("intermediate_size")
    limit = model.number("swiglu_limit")
    alpha = 1.702  # GptOssExperts.alpha in transformers' modeling_gpt_oss
    reference = reference_source(
        """
        import torch

        LIMIT = $LIMIT
        ALPHA = $ALPHA


        def run(x):
            xf = x.to(torch.float32)
            gate, up = xf[..., 0::2], xf[..., 1::2]  # interleaved columns: gate, up, gate, up, ...
            gate = gate.clamp(max=LIMIT)
            up = up.clamp(min=-LIMIT, max=LIMIT)
            glu = gate * torch.sigmoid(gate * ALPHA)
            return ((up + 1) * glu).to(x.dtype)
        """,
        LIMIT=limit,
        ALPHA=alpha,
    )
    return make_problem(
        name=f"{model.key}_swiglu_clamp",
        model=model,
        op_type="activation",
        tags=["activation", "swiglu", "moe", "elementwise", "memory-bound", "bf16", "decode", "prefill"],
        description=f"""
            The expert activation of {model.display_name} (intermediate_size {inter}, swiglu_limit {limit:g}).
            x is [num_tokens, {2 * inter}] bf16, the gate_up projection output with gate and up interleaved
            column by column (even columns gate, odd columns up, as the checkpoint stores them). In fp32:
            gate = min(gate, {limit:g}); up = clamp(up, -{limit:g}, {limit:g}); output = (up + 1) * gate *
            sigmoid({alpha} * gate), rounded to bf16, [num_tokens, {inter}]. A plain SwiGLU (no clamp, no
            +1, or alpha 1) fails; the clamps bound activations of trained weights (random test inputs rarely
            reach them, but a kernel must keep them). Elementwise and memory-bound.
        """,
        axes={"num_tokens": var(NUM_TOKENS), "in_width": const(2 * inter), "intermediate_size": const(inter)},
        inputs={"x": tensor(["num_tokens", "in_width"], BF, "interleaved [gate, up] columns")},
        outputs={"output": tensor(["num_tokens", "intermediate_size"], BF, "activated intermediate")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


# -- embedding, logits, sampling ---------------------------------------------------------------------------


def embedding(
    model: ModelConfig,
    *,
    tp: int = 1,
    multiplier: float | None = None,
    multiplier_text: str = "",
    tokens: Sequence[int] = tokens_between(1, 16384, (1000,)),
) -> Problem:
    """Token embedding lookup (one vocabulary-parallel shard when tp > 1), optionally scaled."""
    vocab = model.integer("vocab_size")
    local = shard(vocab, tp, "vocab_size", model)
    hidden = hidden_size(model)
    scale_line = (
        "" if multiplier is None else f"\n    out = out * torch.tensor({multiplier!r}, dtype=out.dtype)"
    )
    reference = reference_source(
        """
        import torch

        LOCAL_VOCAB = $LOCAL


        def run(input_ids, embed_tokens_weight):
            ids = input_ids.to(torch.int64)
            # This rank holds rows [0, LOCAL_VOCAB); other ids are looked up by other ranks and give zeros.
            local = ids < LOCAL_VOCAB
            out = embed_tokens_weight[torch.where(local, ids, 0)]
            out = torch.where(local[:, None], out, torch.zeros_like(out))$SCALE
            return out
        """,
        LOCAL=local,
        SCALE=scale_line,
    )
    shard_text = (
        f" This is rank 0 of a vocabulary-parallel embedding over {tp} GPUs (vLLM VocabParallelEmbedding): "
        "it "
        f"holds rows 0-{local - 1}; ids outside give zero rows (the all-reduce adds the other ranks' rows)."
        if tp > 1
        else ""
    )
    scale_text = (
        "" if multiplier is None else f" Rows are then multiplied in bf16 by {multiplier:g}{multiplier_text}."
    )
    problem = make_problem(
        name=f"{model.key}_embedding{tp_suffix(tp)}",
        model=model,
        op_type="embedding",
        tags=["embedding", "gather", "memory-bound", "bf16", "decode", "prefill"],
        description=f"""
            Token embedding lookup of {model.display_name} (vocab_size {vocab}, hidden_size {hidden}):
            output[t] = embed_tokens_weight[input_ids[t]]. input_ids is [num_tokens] int32 with ids in
            [0, {vocab}); embed_tokens_weight is [{local}, {hidden}] bf16.{shard_text}{scale_text} Output
            [num_tokens, {hidden}] bf16. A pure gather: each token reads one {hidden * 2}-byte row, so the
            cost is the rows touched plus the output, far less than the table.
        """,
        axes={
            "num_tokens": var(NUM_TOKENS),
            "vocab_size": const(vocab),
            "local_vocab": const(local),
            "hidden_size": const(hidden),
        },
        inputs={
            "input_ids": tensor(["num_tokens"], I32, "token ids, in [0, vocab_size)"),
            "embed_tokens_weight": tensor(
                ["local_vocab", "hidden_size"], BF, "embedding table rows of this rank"
            ),
        },
        outputs={"output": tensor(["num_tokens", "hidden_size"], BF, "embeddings")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )
    # A gather reads only the rows it needs: ids, one row per token, the output.
    problem.definition.bytes = "num_tokens * (4 + 4 * hidden_size)"
    return problem


def logit_softcap(
    model: ModelConfig, *, tp: int = 1, tokens: Sequence[int] = tokens_between(1, 256, (3, 100))
) -> Problem:
    """Gemma 2's final logit soft-capping: cap * tanh(logits / cap), bf16 in, fp32 out."""
    vocab = shard(model.integer("vocab_size"), tp, "vocab_size", model)
    cap = model.number("final_logit_softcapping")
    reference = reference_source(
        """
        import torch

        CAP = $CAP


        def run(logits):
            return torch.tanh(logits.to(torch.float32) / CAP) * CAP
        """,
        CAP=cap,
    )
    return make_problem(
        name=f"{model.key}_logit_softcap{tp_suffix(tp)}",
        model=model,
        op_type="softcap",
        tags=["logits", "softcap", "elementwise", "memory-bound", "fp32", "decode"],
        description=f"""
            Final logit soft-capping of {model.display_name} (final_logit_softcapping {cap:g}), applied to the
            lm_head output before sampling{tp_text(tp)}: output = {cap:g} * tanh(logits / {cap:g}). logits is
            [num_tokens, {vocab}] bf16 (one row per sequence being sampled), output [num_tokens, {vocab}]
            fp32. Use an accurate fp32 tanh: tanh.approx's 2^-11 relative error, times the cap, exceeds the
            tolerance; skipping the cap fails too (cubic term ~ x^3 / (3 cap^2)). Memory-bound: read 2 and
            write 4 bytes per vocabulary entry.
        """,
        axes={"num_tokens": var("sequences sampled in this step"), "vocab_size": const(vocab)},
        inputs={"logits": tensor(["num_tokens", "vocab_size"], BF, "lm_head output")},
        outputs={"output": tensor(["num_tokens", "vocab_size"], F32, "soft-capped logits")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=FP32,
    )


def top_k_top_p_probs(
    model: ModelConfig,
    *,
    top_k: int = 50,
    top_p: float = 0.9,
    temperature: float = 0.7,
    batches: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 3, 100),
) -> Problem:
    """The sampling distribution after temperature, top-k then top-p filtering, renormalised."""
    vocab = model.integer("vocab_size")
    reference = reference_source(
        """
        import torch


        TOP_K = $TOP_K


        def run(logits, temperature, top_p):
            probs = torch.softmax(logits.to(torch.float32) / temperature, dim=-1)
            top, ids = torch.topk(probs, TOP_K, dim=-1, sorted=True)
            top = top / top.sum(dim=-1, keepdim=True)
            # Top-p over the renormalised top-k: keep a token while the mass before it is below top_p.
            before = torch.cumsum(top, dim=-1) - top
            kept = torch.where(before < top_p, top, torch.zeros_like(top))
            return kept / kept.sum(dim=-1, keepdim=True), ids.to(torch.int32)
        """,
        TOP_K=top_k,
    )
    return make_problem(
        name=f"{model.key}_top_k_top_p_probs",
        model=model,
        op_type="sampling",
        tags=["sampling", "top-k", "top-p", "softmax", "selection", "fp32", "decode"],
        description=f"""
            The sampling distribution of {model.display_name}'s decoder (vocab_size {vocab}) for a batch of
            sequences, top-k then top-p (nucleus) filtered as FlashInfer's top_k_top_p sampling does with
            top-k first, returned in sparse form. logits is [batch_size, {vocab}] fp32; temperature
            ({temperature}) and top_p ({top_p}) are Python floats; top_k is {top_k}. probs = softmax(logits /
            temperature) over the whole vocabulary in fp32; the top_k most probable tokens, by decreasing
            probability, are renormalised to sum 1; a token stays while the renormalised mass before it is
            below top_p, the others get 0; the kept ones are renormalised again. Outputs: probs
            [batch_size, {top_k}] fp32 in that order and token_ids [batch_size, {top_k}] int32 (compared
            exactly). Needs no full sort: one pass for the softmax statistics, a per-row top-k selection
            (radix or bucket select), then a {top_k}-wide scan.
        """,
        axes={
            "batch_size": var("sequences sampled in this decode step"),
            "vocab_size": const(vocab),
            "top_k": const(top_k),
        },
        inputs={
            "logits": tensor(["batch_size", "vocab_size"], F32, "next-token logits"),
            "temperature": tensor(None, F32, "softmax temperature"),
            "top_p": tensor(None, F32, "nucleus mass kept by top-p"),
        },
        outputs={
            "probs": tensor(["batch_size", "top_k"], F32, "filtered, renormalised probabilities"),
            "token_ids": tensor(["batch_size", "top_k"], I32, "token of each probability"),
        },
        reference=reference,
        workloads=[{"batch_size": b} for b in batches],
        tolerance=FP32,
        scalars={"temperature": temperature, "top_p": top_p},
    )
