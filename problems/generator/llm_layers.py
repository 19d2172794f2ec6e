"""Fused-block (L2) templates of language models: the attention block of a prefill (norm, QKV, rotary,
causal attention, output projection), the MLP block (norm, gated MLP) and a whole decoder layer.

The pieces follow Hugging Face's modelling code in bf16 (each GEMM accumulates in fp32 and rounds to bf16;
norms and rotary in fp32, rounded once); attention is ``F.scaled_dot_product_attention`` in bf16, which the
FLOP counter charges for the causal pairs only.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16_BLOCK, const, make_problem, reference_source, tensor, var
from .llm_shapes import BF, F32, head_dim, hidden_size, kv_heads, q_heads, rms_eps, token_workloads
from .models import ModelConfig

BLOCK_SEQ_LENS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 1000)
"""Prompt lengths of one prefill, from a short chat turn to an 8 Ki-token document."""

_PIECES = """
def rmsnorm(x, weight):
    xf = x.to(torch.float32)
    xf = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return weight * xf.to(x.dtype)


def rope(x, cos, sin):
    xf = x.to(torch.float32)
    rotated = torch.cat((-xf[..., HALF:], xf[..., :HALF]), dim=-1)
    return (xf * cos[:, None, :] + rotated * sin[:, None, :]).to(x.dtype)


def attention(hidden_states, input_norm_weight, qkv_weight, qkv_bias, q_norm_weight, k_norm_weight,
              o_proj_weight, cos, sin):
    seq_len = hidden_states.shape[0]
    x = rmsnorm(hidden_states, input_norm_weight)
    qkv = torch.nn.functional.linear(x, qkv_weight, qkv_bias)
    q, k, v = qkv.split([NUM_Q * HEAD_DIM, NUM_KV * HEAD_DIM, NUM_KV * HEAD_DIM], dim=-1)
    q = q.reshape(seq_len, NUM_Q, HEAD_DIM)
    k = k.reshape(seq_len, NUM_KV, HEAD_DIM)
    v = v.reshape(seq_len, NUM_KV, HEAD_DIM)
    if q_norm_weight is not None:  # per-head RMSNorm of q and k (Qwen3)
        q, k = rmsnorm(q, q_norm_weight), rmsnorm(k, k_norm_weight)
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    out = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), is_causal=True, enable_gqa=True
    )
    return torch.nn.functional.linear(out.transpose(0, 1).reshape(seq_len, NUM_Q * HEAD_DIM), o_proj_weight)


def mlp(hidden_states, post_attention_norm_weight, gate_up_weight, down_weight):
    x = rmsnorm(hidden_states, post_attention_norm_weight)
    gate, up = torch.nn.functional.linear(x, gate_up_weight).chunk(2, dim=-1)
    return torch.nn.functional.linear(torch.nn.functional.silu(gate) * up, down_weight)
