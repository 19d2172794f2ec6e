"""Norm templates of language models beyond :mod:`.llm`'s RMSNorm: LayerNorm with or without its affine
terms, Gemma's (1 + w) RMSNorm, Gemma 2's sandwich norm around the residual add, and RMSNorm of the query
and key projections. Same conventions as :mod:`.llm` and :mod:`.llm_ops`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16, const, make_problem, reference_source, tensor, var
from .llm_shapes import (
    BF,
    NUM_TOKENS,
    head_dim,
    hidden_size,
    kv_heads,
    q_heads,
    rms_eps,
    token_workloads,
    tokens_between,
)
from .models import ModelConfig

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
