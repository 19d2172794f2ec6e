"""Single-operator (L1) templates of language models beyond :mod:`.llm`: the layer GEMMs at real
(tensor-parallel) shapes, activations, embedding, logit soft-capping, sampling. Norm variants are in
:mod:`.llm_norms`, rotary variants in :mod:`.llm_rotary`.

Same conventions as :mod:`.llm`: ``(model, **options) -> Problem``; constants baked into a step-by-step
PyTorch reference; workloads from single-token decode to long prefill.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16, FP32, const, make_problem, reference_source, tensor, var
from .llm_shapes import (
    BF,
    F32,
    I32,
    NUM_TOKENS,
    head_dim,
    hidden_size,
    kv_heads,
    q_heads,
    shard,
    token_workloads,
    tokens_between,
    tp_suffix,
    tp_text,
)
from .models import ModelConfig

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
            [num_tokens, {hidden}] bf16. A pure gather: each token whose id this rank holds reads one
            {hidden * 2}-byte row, so the cost is the rows touched plus the output, far less than the table.
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
    # A gather reads only the rows it needs: the ids, the output, and one row for each token whose id
    # this rank holds. Ids are uniform over the whole vocabulary, so that is local_vocab / vocab_size of
    # the tokens (1/8 at tp 8: counting every token's row put T_SOL above the measured baseline).
    problem.definition.bytes = "num_tokens * (4 + 2 * hidden_size + 2 * hidden_size * local_vocab / vocab_size)"
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