"""


def _constants(model: ModelConfig) -> dict[str, int | float]:
    return {
        "EPS": rms_eps(model),
        "NUM_Q": q_heads(model),
        "NUM_KV": kv_heads(model),
        "HEAD_DIM": head_dim(model),
        "HALF": head_dim(model) // 2,
    }


def _header(constants: dict[str, int | float]) -> str:
    return "\n".join(f"{k} = {v!r}" for k, v in constants.items())


def _attention_inputs(model: ModelConfig, qkv_bias: bool, qk_norm: bool) -> dict:
    inputs = {
        "hidden_states": tensor(["seq_len", "hidden_size"], BF, "residual stream entering the layer"),
        "input_norm_weight": tensor(["hidden_size"], BF, "input RMSNorm gain"),
        "qkv_weight": tensor(["qkv_size", "hidden_size"], BF, "[q; k; v] projection weight, [out, in]"),
    }
    if qkv_bias:
        inputs["qkv_bias"] = tensor(["qkv_size"], BF, "[q; k; v] projection bias")
    if qk_norm:
        inputs["q_norm_weight"] = tensor(["head_dim"], BF, "per-head query RMSNorm gain")
        inputs["k_norm_weight"] = tensor(["head_dim"], BF, "per-head key RMSNorm gain")
    inputs["o_proj_weight"] = tensor(["hidden_size", "q_size"], BF, "output projection weight, [out, in]")
    inputs["cos"] = tensor(["seq_len", "head_dim"], F32, "rotary cos table, rotate-half layout")
    inputs["sin"] = tensor(["seq_len", "head_dim"], F32, "rotary sin table, rotate-half layout")
    return inputs


def _attention_call(qkv_bias: bool, qk_norm: bool) -> str:
    bias = "qkv_bias" if qkv_bias else "None"
    norms = "q_norm_weight, k_norm_weight" if qk_norm else "None, None"
    return f"hidden_states, input_norm_weight, qkv_weight, {bias}, {norms}, o_proj_weight, cos, sin"


def _attention_text(model: ModelConfig, qkv_bias: bool, qk_norm: bool) -> str:
    n_q, n_kv, dim, hidden = q_heads(model), kv_heads(model), head_dim(model), hidden_size(model)
    return (
        f"x = RMSNorm(hidden_states) (eps {rms_eps(model):g}, fp32 statistics, rounded before the bf16 "
        "gain); "
        f"qkv = x @ qkv_weight^T{' + qkv_bias' if qkv_bias else ''} ([{(n_q + 2 * n_kv) * dim}, {hidden}]: "
        f"{n_q} query then {n_kv} key and {n_kv} value heads of {dim}); "
        + ("per-head RMSNorm of q and k with q_norm_weight / k_norm_weight; " if qk_norm else "")
        + "rotate-half rotary on q and k with the given fp32 cos/sin tables [seq_len, "
        f"{dim}] (computed in fp32, rounded to bf16); causal attention with scale 1/sqrt({dim}), "
        "query head h "
        f"reading KV head h // {n_q // n_kv}; out @ o_proj_weight^T ([{hidden}, {n_q * dim}])"
    )


def _axes(model: ModelConfig, with_mlp: bool) -> dict:
    n_q, n_kv, dim = q_heads(model), kv_heads(model), head_dim(model)
    axes = {
        "seq_len": var("tokens of the prompt (one sequence)"),
        "hidden_size": const(hidden_size(model)),
        "qkv_size": const((n_q + 2 * n_kv) * dim),
        "q_size": const(n_q * dim),
        "head_dim": const(dim),
    }
    if with_mlp:
        inter = model.integer("intermediate_size")
        axes.update(intermediate_size=const(inter), gate_up_size=const(2 * inter))
    return axes


def attention_block(
    model: ModelConfig,
    *,
    qkv_bias: bool = False,
    qk_norm: bool = False,
    seq_lens: Sequence[int] = BLOCK_SEQ_LENS,
) -> Problem:
    """Input RMSNorm, fused QKV projection, rotary, causal GQA attention and o_proj of one prefill."""
    reference = reference_source(
        """
        import torch

        $HEADER
        $PIECES

        def run($ARGS):
            return attention($CALL)
        """,
        HEADER=_header(_constants(model)),
        PIECES=_PIECES,
        ARGS=", ".join(_attention_inputs(model, qkv_bias, qk_norm)),
        CALL=_attention_call(qkv_bias, qk_norm),
    )
    hidden = hidden_size(model)
    return make_problem(
        name=f"{model.key}_attention_block",
        model=model,
        op_type="attention_block",
        tags=[
            "attention",
            "block",
            "fusion",
            "prefill",
            "causal",
            "gemm",
            "rope",
            "rmsnorm",
            "bf16",
            "tensor-core",
        ],
        description=f"""
            The attention half of a {model.display_name} decoder layer for one prefill of seq_len tokens, all
            in bf16 as Hugging Face runs it: {_attention_text(model, qkv_bias, qk_norm)}. hidden_states is
            [seq_len, {hidden}] bf16; output is the o_proj result [seq_len, {hidden}] bf16 (the residual add
            belongs to the next fused add+norm). Fusion targets: norm into the QKV GEMM prologue, rotary (and
            q/k norm) into its epilogue, FlashAttention, o_proj.
        """,
        axes=_axes(model, with_mlp=False),
        inputs=_attention_inputs(model, qkv_bias, qk_norm),
        outputs={
            "output": tensor(["seq_len", "hidden_size"], BF, "attention block output (before the residual)")
        },
        reference=reference,
        workloads=token_workloads(seq_lens, "seq_len"),
        tolerance=BF16_BLOCK,
    )


def mlp_block(model: ModelConfig, *, seq_lens: Sequence[int] = BLOCK_SEQ_LENS) -> Problem:
    """Post-attention RMSNorm and the SwiGLU MLP with a fused gate_up weight."""
    inter = model.integer("intermediate_size")
    hidden = hidden_size(model)
    reference = reference_source(
        """
        import torch

        $HEADER
        $PIECES

        def run(hidden_states, post_attention_norm_weight, gate_up_weight, down_weight):
            return mlp(hidden_states, post_attention_norm_weight, gate_up_weight, down_weight)
        """,
        HEADER=_header(_constants(model)),
        PIECES=_PIECES,
    )
    return make_problem(
        name=f"{model.key}_mlp_block",
        model=model,
        op_type="mlp_block",
        tags=[
            "mlp",
            "block",
            "swiglu",
            "rmsnorm",
            "fusion",
            "gemm",
            "bf16",
            "decode",
            "prefill",
            "tensor-core",
        ],
        description=f"""
            The MLP half of a {model.display_name} decoder layer (hidden_size {hidden}, intermediate_size
            {inter}): x = RMSNorm(hidden_states) (eps {rms_eps(model):g}, fp32 statistics, rounded to bf16
            before the bf16 gain); [gate | up] = x @ gate_up_weight^T with gate_up_weight [{2 * inter},
            {hidden}] (gate rows first); output = (silu(gate) * up) @ down_weight^T with down_weight
            [{hidden}, {inter}]. All bf16 with fp32 accumulation and a bf16 rounding after each GEMM and the
            activation. hidden_states [seq_len, {hidden}] bf16 is the residual stream after attention; output
            [seq_len, {hidden}] bf16 (before the residual add). Tokens run from a short decode batch to a long
            prefill.
        """,
        axes=_axes(model, with_mlp=True),
        inputs={
            "hidden_states": tensor(["seq_len", "hidden_size"], BF, "residual stream after attention"),
            "post_attention_norm_weight": tensor(["hidden_size"], BF, "RMSNorm gain"),
            "gate_up_weight": tensor(["gate_up_size", "hidden_size"], BF, "[gate; up] weight, [out, in]"),
            "down_weight": tensor(["hidden_size", "intermediate_size"], BF, "down projection, [out, in]"),
        },
        outputs={"output": tensor(["seq_len", "hidden_size"], BF, "MLP block output (before the residual)")},
        reference=reference,
        workloads=token_workloads(seq_lens, "seq_len"),
        tolerance=BF16_BLOCK,
    )


def decoder_layer(
    model: ModelConfig,
    *,
    qkv_bias: bool = False,
    qk_norm: bool = False,
    seq_lens: Sequence[int] = BLOCK_SEQ_LENS,
) -> Problem:
    """A whole pre-norm decoder layer of one prefill: attention block, residual, MLP block, residual."""
    inputs = _attention_inputs(model, qkv_bias, qk_norm)
    inputs["post_attention_norm_weight"] = tensor(["hidden_size"], BF, "post-attention RMSNorm gain")
    inputs["gate_up_weight"] = tensor(["gate_up_size", "hidden_size"], BF, "[gate; up] weight, [out, in]")
    inputs["down_weight"] = tensor(["hidden_size", "intermediate_size"], BF, "down projection, [out, in]")
    reference = reference_source(
        """
        import torch

        $HEADER
        $PIECES

        def run($ARGS):
            hidden_states = hidden_states + attention($CALL)
            return hidden_states + mlp(hidden_states, post_attention_norm_weight, gate_up_weight, down_weight)
        """,
        HEADER=_header(_constants(model)),
        PIECES=_PIECES,
        ARGS=", ".join(inputs),
        CALL=_attention_call(qkv_bias, qk_norm),
    )
    hidden, inter = hidden_size(model), model.integer("intermediate_size")
    return make_problem(
        name=f"{model.key}_decoder_layer",
        model=model,
        op_type="decoder_layer",
        tags=[
            "decoder-layer",
            "block",
            "attention",
            "mlp",
            "fusion",
            "prefill",
            "causal",
            "bf16",
            "tensor-core",
        ],
        description=f"""
            One whole decoder layer of {model.display_name} (hidden_size {hidden}, intermediate_size {inter})
            for a prefill of seq_len tokens, in bf16 as Hugging Face runs it. Attention: {
            _attention_text(model, qkv_bias, qk_norm)
        }; h = hidden_states + attention (bf16 add). MLP: RMSNorm(h) with
            post_attention_norm_weight, [gate | up] = x @ gate_up_weight^T ([{2 * inter}, {hidden}], gate rows
            first), (silu(gate) * up) @ down_weight^T; output = h + MLP, [seq_len, {hidden}] bf16. The
            speed of light counts every GEMM and the causal half of attention; an end-to-end kernel schedule
            (fused norms, rotary epilogue, FlashAttention) is the target.
        """,
        axes=_axes(model, with_mlp=True),
        inputs=inputs,
        outputs={"output": tensor(["seq_len", "hidden_size"], BF, "residual stream leaving the layer")},
        reference=reference,
        workloads=token_workloads(seq_lens, "seq_len"),
        tolerance=BF16_BLOCK,
    )
