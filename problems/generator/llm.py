"""Operator templates of language models: norms, rotary embedding, attention, GEMM, MLP, routing,
quantisation.

Each template is a function ``(model, **options) -> Problem`` that reads the model's configuration
numbers, bakes constants (epsilons, scales) into a plain step-by-step PyTorch reference and lists
workloads from single-token decode to long prefill. References return their outputs in output
order and are deterministic; kernels are written in destination-passing style against the same
definition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..dtypes import DType
from ..load import Problem
from .common import (
    BF16,
    BF16_ATTENTION,
    DECODE_TO_PREFILL,
    FP8_QUANT,
    FP32_FROM_BF16_GEMM,
    const,
    expr,
    make_problem,
    reference_source,
    tensor,
    var,
)
from .llm_shapes import head_dim as head_dim_of
from .llm_shapes import kv_heads, q_heads, with_counting
from .models import ModelConfig

BF = DType.bfloat16


def tokens_up_to(limit: int) -> tuple[int, ...]:
    """Powers of two from 1 to ``limit`` (the decode-to-prefill sweep, capped to keep tensors in the
    tens to hundreds of MB)."""
    return tuple(t for t in DECODE_TO_PREFILL if t <= limit)


def _token_workloads(tokens: Sequence[int]) -> list[dict[str, int]]:
    return [{"num_tokens": t} for t in tokens]


_NUM_TOKENS = "tokens in the batch: 1 for a single decode step, thousands for a prefill chunk"


# The decode-to-prefill sweep plus one uneven prefill chunk, so a kernel tuned to powers of two is
# caught on the published workloads already (16 workloads, SOL-ExecBench's usual count).
def rmsnorm(model: ModelConfig, *, tokens: Sequence[int] = (*tokens_up_to(16384), 1000)) -> Problem:
    """RMSNorm with a learned gain, in Hugging Face order (normalise in fp32, round, then scale)."""
    hidden = model.integer("hidden_size")
    eps = model.number("rms_norm_eps")
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def run(hidden_states, norm_weight):
            x = hidden_states.to(torch.float32)
            variance = x.pow(2).mean(dim=-1, keepdim=True)
            x = x * torch.rsqrt(variance + EPS)
            # Hugging Face order: round the normalised value to the input dtype, then apply the gain.
            return norm_weight * x.to(hidden_states.dtype)
        """,
        EPS=eps,
    )
    return make_problem(
        name=f"{model.key}_rmsnorm",
        model=model,
        op_type="rmsnorm",
        tags=["norm", "rmsnorm", "memory-bound", "bf16", "decode", "prefill"],
        description=f"""
            RMSNorm over the hidden dimension, applied before every attention and MLP block of
            {model.display_name} (hidden_size {hidden}, rms_norm_eps {eps:g}). hidden_states is a
            row-major [num_tokens, {hidden}] bf16 activation and norm_weight the [{hidden}] bf16 gain.
            Per token: mean of x^2 over the {hidden} channels in fp32, x * rsqrt(mean + eps) in fp32,
            rounded to bf16, then multiplied by norm_weight in bf16 (the order of Hugging Face's
            RMSNorm). Purely memory-bound: one read and one write of the activation. num_tokens
            sweeps from a single decode token to a {max(tokens)}-token prefill chunk.
        """,
        axes={"num_tokens": var(_NUM_TOKENS), "hidden_size": const(hidden)},
        inputs={
            "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "activations, row-major"),
            "norm_weight": tensor(["hidden_size"], BF, "RMSNorm gain"),
        },
        outputs={"output": tensor(["num_tokens", "hidden_size"], BF, "normalised activations")},
        reference=reference,
        workloads=_token_workloads(tokens),
        tolerance=BF16,
    )


