"""Attention templates of language models: causal prefill (with sliding windows and soft-capping), decode
variants (sliding window, soft-capping, attention sinks, ALiBi), multi-head latent attention decode.

References compute scores and softmax in fp32 from the bf16 inputs (as FlashAttention keeps them on
chip); their matrix products are re-keyed to bf16 for the speed of light, since a kernel runs them on
bf16 tensor cores, and masked prefill references carry the exact count of visible (query, key) pairs
rather than the full square they compute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..load import Problem
from .common import BF16_ATTENTION, const, make_problem, reference_source, tensor, var
from .llm_shapes import BF, F32, I32, head_dim, kv_heads, limit_bytes, q_heads, with_counting
from .models import ModelConfig

PREFILL_SIZES: tuple[tuple[int, int], ...] = (
    (1, 128), (1, 256), (2, 256), (1, 512), (1, 1024), (4, 512), (1, 2048), (2, 2048), (8, 512),
    (1, 4096), (4, 2048), (1, 8192),
)  # fmt: skip
"""(batch_size, seq_len) of causal prefill: short prompts to an 8 Ki-token prompt, and batches of them."""

DECODE_SIZES: tuple[tuple[int, int], ...] = (
    (1, 256), (2, 256), (1, 1024), (4, 512), (1, 4096), (8, 1024), (16, 512), (1, 8192), (4, 2048), (8, 4096),
    (32, 1024), (64, 512), (16, 4096), (64, 2048), (32, 8192),
)  # fmt: skip
"""(batch_size, kv_len) of one decode step: long single contexts to large batches."""

_CACHE_BUDGET = 320 * 2**20
"""Largest K+V cache (bytes) of a decode workload: large enough to be far past L2, small enough to
generate quickly."""


def _sm_scale(model: ModelConfig) -> tuple[float, str]:
    if "query_pre_attn_scalar" in model.config:
        scalar = model.number("query_pre_attn_scalar")
        return scalar**-0.5, f"query_pre_attn_scalar^-0.5 = {scalar:g}^-0.5"
    dim = head_dim(model)
    return 1.0 / math.sqrt(dim), f"1/sqrt({dim})"


def sequence_attention_axes(model: ModelConfig, batch_text: str, seq_text: str) -> dict:
    """Axes of attention over whole sequences: q, k, v are [batch_size, seq_len, heads, head_dim]."""
    return {
        "batch_size": var(batch_text),
        "seq_len": var(seq_text),
        "num_q_heads": const(q_heads(model)),
        "num_kv_heads": const(kv_heads(model)),
        "head_dim": const(head_dim(model)),
    }


SEQUENCE_QKV = {
    "q": tensor(["batch_size", "seq_len", "num_q_heads", "head_dim"], BF, "queries"),
    "k": tensor(["batch_size", "seq_len", "num_kv_heads", "head_dim"], BF, "keys"),
    "v": tensor(["batch_size", "seq_len", "num_kv_heads", "head_dim"], BF, "values"),
}


def causal_pairs_expression(window: int | None) -> str:
    """Visible (query, key) pairs of one causal sequence of seq_len tokens, optionally with a window."""
    if window is None:
        return "seq_len * (seq_len + 1) / 2"
    first = f"min(seq_len, {window})"  # queries before the window is full see all earlier keys
    return f"{first} * ({first} + 1) / 2 + (seq_len - {first}) * {window}"


def prefill_attention(
    model: ModelConfig,
    *,
    window: int | None = None,
    softcap: float | None = None,
    sizes: Sequence[tuple[int, int]] = PREFILL_SIZES,
    name: str | None = None,
) -> Problem:
    """Causal self-attention over equal-length prompts: GQA, optional sliding window and soft-cap."""
    n_q, n_kv, dim = q_heads(model), kv_heads(model), head_dim(model)
    group = n_q // n_kv
    scale, scale_text = _sm_scale(model)
    if window is not None or softcap is not None:
        sizes = [s for s in sizes if s[1] <= 4096]  # the explicit reference holds the score matrix
    reference = reference_source(
        """
        import torch

        GROUP = $GROUP
        WINDOW = $WINDOW
        SOFTCAP = $SOFTCAP


        def run(q, k, v, sm_scale):
            seq_len = q.shape[1]
            qf = q.to(torch.float32)
            kf = k.to(torch.float32).repeat_interleave(GROUP, dim=2)  # query head h reads KV head h // GROUP
            vf = v.to(torch.float32).repeat_interleave(GROUP, dim=2)
            scores = torch.einsum("bqhd,bkhd->bhqk", qf, kf) * sm_scale
            if SOFTCAP is not None:
                scores = torch.tanh(scores / SOFTCAP) * SOFTCAP
            i = torch.arange(seq_len, device=q.device)[:, None]
            j = torch.arange(seq_len, device=q.device)[None, :]
            visible = j <= i
            if WINDOW is not None:
                visible = visible & (j > i - WINDOW)
            scores = scores.masked_fill(~visible, float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            return torch.einsum("bhqk,bkhd->bqhd", probs, vf).to(q.dtype)
        """,
        GROUP=group,
        WINDOW=repr(window),
        SOFTCAP=repr(softcap),
    )
    extras = []
    if window is not None:
        extras.append(f"a sliding window of {window} keys (query i sees keys j with i - {window} < j <= i)")
    if softcap is not None:
        extras.append(f"logit soft-capping scores = {softcap:g} * tanh(scores / {softcap:g}) before the mask")
    extra_text = ("; " + "; ".join(extras)) if extras else ""
    suffix = "_swa" if window is not None else ""
    suffix += "_softcap" if softcap is not None else ""
    problem = make_problem(
        name=name or f"{model.key}_prefill_attention{suffix}",
        model=model,
        op_type="attention",
        tags=["attention", "prefill", "causal", "flash-attention", "bf16", "tensor-core"]
        + (["gqa"] if group > 1 else [])
        + (["sliding-window"] if window else [])
        + (["softcap"] if softcap else []),
        description=f"""
            Causal self-attention of a prefill in {model.display_name}: {n_q} query heads, {n_kv} KV heads
            (groups of {group}), head_dim {dim}{extra_text}. q is [batch_size, seq_len, {n_q}, {dim}], k and v
            [batch_size, seq_len, {n_kv}, {dim}], bf16, rotary already applied; query head h reads KV head
            h // {group}. output[b, i, h] = softmax_j(sm_scale * q[b, i, h] . k[b, j, h // {group}]) @ v with
            query i seeing keys j <= i; sm_scale is a Python float ({scale_text}). Scores and softmax in
            fp32, output [batch_size, seq_len, {n_q}, {dim}] bf16. Tensor-core bound at long seq_len: tile
            queries and keys (FlashAttention), skip fully masked tiles, keep P on chip.
        """,
        axes=sequence_attention_axes(model, "prompts in the batch", "prompt length"),
        constraints=["num_q_heads % num_kv_heads == 0"],
        inputs={**SEQUENCE_QKV, "sm_scale": tensor(None, F32, "softmax scale")},
        outputs={
            "output": tensor(["batch_size", "seq_len", "num_q_heads", "head_dim"], BF, "attention output")
        },
        reference=reference,
        workloads=[{"batch_size": b, "seq_len": s} for b, s in sizes],
        tolerance=BF16_ATTENTION,
        scalars={"sm_scale": scale},
    )
    pairs = causal_pairs_expression(window)
    return with_counting(
        problem,
        tensor_core_dtype=BF,
        tensor_core_flops=f"4 * batch_size * num_q_heads * head_dim * ({pairs})",
    )


def decode_attention(
    model: ModelConfig,
    *,
    window: int | None = None,
    softcap: float | None = None,
    sinks: bool = False,
    alibi: bool = False,
    sizes: Sequence[tuple[int, int]] = DECODE_SIZES,
) -> Problem:
    """One decode step over a contiguous KV cache with per-sequence lengths, with the model's attention
    variants: sliding window, logit soft-capping, learned sink logits (gpt-oss) or ALiBi (Baichuan 2)."""
    n_q, n_kv, dim = q_heads(model), kv_heads(model), head_dim(model)
    group = n_q // n_kv
    scale, scale_text = _sm_scale(model)
    sizes = limit_bytes(sizes, 2 * n_kv * dim * 2, _CACHE_BUDGET)
    slopes = _alibi_slopes(n_q) if alibi else None
    reference = reference_source(
        """
        import torch

        GROUP = $GROUP
        WINDOW = $WINDOW
        SOFTCAP = $SOFTCAP
        ALIBI_SLOPES = $SLOPES


        def run(q, k_cache, v_cache, kv_lens, sm_scale$SINK_ARG):
            batch, num_q_heads, head_dim = q.shape
            kv_len = k_cache.shape[1]
            qf = q.to(torch.float32)
            kf = k_cache.to(torch.float32).repeat_interleave(GROUP, dim=2)
            vf = v_cache.to(torch.float32).repeat_interleave(GROUP, dim=2)
            scores = torch.einsum("bhd,bshd->bhs", qf, kf) * sm_scale
            if SOFTCAP is not None:
                scores = torch.tanh(scores / SOFTCAP) * SOFTCAP
            j = torch.arange(kv_len, device=q.device)[None, :]
            if ALIBI_SLOPES is not None:
                slopes = torch.tensor(ALIBI_SLOPES, dtype=torch.float32, device=q.device)
                scores = scores + slopes[None, :, None] * j[:, None, :].to(torch.float32)
            lens = kv_lens.to(torch.int64)[:, None]
            visible = j < lens
            if WINDOW is not None:
                visible = visible & (j > lens - 1 - WINDOW)
            scores = scores.masked_fill(~visible[:, None, :], float("-inf"))
            $SOFTMAX
            return torch.einsum("bhs,bshd->bhd", probs, vf).to(q.dtype)
        """,
        GROUP=group,
        WINDOW=repr(window),
        SOFTCAP=repr(softcap),
        SLOPES=repr(slopes),
        SINK_ARG=", sinks" if sinks else "",
        SOFTMAX=(
            "# The sink logit joins the softmax denominator but has no value row.\n"
            "    sink = sinks.to(torch.float32)[None, :, None].expand(batch, num_q_heads, 1)\n"
            "    probs = torch.softmax(torch.cat((scores, sink), dim=-1), dim=-1)[..., :kv_len]"
            if sinks
            else "probs = torch.softmax(scores, dim=-1)"
        ),
    )
    variants, tags, suffix = [], [], ""
    if window is not None:
        variants.append(
            f"a sliding window: sequence b attends only its last {window} valid positions "
            f"(kv_lens[b] - {window} <= j < kv_lens[b]), as the model's local-attention layers do"
        )
        tags.append("sliding-window")
        suffix += "_swa"
    if softcap is not None:
        variants.append(f"scores soft-capped as {softcap:g} * tanh(scores / {softcap:g}) before masking")
        tags.append("softcap")
        suffix += "_softcap"
    if sinks:
        variants.append(
            "a learned sink logit per query head (sinks, [num_qo_heads] fp32) that joins each softmax "
            "denominator, exp(sink - max), without a value row (gpt-oss attention sinks)"
        )
        tags.append("attention-sinks")
        suffix += "_sinks"
    if alibi:
        variants.append(
            "ALiBi position bias instead of rotary: score += slope_h * j for key position j, with the "
            f"model's {n_q} per-head slopes (geometric 2^(-8k/n) series, interleaved for a non-power-of-two "
            "head count) baked into the reference"
        )
        tags.append("alibi")
        suffix += "_alibi"
    inputs = {
        "q": tensor(["batch_size", "num_qo_heads", "head_dim"], BF, "query of the new token"),
        "k_cache": tensor(["batch_size", "kv_len", "num_kv_heads", "head_dim"], BF, "key cache"),
        "v_cache": tensor(["batch_size", "kv_len", "num_kv_heads", "head_dim"], BF, "value cache"),
        "kv_lens": tensor(["batch_size"], I32, "valid cache length per sequence, in [1, kv_len]"),
        "sm_scale": tensor(None, F32, "softmax scale"),
    }
    if sinks:
        inputs["sinks"] = tensor(["num_qo_heads"], F32, "learned sink logit per query head")
    problem = make_problem(
        name=f"{model.key}_decode_attention{suffix}",
        model=model,
        op_type="attention",
        tags=["attention", "decode", "kv-cache", "memory-bound", "bf16", "split-kv", *tags]
        + (["gqa"] if group > 1 else []),
        description=f"""
            Attention for one decode step of {model.display_name} with {"; ".join(variants)}. {n_q} query
            heads, {n_kv} KV heads (head h reads KV head h // {group}), head_dim {dim}. q is
            [batch_size, {n_q}, {dim}] bf16; k_cache and v_cache are [batch_size, kv_len, {n_kv}, {dim}] bf16
            (contiguous, NHD); only the first kv_lens[b] positions of sequence b are valid, the new token
            being at kv_lens[b] - 1. Scores = sm_scale * q . k in fp32 (sm_scale a Python float,
            {scale_text}), softmax in fp32 over the visible keys, output [batch_size, {n_q}, {dim}] bf16.
            Memory-bound on the cache read{"; a windowed kernel reads only the window" if window else ""}:
            split long contexts across blocks (flash-decoding) when the batch is small.
        """,
        axes={
            "batch_size": var("sequences decoding one token each"),
            "kv_len": var("allocated cache length per sequence"),
            "num_qo_heads": const(n_q),
            "num_kv_heads": const(n_kv),
            "head_dim": const(dim),
        },
        constraints=["num_qo_heads % num_kv_heads == 0"],
        inputs=inputs,
        outputs={"output": tensor(["batch_size", "num_qo_heads", "head_dim"], BF, "attention output")},
        reference=reference,
        workloads=[{"batch_size": b, "kv_len": s} for b, s in sizes],
        tolerance=BF16_ATTENTION,
        scalars={"sm_scale": scale},
    )
    return with_counting(problem, tensor_core_dtype=BF)


def _alibi_slopes(num_heads: int) -> list[float]:
    """ALiBi slopes as Baichuan 2 and BLOOM compute them (``_get_interleave``)."""

    def power_of_two(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(num_heads).is_integer():
        return power_of_two(num_heads)
    closest = 2 ** math.floor(math.log2(num_heads))
    return power_of_two(closest) + power_of_two(2 * closest)[0::2][: num_heads - closest]


MLA_DECODE_SIZES: tuple[tuple[int, int], ...] = (
    (1, 512), (1, 2048), (4, 1024), (1, 8192), (8, 2048), (16, 1024), (32, 1024), (8, 8192), (64, 1024),
    (16, 4096), (32, 4096), (64, 4096),
)  # fmt: skip


def mla_decode(model: ModelConfig, *, sizes: Sequence[tuple[int, int]] = MLA_DECODE_SIZES) -> Problem:
    """Multi-head latent attention decode in the weight-absorbed form FlashMLA and FlashInfer run."""
    heads = q_heads(model)
    rank = model.integer("kv_lora_rank")
    rope = model.integer("qk_rope_head_dim")
    nope = model.integer("qk_nope_head_dim")
    scale = 1.0 / math.sqrt(nope + rope)
    scale_text = f"1/sqrt({nope} + {rope})"
    if "rope_scaling.mscale_all_dim" in model.config:
        factor = model.number("rope_scaling.factor")
        mscale = 0.1 * model.number("rope_scaling.mscale_all_dim") * math.log(factor) + 1.0
        scale *= mscale * mscale
        scale_text += f" * {mscale:.6g}^2 (the YaRN mscale for factor {factor:g}) = {scale:.6g}"
    sizes = limit_bytes(sizes, (rank + rope) * 2, _CACHE_BUDGET)
    reference = reference_source(
        """
        import torch


        def run(q_nope, q_pe, ckv_cache, kpe_cache, kv_lens, sm_scale):
            kv_len = ckv_cache.shape[1]
            ckv = ckv_cache.to(torch.float32)
            scores = torch.einsum("bhc,bsc->bhs", q_nope.to(torch.float32), ckv)
            kpe = kpe_cache.to(torch.float32)
            scores = scores + torch.einsum("bhr,bsr->bhs", q_pe.to(torch.float32), kpe)
            scores = scores * sm_scale
            valid = torch.arange(kv_len, device=q_nope.device)[None, :] < kv_lens.to(torch.int64)[:, None]
            scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            # Values are the same compressed latents: the output stays in the latent space.
            return torch.einsum("bhs,bsc->bhc", probs, ckv).to(q_nope.dtype)
        """
    )
    problem = make_problem(
        name=f"{model.key}_mla_decode",
        model=model,
        op_type="mla_attention",
        tags=["attention", "mla", "decode", "kv-cache", "bf16", "split-kv", "tensor-core"],
        description=f"""
            Multi-head latent attention (MLA) for one decode step of {model.display_name}, in the
            weight-absorbed form of FlashMLA / FlashInfer's MLA decode: {heads} query heads all read one
            compressed cache entry per position, the kv_lora_rank {rank} latent c plus a {rope}-channel
            rotary key k_pe. q_nope is [batch_size, {heads}, {rank}] bf16 (the no-rope query already
            multiplied by the key up-projection), q_pe [batch_size, {heads}, {rope}] bf16 (rotated);
            ckv_cache [batch_size, kv_len, {rank}] and kpe_cache [batch_size, kv_len, {rope}] bf16. For
            positions j < kv_lens[b]: score = sm_scale * (q_nope . c_j + q_pe . k_pe_j) in fp32, softmax
            in fp32, output[b, h] = sum_j p_j c_j, [batch_size, {heads}, {rank}] bf16 (the value
            up-projection follows elsewhere). sm_scale = {scale_text}, a Python float. With {heads} heads
            sharing each cache row the kernel is close to compute-bound at large batch.
        """,
        axes={
            "batch_size": var("sequences decoding one token each"),
            "kv_len": var("allocated cache length per sequence"),
            "num_heads": const(heads),
            "kv_lora_rank": const(rank),
            "qk_rope_head_dim": const(rope),
        },
        inputs={
            "q_nope": tensor(["batch_size", "num_heads", "kv_lora_rank"], BF, "absorbed no-rope query"),
            "q_pe": tensor(["batch_size", "num_heads", "qk_rope_head_dim"], BF, "rotary query part"),
            "ckv_cache": tensor(["batch_size", "kv_len", "kv_lora_rank"], BF, "compressed latent cache"),
            "kpe_cache": tensor(["batch_size", "kv_len", "qk_rope_head_dim"], BF, "rotary key cache"),
            "kv_lens": tensor(["batch_size"], I32, "valid cache length per sequence, in [1, kv_len]"),
            "sm_scale": tensor(None, F32, "softmax scale"),
        },
        outputs={
            "output": tensor(["batch_size", "num_heads", "kv_lora_rank"], BF, "latent attention output")
        },
        reference=reference,
        workloads=[{"batch_size": b, "kv_len": s} for b, s in sizes],
        tolerance=BF16_ATTENTION,
        scalars={"sm_scale": scale},
    )
    return with_counting(problem, tensor_core_dtype=BF)
