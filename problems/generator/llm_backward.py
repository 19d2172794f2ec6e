"""Training (backward-pass) templates of language models: RMSNorm, SwiGLU and rotary backward, cross-entropy
over logits (forward and backward in one pass), the fused linear + cross-entropy forward and its input
gradient, and causal attention backward.

Gradients are written out explicitly (no autograd) so that the references trace on meta tensors and read
as the kernel's contract.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import (
    BF16,
    BF16_ATTENTION,
    BF16_RELATIVE,
    FP32_FROM_BF16_GEMM,
    const,
    make_problem,
    reference_source,
    tensor,
    var,
)
from .llm_attention import SEQUENCE_QKV, causal_pairs_expression, sequence_attention_axes
from .llm_shapes import (
    BF,
    F32,
    I64,
    head_dim,
    hidden_size,
    kv_heads,
    limit_bytes,
    q_heads,
    token_workloads,
    tokens_between,
    with_counting,
)
from .models import ModelConfig

TRAIN_TOKENS = tokens_between(128, 16384, (1000, 3000))
"""Tokens of one micro-batch (batch x sequence length, flattened)."""

_TRAIN = "tokens of the micro-batch (batch x sequence, flattened)"
_BUDGET = 512 * 2**20
"""Largest input + output footprint (bytes) of a workload."""


def rmsnorm_backward(model: ModelConfig, *, tokens: Sequence[int] = TRAIN_TOKENS) -> Problem:
    """Gradients of y = w * x_hat (fp32 math) with respect to x and w."""
    hidden = hidden_size(model)
    eps = model.number("rms_norm_eps")
    reference = reference_source(
        """
        import torch

        EPS = $EPS


        def run(grad_output, hidden_states, norm_weight):
            x = hidden_states.to(torch.float32)
            dy = grad_output.to(torch.float32)
            w = norm_weight.to(torch.float32)
            rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS)
            x_hat = x * rstd
            grad_weight = (dy * x_hat).sum(dim=0)
            g = dy * w
            # d/dx of x * rstd: rstd * (g - x_hat * mean(g * x_hat)).
            grad_input = rstd * (g - x_hat * (g * x_hat).mean(dim=-1, keepdim=True))
            return grad_input.to(hidden_states.dtype), grad_weight
        """,
        EPS=eps,
    )
    return make_problem(
        name=f"{model.key}_rmsnorm_backward",
        model=model,
        op_type="rmsnorm_backward",
        tags=["norm", "rmsnorm", "backward", "training", "reduction", "memory-bound", "bf16"],
        description=f"""
            Backward pass of {model.display_name}'s RMSNorm (hidden_size {hidden}, rms_norm_eps {eps:g}) in
            training, forward y = norm_weight * x * rstd with rstd = rsqrt(mean(x^2) + eps) (fp32). Inputs:
            grad_output and hidden_states [num_tokens, {hidden}] bf16, norm_weight [{hidden}] bf16. Outputs:
            grad_input [num_tokens, {hidden}] bf16 = rstd * (g - x_hat * mean(g * x_hat)) with g =
            grad_output * norm_weight and x_hat = x * rstd (rstd recomputed, all in fp32), and grad_weight
            [{hidden}] fp32 = sum over tokens of grad_output * x_hat. The per-row part is memory-bound; the
            column reduction for grad_weight needs a two-stage (per-block partial sums) reduction.
        """,
        axes={"num_tokens": var(_TRAIN), "hidden_size": const(hidden)},
        inputs={
            "grad_output": tensor(["num_tokens", "hidden_size"], BF, "gradient of the norm output"),
            "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "forward input"),
            "norm_weight": tensor(["hidden_size"], BF, "RMSNorm gain"),
        },
        outputs={
            "grad_input": tensor(["num_tokens", "hidden_size"], BF, "gradient of the input"),
            "grad_weight": tensor(["hidden_size"], F32, "gradient of the gain"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


def swiglu_backward(model: ModelConfig, *, tokens: Sequence[int] = TRAIN_TOKENS, tp: int = 1) -> Problem:
    """Gradients of y = silu(gate) * up with respect to gate and up."""
    inter = model.integer("intermediate_size") // tp
    tokens = [
        t for (t,) in limit_bytes([(t,) for t in tokens], 5 * inter * 2, _BUDGET)
    ]  # 3 streams in, 2 out
    reference = reference_source(
        """
        import torch


        def run(grad_output, gate, up):
            dy = grad_output.to(torch.float32)
            g = gate.to(torch.float32)
            u = up.to(torch.float32)
            sig = torch.sigmoid(g)
            silu = g * sig
            grad_gate = dy * u * sig * (1 + g * (1 - sig))
            grad_up = dy * silu
            return grad_gate.to(gate.dtype), grad_up.to(up.dtype)
        """
    )
    return make_problem(
        name=f"{model.key}_swiglu_backward",
        model=model,
        op_type="activation_backward",
        tags=["activation", "swiglu", "backward", "training", "elementwise", "memory-bound", "bf16"],
        description=f"""
            Backward pass of the SwiGLU activation of {model.display_name}'s MLP (intermediate_size {inter}),
            forward y = silu(gate) * up. Inputs grad_output, gate and up, each [num_tokens, {inter}] bf16.
            In fp32: s = sigmoid(gate); grad_gate = grad_output * up * s * (1 + gate * (1 - s)); grad_up =
            grad_output * gate * s; both rounded to bf16, [num_tokens, {inter}]. Elementwise: three streams
            in, two out, memory-bound; usually fused into the down-projection's backward GEMM epilogue.
        """,
        axes={"num_tokens": var(_TRAIN), "intermediate_size": const(inter)},
        inputs={
            "grad_output": tensor(["num_tokens", "intermediate_size"], BF, "gradient of silu(gate) * up"),
            "gate": tensor(["num_tokens", "intermediate_size"], BF, "forward gate projection"),
            "up": tensor(["num_tokens", "intermediate_size"], BF, "forward up projection"),
        },
        outputs={
            "grad_gate": tensor(["num_tokens", "intermediate_size"], BF, "gradient of gate"),
            "grad_up": tensor(["num_tokens", "intermediate_size"], BF, "gradient of up"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


def rope_backward(model: ModelConfig, *, tokens: Sequence[int] = TRAIN_TOKENS) -> Problem:
    """Gradient of rotate-half rotary embedding: the rotation by the negative angle."""
    n_q, n_kv, dim = q_heads(model), kv_heads(model), head_dim(model)
    half = dim // 2
    reference = reference_source(
        """
        import torch

        HALF = $HALF


        def rotate_back(g, cos, sin):
            # Transpose of x -> x cos + rotate_half(x) sin: g cos - rotate_half(g sin).
            gs = g * sin
            return g * cos + torch.cat((gs[..., HALF:], -gs[..., :HALF]), dim=-1)


        def run(grad_q_out, grad_k_out, cos, sin):
            c, s = cos[:, None, :], sin[:, None, :]
            dq = rotate_back(grad_q_out.to(torch.float32), c, s)
            dk = rotate_back(grad_k_out.to(torch.float32), c, s)
            return dq.to(grad_q_out.dtype), dk.to(grad_k_out.dtype)
        """,
        HALF=half,
    )
    return make_problem(
        name=f"{model.key}_rope_backward",
        model=model,
        op_type="rope_backward",
        tags=["rope", "backward", "training", "elementwise", "memory-bound", "bf16"],
        description=f"""
            Backward pass of {model.display_name}'s rotary embedding ({n_q} query heads, {n_kv} KV heads,
            head_dim {dim}, rotate-half layout: channel i pairs with i + {half}). The forward is y = x cos +
            rotate_half(x) sin with rotate_half(x) = cat(-x[{half}:], x[:{half}]); its gradient is
            dx = dy cos + cat((dy sin)[{half}:], -(dy sin)[:{half}]), the rotation by the negative angle.
            grad_q_out [num_tokens, {n_q}, {dim}] and grad_k_out [num_tokens, {n_kv}, {dim}] are bf16; cos and
            sin are the forward's fp32 [num_tokens, {dim}] tables (cos[:, i] == cos[:, i + {half}]). Computed
            in fp32, rounded to bf16. Memory-bound; a forward kernel run with sin negated is a valid solution.
        """,
        axes={
            "num_tokens": var(_TRAIN),
            "num_q_heads": const(n_q),
            "num_kv_heads": const(n_kv),
            "head_dim": const(dim),
        },
        inputs={
            "grad_q_out": tensor(
                ["num_tokens", "num_q_heads", "head_dim"], BF, "gradient of the rotated queries"
            ),
            "grad_k_out": tensor(
                ["num_tokens", "num_kv_heads", "head_dim"], BF, "gradient of the rotated keys"
            ),
            "cos": tensor(["num_tokens", "head_dim"], F32, "forward cos table, rotate-half layout"),
            "sin": tensor(["num_tokens", "head_dim"], F32, "forward sin table, rotate-half layout"),
        },
        outputs={
            "grad_q": tensor(["num_tokens", "num_q_heads", "head_dim"], BF, "gradient of the queries"),
            "grad_k": tensor(["num_tokens", "num_kv_heads", "head_dim"], BF, "gradient of the keys"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )


CE_TOKENS = (16, 24, 32, 48, 64, 100, 128, 200, 256, 512, 1000, 1024, 2048, 4096)
"""Tokens of a loss chunk: trainers compute the loss over chunks of the micro-batch."""


def cross_entropy(model: ModelConfig, *, tokens: Sequence[int] = CE_TOKENS) -> Problem:
    """Per-token cross-entropy over the vocabulary and its gradient w.r.t. the logits, in one pass."""
    vocab = model.integer("vocab_size")
    tokens = [t for (t,) in limit_bytes([(t,) for t in tokens], vocab * 4, _BUDGET)]  # bf16 logits in and out
    reference = reference_source(
        """
        import torch


        def run(logits, labels, grad_loss):
            x = logits.to(torch.float32)
            lse = torch.logsumexp(x, dim=-1)
            target = x.gather(1, labels.to(torch.int64)[:, None])[:, 0]
            loss = lse - target
            probs = torch.exp(x - lse[:, None])
            onehot = torch.zeros_like(probs).scatter(1, labels.to(torch.int64)[:, None], 1.0)
            grad_logits = (probs - onehot) * grad_loss[:, None]
            return loss, grad_logits.to(logits.dtype)
        """
    )
    return make_problem(
        name=f"{model.key}_cross_entropy",
        model=model,
        op_type="cross_entropy",
        tags=["loss", "cross-entropy", "softmax", "backward", "training", "memory-bound", "bf16"],
        description=f"""
            The language-modelling loss of {model.display_name} (vocab_size {vocab}) with its gradient, in one
            pass over the logits as Liger-Kernel's cross-entropy does. logits [num_tokens, {vocab}] bf16,
            labels [num_tokens] int64 in [0, {vocab}), grad_loss [num_tokens] fp32 (upstream gradient of each
            token's loss, e.g. 1 / num_tokens for a mean). In fp32: loss[t] = logsumexp(logits[t]) -
            logits[t, labels[t]]; grad_logits[t] = (softmax(logits[t]) - onehot(labels[t])) * grad_loss[t],
            rounded to bf16. Outputs: loss [num_tokens] fp32 and grad_logits [num_tokens, {vocab}] bf16 (may
            overwrite the logits in a real trainer). Memory-bound: one online-softmax pass, one write.
        """,
        axes={"num_tokens": var(_TRAIN), "vocab_size": const(vocab)},
        inputs={
            "logits": tensor(["num_tokens", "vocab_size"], BF, "lm_head output"),
            "labels": tensor(["num_tokens"], I64, "target token ids, in [0, vocab_size)"),
            "grad_loss": tensor(["num_tokens"], F32, "upstream gradient per token"),
        },
        outputs={
            "loss": tensor(["num_tokens"], F32, "per-token loss"),
            "grad_logits": tensor(["num_tokens", "vocab_size"], BF, "gradient of the logits"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16_RELATIVE,
    )


def fused_linear_cross_entropy(
    model: ModelConfig,
    *,
    backward: bool = False,
    tokens: Sequence[int] = tokens_between(16, 4096, (100, 1000)),
) -> Problem:
    """lm_head GEMM fused with cross-entropy without materialising the logits: loss (forward) or the
    gradient of the hidden states (backward)."""
    vocab, hidden = model.integer("vocab_size"), hidden_size(model)
    tail = (
        """
            probs = torch.exp(logits - lse[:, None])
            onehot = torch.zeros_like(probs).scatter(1, labels.to(torch.int64)[:, None], 1.0)
            grad_logits = ((probs - onehot) * grad_loss[:, None]).to(hidden_states.dtype)
            # bf16 GEMM with fp32 accumulation, as a chunked kernel computes it.
            return (grad_logits @ lm_head_weight).to(hidden_states.dtype)
        """
        if backward
        else """
            target = logits.gather(1, labels.to(torch.int64)[:, None])[:, 0]
            return lse - target, lse
        """
    )
    signature = "hidden_states, lm_head_weight, labels" + (", grad_loss" if backward else "")
    reference = reference_source(
        """
        import torch


        def run($SIGNATURE):
            # Logits: the GEMM accumulated in fp32 and kept in fp32 (never rounded to bf16).
            logits = hidden_states.to(torch.float32) @ lm_head_weight.to(torch.float32).t()
            lse = torch.logsumexp(logits, dim=-1)
        """
        + tail,
        SIGNATURE=signature,
    )
    inputs = {
        "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "final normalised hidden states"),
        "lm_head_weight": tensor(["vocab_size", "hidden_size"], BF, "lm_head weight, [out, in]"),
        "labels": tensor(["num_tokens"], I64, "target token ids, in [0, vocab_size)"),
    }
    if backward:
        inputs["grad_loss"] = tensor(["num_tokens"], F32, "upstream gradient per token")
        outputs = {
            "grad_hidden_states": tensor(["num_tokens", "hidden_size"], BF, "gradient of hidden_states")
        }
        what = (
            "the gradient of the hidden states: grad_logits = (softmax(logits) - onehot(labels)) * grad_loss "
            "(fp32, rounded to bf16), grad_hidden_states = grad_logits @ lm_head_weight with fp32 "
            "accumulation, "
            f"[num_tokens, {hidden}] bf16 (the weight gradient is a separate GEMM)"
        )
    else:
        outputs = {
            "loss": tensor(["num_tokens"], F32, "per-token loss"),
            "lse": tensor(["num_tokens"], F32, "logsumexp of each row, kept for the backward"),
        }
        what = (
            "loss[t] = lse[t] - logits[t, labels[t]] and lse[t] = logsumexp(logits[t]), "
            "both [num_tokens] fp32"
        )
    problem = make_problem(
        name=f"{model.key}_fused_linear_cross_entropy_{'backward' if backward else 'forward'}",
        model=model,
        op_type="cross_entropy",
        tags=["loss", "cross-entropy", "gemm", "fusion", "training", "bf16", "tensor-core"]
        + (["backward"] if backward else []),
        description=f"""
            The lm_head projection of {model.display_name} (hidden_size {hidden}, vocab_size {vocab}) fused
            with the training loss, as Liger-Kernel's fused linear cross-entropy does to avoid materialising
            [num_tokens, {vocab}] logits. hidden_states [num_tokens, {hidden}] bf16, lm_head_weight
            [{vocab}, {hidden}] bf16, labels [num_tokens] int64. logits = hidden_states @ lm_head_weight^T
            with fp32 accumulation, kept in fp32. Outputs: {what}. Tensor-core bound; process the vocabulary
            in chunks with an online logsumexp so the logits never reach DRAM.
        """,
        axes={"num_tokens": var(_TRAIN), "hidden_size": const(hidden), "vocab_size": const(vocab)},
        inputs=inputs,
        outputs=outputs,
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16 if backward else FP32_FROM_BF16_GEMM,
    )
    # The reference multiplies in fp32 for exact logits; a kernel uses bf16 tensor cores.
    return with_counting(problem, tensor_core_dtype=BF)


ATTENTION_BACKWARD_SIZES: tuple[tuple[int, int], ...] = (
    (1, 128), (1, 256), (2, 256), (1, 512), (4, 256), (1, 1024), (2, 1024), (1, 2048), (8, 512), (2, 2048),
    (1, 4096), (4, 2048),
)  # fmt: skip


def attention_backward(
    model: ModelConfig, *, sizes: Sequence[tuple[int, int]] = ATTENTION_BACKWARD_SIZES
) -> Problem:
    """Causal GQA attention backward: dq, dk, dv from q, k, v and the output gradient (forward recomputed)."""
    n_q, n_kv, dim = q_heads(model), kv_heads(model), head_dim(model)
    group = n_q // n_kv
    scale = dim**-0.5
    reference = reference_source(
        """
        import torch

        GROUP = $GROUP
        SCALE = $SCALE


        def run(q, k, v, grad_output):
            batch, seq_len, num_q_heads, head_dim = q.shape
            qf = q.to(torch.float32)
            kf = k.to(torch.float32).repeat_interleave(GROUP, dim=2)
            vf = v.to(torch.float32).repeat_interleave(GROUP, dim=2)
            do = grad_output.to(torch.float32)
            scores = torch.einsum("bqhd,bkhd->bhqk", qf, kf) * SCALE
            i = torch.arange(seq_len, device=q.device)
            scores = scores.masked_fill(i[None, :] > i[:, None], float("-inf"))
            p = torch.softmax(scores, dim=-1)
            out = torch.einsum("bhqk,bkhd->bqhd", p, vf)
            dp = torch.einsum("bqhd,bkhd->bhqk", do, vf)
            delta = (do * out).sum(dim=-1).permute(0, 2, 1)[..., None]  # rowsum(dO * O), [b, h, q, 1]
            ds = p * (dp - delta) * SCALE
            dq = torch.einsum("bhqk,bkhd->bqhd", ds, kf)
            dk = torch.einsum("bhqk,bqhd->bkhd", ds, qf)
            dv = torch.einsum("bhqk,bqhd->bkhd", p, do)
            # Query heads of one group share their KV head: their gradients add up.
            dk = dk.unflatten(2, (-1, GROUP)).sum(dim=3)
            dv = dv.unflatten(2, (-1, GROUP)).sum(dim=3)
            return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)
        """,
        GROUP=group,
        SCALE=scale,
    )
    problem = make_problem(
        name=f"{model.key}_attention_backward",
        model=model,
        op_type="attention_backward",
        tags=["attention", "backward", "training", "causal", "flash-attention", "bf16", "tensor-core"]
        + (["gqa"] if group > 1 else []),
        description=f"""
            Backward pass of {model.display_name}'s causal self-attention in training: {n_q} query heads,
            {n_kv} KV heads (groups of {group}), head_dim {dim}, softmax scale 1/sqrt({dim}). q, grad_output
            [batch_size, seq_len, {n_q}, {dim}] and k, v [batch_size, seq_len, {n_kv}, {dim}] are bf16; the
            forward (P = softmax(scale q k^T) with query i seeing keys j <= i, O = P v) is recomputed in fp32.
            Gradients: dV = P^T dO; dP = dO V^T; dS = P * (dP - rowsum(dO * O)) * scale; dQ = dS K; dK = dS^T
            Q, with dK and dV summed over the {group} query heads of each KV head. Outputs grad_q, grad_k,
            grad_v bf16 in the shapes of q, k, v. FlashAttention-2's backward: five tiled matmuls per visible
            block, fp32 dQ accumulation across key blocks.
        """,
        axes=sequence_attention_axes(model, "sequences in the micro-batch", "sequence length"),
        constraints=["num_q_heads % num_kv_heads == 0"],
        inputs={
            **SEQUENCE_QKV,
            "grad_output": tensor(
                ["batch_size", "seq_len", "num_q_heads", "head_dim"], BF, "gradient of the output"
            ),
        },
        outputs={
            "grad_q": tensor(["batch_size", "seq_len", "num_q_heads", "head_dim"], BF, "gradient of q"),
            "grad_k": tensor(["batch_size", "seq_len", "num_kv_heads", "head_dim"], BF, "gradient of k"),
            "grad_v": tensor(["batch_size", "seq_len", "num_kv_heads", "head_dim"], BF, "gradient of v"),
        },
        reference=reference,
        workloads=[{"batch_size": b, "seq_len": s} for b, s in sizes],
        tolerance=BF16_ATTENTION,
    )
    # Five matmuls over the visible (query, key) pairs: QK^T, dO V^T, P^T dO, dS K, dS^T Q.
    pairs = causal_pairs_expression(None)
    return with_counting(
        problem,
        tensor_core_dtype=BF,
        tensor_core_flops=f"10 * batch_size * num_q_heads * head_dim * ({pairs})",
    )