def fused_add_rmsnorm(model: ModelConfig, *, tokens: Sequence[int] = tokens_up_to(8192)) -> Problem:
    """Residual add + RMSNorm, returning the normalised value and the new residual stream."""
    hidden = model.integer("hidden_size")
    eps = model.number("rms_norm_eps")
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def run(hidden_states, residual, norm_weight):
            # The new residual stream is the bf16 sum, as in Hugging Face's decoder layer.
            residual_out = hidden_states + residual
            x = residual_out.to(torch.float32)
            variance = x.pow(2).mean(dim=-1, keepdim=True)
            x = x * torch.rsqrt(variance + EPS)
            output = norm_weight * x.to(hidden_states.dtype)
            return output, residual_out
        """,
        EPS=eps,
    )
    return make_problem(
        name=f"{model.key}_fused_add_rmsnorm",
        model=model,
        op_type="fused_add_rmsnorm",
        tags=["norm", "rmsnorm", "residual", "fusion", "memory-bound", "bf16", "decode", "prefill"],
        description=f"""
            Residual add fused with the following RMSNorm, as between the sub-blocks of
            {model.display_name} (hidden_size {hidden}, rms_norm_eps {eps:g}). residual_out =
            hidden_states + residual, rounded to bf16 (the new residual stream); output =
            RMSNorm(residual_out) * norm_weight with the mean of squares and the rsqrt in fp32, the
            normalised value rounded to bf16 before the bf16 gain (Hugging Face order). All
            activations are row-major [num_tokens, {hidden}] bf16; both outputs are checked. Fusing
            saves a full write and re-read of the sum: three activation streams in, two out.
        """,
        axes={"num_tokens": var(_NUM_TOKENS), "hidden_size": const(hidden)},
        inputs={
            "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "output of the previous sub-block"),
            "residual": tensor(["num_tokens", "hidden_size"], BF, "residual stream"),
            "norm_weight": tensor(["hidden_size"], BF, "RMSNorm gain"),
        },
        outputs={
            "output": tensor(["num_tokens", "hidden_size"], BF, "RMSNorm(hidden_states + residual)"),
            "residual_out": tensor(["num_tokens", "hidden_size"], BF, "hidden_states + residual"),
        },
        reference=reference,
        workloads=_token_workloads(tokens),
        tolerance=BF16,
    )


def rope(model: ModelConfig, *, tokens: Sequence[int] = tokens_up_to(8192)) -> Problem:
    """Rotary embedding of q and k with precomputed cos/sin tables (rotate-half layout)."""
    n_q = q_heads(model)
    n_kv = kv_heads(model)
    head_dim = head_dim_of(model)
    half = head_dim // 2
    reference = reference_source(
        """
        import torch


        def rotate_half(x):
            first, second = x[..., :$HALF], x[..., $HALF:]
            return torch.cat((-second, first), dim=-1)


        def run(q, k, cos, sin):
            cos = cos[:, None, :]  # broadcast over heads
            sin = sin[:, None, :]
            qf = q.to(torch.float32)
            kf = k.to(torch.float32)
            q_out = qf * cos + rotate_half(qf) * sin
            k_out = kf * cos + rotate_half(kf) * sin
            return q_out.to(q.dtype), k_out.to(k.dtype)
        """,
        HALF=half,
    )
    return make_problem(
        name=f"{model.key}_rope",
        model=model,
        op_type="rope",
        tags=["rope", "attention", "elementwise", "memory-bound", "bf16", "decode", "prefill"],
        description=f"""
            Rotary position embedding applied to the query and key projections of
            {model.display_name} ({n_q} query heads, {n_kv} KV heads, head_dim {head_dim}). q is
            [num_tokens, {n_q}, {head_dim}] and k [num_tokens, {n_kv}, {head_dim}], bf16, token-major
            then head then channel. cos and sin are fp32 [num_tokens, {head_dim}] tables for each
            token's position in the Hugging Face rotate-half layout: channel i pairs with channel
            i + {half}, and cos[:, i] == cos[:, i + {half}]. out = x * cos + rotate_half(x) * sin with
            rotate_half(x) = cat(-x[..., {half}:], x[..., :{half}]), evaluated in fp32 and rounded to
            bf16. The model's rope_theta ({model.number("rope_theta"):g}) and frequency scaling are
            already in the tables: use them as given, do not recompute frequencies.
        """,
        axes={
            "num_tokens": var(_NUM_TOKENS),
            "num_q_heads": const(n_q),
            "num_kv_heads": const(n_kv),
            "head_dim": const(head_dim),
        },
        inputs={
            "q": tensor(["num_tokens", "num_q_heads", "head_dim"], BF, "query projection"),
            "k": tensor(["num_tokens", "num_kv_heads", "head_dim"], BF, "key projection"),
            "cos": tensor(
                ["num_tokens", "head_dim"], DType.float32, "cos(position * inv_freq), rotate-half layout"
            ),
            "sin": tensor(
                ["num_tokens", "head_dim"], DType.float32, "sin(position * inv_freq), rotate-half layout"
            ),
        },
        outputs={
            "q_out": tensor(["num_tokens", "num_q_heads", "head_dim"], BF, "rotated queries"),
            "k_out": tensor(["num_tokens", "num_kv_heads", "head_dim"], BF, "rotated keys"),
        },
        reference=reference,
        workloads=_token_workloads(tokens),
        tolerance=BF16,
    )


GQA_DECODE_SIZES: tuple[tuple[int, int], ...] = (
    (1, 256),
    (1, 2048),
    (4, 1024),
    (1, 8192),
    (8, 2048),
    (16, 1024),
    (8, 8192),
    (32, 2048),
    (64, 1024),
    (16, 8192),
    (64, 2048),
)
"""(batch_size, kv_len): long single-sequence contexts to large decode batches; at most 128 Ki cached
tokens, i.e. 512 MiB of bf16 K+V for 8 KV heads of 128."""


def gqa_decode(
    model: ModelConfig, *, sizes: Sequence[tuple[int, int]] = GQA_DECODE_SIZES, kind: str = "gqa"
) -> Problem:
    """One decode step of grouped-query attention over a contiguous KV cache with per-sequence lengths."""
    n_q = q_heads(model)
    n_kv = kv_heads(model)
    head_dim = head_dim_of(model)
    group = n_q // n_kv
    reference = reference_source(
        """
        import torch


        def run(q, k_cache, v_cache, kv_lens, sm_scale):
            batch, num_q_heads, head_dim = q.shape
            kv_len, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
            group = num_q_heads // num_kv_heads
            # Query head h attends with KV head h // group.
            qf = q.to(torch.float32).reshape(batch, num_kv_heads, group, head_dim)
            kf = k_cache.to(torch.float32)
            vf = v_cache.to(torch.float32)
            scores = torch.einsum("bhgd,bshd->bhgs", qf, kf) * sm_scale
            positions = torch.arange(kv_len, device=q.device)
            valid = positions[None, :] < kv_lens.to(torch.int64)[:, None]
            scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            out = torch.einsum("bhgs,bshd->bhgd", probs, vf)
            return out.reshape(batch, num_q_heads, head_dim).to(q.dtype)
        """
    )
    problem = make_problem(
        name=f"{model.key}_{kind}_decode",
        model=model,
        op_type="gqa_decode",
        tags=["attention", "gqa", "decode", "kv-cache", "memory-bound", "bf16", "split-kv"],
        description=f"""
            Grouped-query attention for one decode step of {model.display_name}: {n_q} query heads
            share {n_kv} KV heads (groups of {group}), head_dim {head_dim}. q is
            [batch_size, {n_q}, {head_dim}] bf16 (one new token per sequence); k_cache and v_cache
            are [batch_size, kv_len, {n_kv}, {head_dim}] bf16, contiguous (NHD layout, one cache per
            sequence). Only the first kv_lens[b] positions of sequence b are valid
            (1 <= kv_lens[b] <= kv_len, int32); later positions hold unrelated data and must be
            ignored. Query head h reads KV head h // {group}. output[b, h] =
            softmax(sm_scale * q[b, h] . K[b, :len, h // {group}]^T) @ V[b, :len, h // {group}] with
            scores and softmax in fp32, rounded to bf16; sm_scale is a Python float
            (1/sqrt({head_dim})). Bound by reading the cache once: share each KV head across its
            {group} query heads, and split long contexts across blocks (flash-decoding) when the batch
            is small.
        """,
        axes={
            "batch_size": var("sequences decoding one token each"),
            "kv_len": var("allocated cache length per sequence"),
            "num_qo_heads": const(n_q),
            "num_kv_heads": const(n_kv),
            "head_dim": const(head_dim),
        },
        constraints=["num_qo_heads % num_kv_heads == 0"],
        inputs={
            "q": tensor(["batch_size", "num_qo_heads", "head_dim"], BF, "query of the new token"),
            "k_cache": tensor(["batch_size", "kv_len", "num_kv_heads", "head_dim"], BF, "key cache"),
            "v_cache": tensor(["batch_size", "kv_len", "num_kv_heads", "head_dim"], BF, "value cache"),
            "kv_lens": tensor(["batch_size"], DType.int32, "valid cache length per sequence, in [1, kv_len]"),
            "sm_scale": tensor(None, DType.float32, "softmax scale, 1/sqrt(head_dim)"),
        },
        outputs={"output": tensor(["batch_size", "num_qo_heads", "head_dim"], BF, "attention output")},
        reference=reference,
        workloads=[{"batch_size": b, "kv_len": s} for b, s in sizes],
        tolerance=BF16_ATTENTION,
        scalars={"sm_scale": 1.0 / math.sqrt(head_dim)},
    )
    # The reference multiplies in fp32 from bf16 inputs; a kernel uses bf16 tensor cores.
    return with_counting(problem, tensor_core_dtype=BF)


def qkv_proj_gemm(model: ModelConfig, *, tokens: Sequence[int] = tokens_up_to(8192)) -> Problem:
    """The fused q/k/v projection GEMM, y = x W^T, in bf16 with fp32 accumulation."""
    hidden = model.integer("hidden_size")
    n_q = q_heads(model)
    n_kv = kv_heads(model)
    head_dim = head_dim_of(model)
    q_size, kv_size = n_q * head_dim, n_kv * head_dim
    out_features = q_size + 2 * kv_size
    weight_mib = out_features * hidden * 2 / 2**20
    reference = reference_source(
        """
        import torch


        def run(hidden_states, qkv_proj_weight):
            # bf16 GEMM with fp32 accumulation (cuBLAS on GPU): out = hidden_states @ weight^T.
            return torch.nn.functional.linear(hidden_states, qkv_proj_weight)
        """
    )
    return make_problem(
        name=f"{model.key}_qkv_proj_gemm",
        model=model,
        op_type="gemm",
        tags=["gemm", "linear", "attention", "bf16", "decode", "prefill", "tensor-core"],
        description=f"""
            The fused QKV projection of {model.display_name}'s attention: qkv = hidden_states @
            qkv_proj_weight^T. hidden_states is [num_tokens, {hidden}] bf16 row-major;
            qkv_proj_weight is [{out_features}, {hidden}] bf16 in nn.Linear layout [out, in] (K-major),
            rows 0-{q_size - 1} are q_proj ({n_q} heads x {head_dim}), then k_proj and v_proj with
            {kv_size} rows each ({n_kv} KV heads x {head_dim}), packed as vLLM's QKVParallelLinear
            does. Output [num_tokens, {out_features}] bf16 with fp32 accumulation. Small num_tokens
            are bound by streaming the {weight_mib:.0f} MiB weight (GEMV-like, use split-K or many CTAs);
            large num_tokens are tensor-core bound (M={max(tokens)}, N={out_features}, K={hidden}).
        """,
        axes={"num_tokens": var(_NUM_TOKENS), "hidden_size": const(hidden), "qkv_size": const(out_features)},
        inputs={
            "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "normalised activations"),
            "qkv_proj_weight": tensor(
                ["qkv_size", "hidden_size"], BF, "[q; k; v] projection weight, [out, in]"
            ),
        },
        outputs={"qkv": tensor(["num_tokens", "qkv_size"], BF, "[q | k | v] per token")},
        reference=reference,
        workloads=_token_workloads(tokens),
        tolerance=BF16,
    )


def swiglu_mlp(model: ModelConfig, *, tokens: Sequence[int] = tokens_up_to(8192)) -> Problem:
    """The gated SiLU feed-forward block: down(silu(gate(x)) * up(x)), Hugging Face LlamaMLP in bf16."""
    hidden = model.integer("hidden_size")
    inter = model.integer("intermediate_size")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F


        def run(hidden_states, gate_proj_weight, up_proj_weight, down_proj_weight):
            # Hugging Face LlamaMLP in bf16: each GEMM accumulates in fp32 and rounds to bf16.
            gate = F.linear(hidden_states, gate_proj_weight)
            up = F.linear(hidden_states, up_proj_weight)
            return F.linear(F.silu(gate) * up, down_proj_weight)
        """
    )
    return make_problem(
        name=f"{model.key}_swiglu_mlp",
        model=model,
        op_type="mlp",
        tags=["mlp", "swiglu", "gemm", "fusion", "bf16", "decode", "prefill", "tensor-core"],
        description=f"""
            The feed-forward block of {model.display_name} (hidden_size {hidden}, intermediate_size
            {inter}, SiLU-gated): out = down_proj(silu(gate_proj(x)) * up_proj(x)). hidden_states is
            [num_tokens, {hidden}] bf16; gate_proj_weight and up_proj_weight are [{inter}, {hidden}],
            down_proj_weight [{hidden}, {inter}], bf16 in nn.Linear layout [out, in]. The reference
            follows Hugging Face LlamaMLP in bf16 (each GEMM accumulates in fp32 and rounds to bf16;
            silu and the product act on bf16 values); keeping the [num_tokens, {inter}] intermediate
            in fp32 or on chip is within tolerance. Fuse the gate/up GEMMs (one pass over x) and the
            activation into their epilogue.
        """,
        axes={
            "num_tokens": var(_NUM_TOKENS),
            "hidden_size": const(hidden),
            "intermediate_size": const(inter),
        },
        inputs={
            "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "normalised activations"),
            "gate_proj_weight": tensor(
                ["intermediate_size", "hidden_size"], BF, "gate projection, [out, in]"
            ),
            "up_proj_weight": tensor(["intermediate_size", "hidden_size"], BF, "up projection, [out, in]"),
            "down_proj_weight": tensor(
                ["hidden_size", "intermediate_size"], BF, "down projection, [out, in]"
            ),
        },
        outputs={"output": tensor(["num_tokens", "hidden_size"], BF, "MLP output")},
        reference=reference,
        workloads=_token_workloads(tokens),
        tolerance=BF16,
    )


def moe_topk_softmax_router(model: ModelConfig, *, tokens: Sequence[int] = tokens_up_to(16384)) -> Problem:
    """Router GEMM + softmax + top-k (+ renormalisation when the model's norm_topk_prob is set)."""
    hidden = model.integer("hidden_size")
    experts = model.integer("num_experts")
    top_k = model.integer("num_experts_per_tok")
    renormalise = bool(model.config.get("norm_topk_prob", False))
    reference = reference_source(
        """
        import torch

        TOP_K = $TOP_K
        RENORMALISE = $RENORMALISE


        def run(hidden_states, gate_weight):
            # Logits accumulate and stay in fp32: rounding them to bf16 creates ties among experts.
            logits = hidden_states.to(torch.float32) @ gate_weight.to(torch.float32).t()
            probs = torch.softmax(logits, dim=-1)
            topk_weights, topk_ids = torch.topk(probs, TOP_K, dim=-1, largest=True, sorted=True)
            if RENORMALISE:
                topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
            return topk_weights, topk_ids.to(torch.int32)
        """,
        TOP_K=top_k,
        RENORMALISE=renormalise,
    )
    renorm_text = (
        f"the {top_k} largest probabilities are renormalised to sum to 1 (norm_topk_prob)"
        if renormalise
        else f"the {top_k} largest probabilities are returned as they are"
    )
    return make_problem(
        name=f"{model.key}_moe_router_topk",
        model=model,
        op_type="moe_router",
        tags=["moe", "router", "topk", "softmax", "gemm", "fp32", "decode", "prefill"],
        description=f"""
            Top-k softmax router of the {model.display_name} mixture-of-experts layers (hidden_size
            {hidden}, {experts} experts, {top_k} per token). hidden_states is [num_tokens, {hidden}]
            bf16 and gate_weight [{experts}, {hidden}] bf16 (nn.Linear layout [out, in]). logits =
            hidden_states @ gate_weight^T accumulated in fp32 and kept in fp32 (do not round logits
            to bf16); probabilities = softmax over the {experts} experts in fp32; {renorm_text}.
            Outputs: topk_weights [num_tokens, {top_k}] fp32 and topk_ids [num_tokens, {top_k}] int32,
            both ordered by decreasing probability (ids are compared exactly). A skinny GEMM
            (N = {experts}) fused with a per-row softmax and top-{top_k} selection.
        """,
        axes={
            "num_tokens": var(_NUM_TOKENS),
            "hidden_size": const(hidden),
            "num_experts": const(experts),
            "top_k": const(top_k),
        },
        constraints=["top_k <= num_experts"],
        inputs={
            "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "normalised activations"),
            "gate_weight": tensor(["num_experts", "hidden_size"], BF, "router weight, [out, in]"),
        },
        outputs={
            "topk_weights": tensor(["num_tokens", "top_k"], DType.float32, "routing weights, decreasing"),
            "topk_ids": tensor(["num_tokens", "top_k"], DType.int32, "selected experts, same order"),
        },
        reference=reference,
        workloads=_token_workloads(tokens),
        tolerance=FP32_FROM_BF16_GEMM,
    )


def fp8_per_token_group_quant(
    model: ModelConfig, *, tokens: Sequence[int] = tokens_up_to(8192), fp8_max: float = 448.0
) -> Problem:
    """Dynamic 1 x group_size FP8 (e4m3) activation quantisation with fp32 scales."""
    hidden = model.integer("hidden_size")
    group = model.integer("quantization_config.weight_block_size")
    reference = reference_source(
        """
        import torch

        GROUP = $GROUP
        FP8_MAX = $FP8_MAX
        MIN_AMAX = 1e-10


        def run(x):
            num_tokens, hidden = x.shape
            groups = x.to(torch.float32).reshape(num_tokens, hidden // GROUP, GROUP)
            amax = groups.abs().amax(dim=-1, keepdim=True).clamp(min=MIN_AMAX)
            scales = amax / FP8_MAX
            q = (groups / scales).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
            return q.reshape(num_tokens, hidden), scales.reshape(num_tokens, hidden // GROUP)
        """,
        GROUP=group,
        FP8_MAX=fp8_max,
    )
    n_groups = hidden // group
    return make_problem(
        name=f"{model.key}_fp8_act_quant",
        model=model,
        op_type="quantize_fp8",
        tags=["quantization", "fp8", "e4m3", "per-token-group", "memory-bound", "decode", "prefill"],
        description=f"""
            Dynamic per-token-group FP8 quantisation of activations, as {model.display_name} does
            before each FP8 GEMM (hidden_size {hidden}; 1 x {group} groups along the hidden
            dimension, matching the {group}x{group} weight blocks; e4m3). x is [num_tokens, {hidden}]
            bf16. For each token and each of its {n_groups} groups: scale = max(|x|) / {fp8_max:g} in
            fp32 (max floored at 1e-10), x_fp8 = clamp(x / scale, -{fp8_max:g}, {fp8_max:g}) cast to
            float8_e4m3fn with round-to-nearest-even. Outputs x_fp8 [num_tokens, {hidden}]
            float8_e4m3fn and scales [num_tokens, {n_groups}] fp32, row-major (dequantise as
            x_fp8 * scale). One read of x, a write of a quarter less: memory-bound.
        """,
        axes={
            "num_tokens": var(_NUM_TOKENS),
            "hidden_size": const(hidden),
            "group_size": const(group),
            "num_groups": expr("hidden_size // group_size", "quantisation groups per token"),
        },
        constraints=["hidden_size % group_size == 0"],
        inputs={"x": tensor(["num_tokens", "hidden_size"], BF, "activations to quantise")},
        outputs={
            "x_fp8": tensor(["num_tokens", "hidden_size"], DType.float8_e4m3fn, "quantised activations"),
            "scales": tensor(["num_tokens", "num_groups"], DType.float32, "per-group dequantisation scales"),
        },
        reference=reference,
        workloads=_token_workloads(tokens),
        tolerance=FP8_QUANT,
    )
