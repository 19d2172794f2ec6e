"""Mixture-of-experts templates: routers (softmax, top-k-then-softmax, DeepSeek's grouped sigmoid and
grouped softmax), the whole MoE block of small MoE models, and the grouped expert GEMMs of one
expert-parallel rank (bf16, and fp8 with DeepSeek's 128x128 block scales).

References route with fixed-shape tensor ops (top-k, scatter, masks) so that they trace on meta tensors
and run in any dtype (fp64 included, for the tolerance check); they apply every expert to every row and keep
the routed results, and their definitions override the tensor-core FLOPs with the routed work only.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import (
    BF16,
    BF16_BLOCK,
    FP8_GEMM,
    FP32_FROM_BF16_GEMM,
    const,
    make_problem,
    reference_source,
    tensor,
    var,
)
from .llm_shapes import (
    BF,
    E4M3,
    F32,
    I32,
    I64,
    NUM_TOKENS,
    hidden_size,
    token_workloads,
    tokens_between,
    with_counting,
)
from .models import ModelConfig


def _experts(model: ModelConfig) -> int:
    for key in ("num_experts", "num_local_experts", "n_routed_experts", "ffn_config.moe_num_experts"):
        if key in model.config:
            return model.integer(key)
    return model.integer("num_experts")


def _top_k(model: ModelConfig) -> int:
    return (
        model.integer("ffn_config.moe_top_k")
        if "ffn_config.moe_top_k" in model.config
        else model.integer("num_experts_per_tok")
    )


def _expert_intermediate(model: ModelConfig) -> int:
    for key in ("moe_intermediate_size", "ffn_config.ffn_hidden_size"):
        if key in model.config:
            return model.integer(key)
    return model.integer("intermediate_size")


# -- routers --------------------------------------------------------------------------------------------

_ROUTING = {
    "softmax_topk": """
    probs = torch.softmax(logits, dim=-1)
    weights, ids = torch.topk(probs, TOP_K, dim=-1, sorted=True)
    if RENORMALISE:
        weights = weights / weights.sum(dim=-1, keepdim=True)""",
    "topk_softmax": """
    top_logits, ids = torch.topk(logits, TOP_K, dim=-1, sorted=True)
    weights = torch.softmax(top_logits, dim=-1)""",
    "sigmoid_grouped": """
    scores = torch.sigmoid(logits)
    choice = scores + e_score_correction_bias.to(torch.float32)[None, :]
    # Group score: the sum of the two best biased scores of each of the N_GROUP groups.
    grouped = choice.reshape(choice.shape[0], N_GROUP, -1)
    group_scores = torch.topk(grouped, 2, dim=-1).values.sum(dim=-1)
    group_ids = torch.topk(group_scores, TOPK_GROUP, dim=-1, sorted=True).indices
    group_mask = torch.zeros_like(group_scores).scatter(1, group_ids, 1.0)
    expert_mask = group_mask[:, :, None].expand_as(grouped).reshape(choice.shape)
    masked = choice.masked_fill(expert_mask == 0, float("-inf"))
    ids = torch.topk(masked, TOP_K, dim=-1, sorted=True).indices
    weights = scores.gather(1, ids)  # the unbiased scores weight the experts
    if RENORMALISE:
        weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
    weights = weights * SCALING""",
    "softmax_grouped": """
    scores = torch.softmax(logits, dim=-1)
    grouped = scores.reshape(scores.shape[0], N_GROUP, -1)
    group_scores = grouped.amax(dim=-1)  # group score: its best expert
    group_ids = torch.topk(group_scores, TOPK_GROUP, dim=-1, sorted=True).indices
    group_mask = torch.zeros_like(group_scores).scatter(1, group_ids, 1.0)
    expert_mask = group_mask[:, :, None].expand_as(grouped).reshape(scores.shape)
    masked = scores.masked_fill(expert_mask == 0, 0.0)
    weights, ids = torch.topk(masked, TOP_K, dim=-1, sorted=True)
    if RENORMALISE:
        weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
    weights = weights * SCALING""",
}


def _routing_text(mode: str, experts: int, top_k: int, renormalise: bool, model: ModelConfig) -> str:
    renorm = f"; the {top_k} weights are renormalised to sum to 1" if renormalise else ""
    if mode == "softmax_topk":
        return f"probabilities = softmax over the {experts} experts; the {top_k} largest are kept{renorm}"
    if mode == "topk_softmax":
        return (
            f"the {top_k} largest logits are selected and their weights are the softmax over those "
            f"{top_k} logits only"
        )
    n_group, topk_group = model.integer("n_group"), model.integer("topk_group")
    scaling = model.number("routed_scaling_factor")
    if mode == "sigmoid_grouped":
        return (
            f"scores = sigmoid(logits); biased = scores + e_score_correction_bias; the {experts} experts "
            f"form {n_group} groups of {experts // n_group}, each scored by the sum of its two best biased "
            "scores; "
            f"only the best {topk_group} groups stay eligible; the {top_k} best biased scores among them are "
            f"selected (ids by decreasing biased score); weights are the unbiased scores of the selected "
            f"experts{renorm} (plus 1e-20 in the denominator), then multiplied by routed_scaling_factor "
            f"{scaling:g} (DeepSeek-V3 noaux_tc routing)"
        )
    return (
        f"scores = softmax(logits); the {experts} experts form {n_group} groups of {experts // n_group}, "
        f"each scored by its best expert; only the best {topk_group} groups stay eligible; the {top_k} best "
        "scores "
        f"among them are selected{renorm}, then multiplied by routed_scaling_factor {scaling:g} (DeepSeek-V2 "
        "group-limited greedy routing)"
    )


def moe_router(
    model: ModelConfig,
    *,
    mode: str,
    renormalise: bool | None = None,
    router_bias: bool = False,
    tokens: Sequence[int] = tokens_between(1, 16384, (1000,)),
) -> Problem:
    """Router GEMM in fp32 + the model's expert selection; returns weights and ids by decreasing rank."""
    hidden = hidden_size(model)
    experts, top_k = _experts(model), _top_k(model)
    if renormalise is None:
        renormalise = bool(model.config.get("norm_topk_prob", False))
    grouped = mode in ("sigmoid_grouped", "softmax_grouped")
    constants = {"TOP_K": top_k, "RENORMALISE": renormalise}
    if grouped:
        constants.update(
            N_GROUP=model.integer("n_group"),
            TOPK_GROUP=model.integer("topk_group"),
            SCALING=model.number("routed_scaling_factor"),
        )
    args = ["hidden_states", "gate_weight"]
    if router_bias:
        args.append("gate_bias")
    if mode == "sigmoid_grouped":
        args.append("e_score_correction_bias")
    bias_line = "\n    logits = logits + gate_bias.to(torch.float32)" if router_bias else ""
    reference = reference_source(
        """
        import torch

        $HEADER


        def run($ARGS):
            # Router logits accumulate and stay in fp32 (bf16 logits would create ties among experts).
            logits = hidden_states.to(torch.float32) @ gate_weight.to(torch.float32).t()$BIAS
            $ROUTING
            return weights, ids.to(torch.int32)
        """,
        HEADER="\n".join(f"{k} = {v!r}" for k, v in constants.items()),
        ARGS=", ".join(args),
        BIAS=bias_line,
        ROUTING=_ROUTING[mode].strip("\n").replace("\n    ", "\n    ").lstrip(),
    )
    inputs = {
        "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "normalised activations"),
        "gate_weight": tensor(["num_experts", "hidden_size"], BF, "router weight, [out, in]"),
    }
    if router_bias:
        inputs["gate_bias"] = tensor(["num_experts"], BF, "router bias")
    if mode == "sigmoid_grouped":
        inputs["e_score_correction_bias"] = tensor(
            ["num_experts"], F32, "load-balancing bias, selection only"
        )
    bias_text = " + gate_bias" if router_bias else ""
    return make_problem(
        name=f"{model.key}_moe_router_{mode}",
        model=model,
        op_type="moe_router",
        tags=["moe", "router", "topk", "gemm", "fp32", "decode", "prefill", mode.replace("_", "-")],
        description=f"""
            Expert router of the {model.display_name} mixture-of-experts layers (hidden_size {hidden},
            {experts} experts, {top_k} per token). hidden_states is [num_tokens, {hidden}] bf16, gate_weight
            [{experts}, {hidden}] bf16. logits = hidden_states @ gate_weight^T{bias_text}, accumulated and
            kept in fp32 (no bf16 rounding, no TF32). Then
            {_routing_text(mode, experts, top_k, renormalise, model)}. Outputs: topk_weights [num_tokens,
            {top_k}] fp32 and topk_ids [num_tokens, {top_k}] int32 in selection order (ids are compared
            exactly). A skinny fp32 GEMM (N = {experts}) fused with a per-row selection.
        """,
        axes={
            "num_tokens": var(NUM_TOKENS),
            "hidden_size": const(hidden),
            "num_experts": const(experts),
            "top_k": const(top_k),
        },
        constraints=["top_k <= num_experts"],
        inputs=inputs,
        outputs={
            "topk_weights": tensor(["num_tokens", "top_k"], F32, "routing weights"),
            "topk_ids": tensor(["num_tokens", "top_k"], I32, "selected experts"),
        },
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=FP32_FROM_BF16_GEMM,
    )


# -- experts ---------------------------------------------------------------------------------------------

_EXPERT_MLP = """
def expert_mlp(x, w13_e, w2_e):
    # bf16 GEMMs with fp32 accumulation; the SiLU-gated product in fp32, rounded to the activation dtype.
    acc = torch.promote_types(x.dtype, torch.float32)
    gate_up = torch.nn.functional.linear(x, w13_e)
    gate, up = gate_up[:, :INTER].to(acc), gate_up[:, INTER:].to(acc)
    return torch.nn.functional.linear((torch.nn.functional.silu(gate) * up).to(x.dtype), w2_e)
"""

_DENSE_NOTE = (
    "The reference runs every expert on every token and keeps the selected results (simple and exact in "
    "any dtype); the speed of light counts only the selected experts' GEMMs."
)


def moe_block(
    model: ModelConfig,
    *,
    renormalise: bool | None = None,
    topk_then_softmax: bool = False,
    tokens: Sequence[int] = tokens_between(1, 8192, (1000,)),
) -> Problem:
    """A whole sparse MoE block: router, top-k, every selected expert's SwiGLU MLP, weighted combine."""
    hidden = hidden_size(model)
    experts, top_k, inter = _experts(model), _top_k(model), _expert_intermediate(model)
    if renormalise is None:
        renormalise = bool(model.config.get("norm_topk_prob", False))
    routing = "topk_softmax" if topk_then_softmax else "softmax_topk"
    reference = reference_source(
        """
        import torch

        TOP_K = $TOP_K
        NUM_EXPERTS = $EXPERTS
        INTER = $INTER
        RENORMALISE = $RENORMALISE

        $EXPERT_MLP

        def run(hidden_states, gate_weight, w13, w2):
            acc = torch.promote_types(hidden_states.dtype, torch.float32)
            logits = hidden_states.to(acc) @ gate_weight.to(acc).t()
            $ROUTING
            # Dense combine weights [tokens, experts]: the routing weight where selected, 0 elsewhere.
            combine = torch.zeros_like(logits).scatter(1, ids, weights)
            out = torch.zeros(hidden_states.shape[0], w2.shape[1], dtype=acc, device=hidden_states.device)
            for e in range(NUM_EXPERTS):
                out = out + combine[:, e : e + 1] * expert_mlp(hidden_states, w13[e], w2[e]).to(acc)
            return out.to(hidden_states.dtype)
        """,
        TOP_K=top_k,
        EXPERTS=experts,
        INTER=inter,
        RENORMALISE=renormalise,
        EXPERT_MLP=_EXPERT_MLP.strip(),
        ROUTING=_ROUTING[routing].strip("\n").lstrip(),
    )
    weight_mib = experts * 3 * hidden * inter * 2 / 2**20
    problem = make_problem(
        name=f"{model.key}_moe_block",
        model=model,
        op_type="moe",
        tags=[
            "moe",
            "router",
            "grouped-gemm",
            "swiglu",
            "fusion",
            "bf16",
            "decode",
            "prefill",
            "tensor-core",
        ],
        description=f"""
            The whole sparse MoE block of {model.display_name}: {experts} SwiGLU experts (hidden_size
            {hidden}, expert intermediate_size {inter}), {top_k} per token. hidden_states is [num_tokens,
            {hidden}] bf16; gate_weight [{experts}, {hidden}] bf16; w13 [{experts}, {2 * inter}, {hidden}]
            bf16 stacks each expert's gate (rows 0-{inter - 1}) and up projection; w2 [{experts}, {hidden},
            {inter}] bf16 is the down projection ([out, in] layouts). Routing: fp32 logits, then
            {_routing_text(routing, experts, top_k, renormalise, model)}. Each selected expert computes
            down(silu(gate x) * up x) with bf16 GEMMs (fp32 accumulation, bf16 gate_up and activation), and
            output[t] = sum of routing weight * expert output in fp32, rounded to bf16. Decode batches are
            bound by streaming the selected experts' share of the {weight_mib:.0f} MiB of weights; prefill is
            a grouped GEMM (sort or scatter tokens by expert, one tile schedule over all experts).
            {_DENSE_NOTE}
        """,
        axes={
            "num_tokens": var(NUM_TOKENS),
            "hidden_size": const(hidden),
            "num_experts": const(experts),
            "top_k": const(top_k),
            "expert_intermediate_size": const(inter),
            "gate_up_size": const(2 * inter),
        },
        inputs={
            "hidden_states": tensor(["num_tokens", "hidden_size"], BF, "normalised activations"),
            "gate_weight": tensor(["num_experts", "hidden_size"], BF, "router weight, [out, in]"),
            "w13": tensor(
                ["num_experts", "gate_up_size", "hidden_size"], BF, "[gate; up] weights per expert"
            ),
            "w2": tensor(
                ["num_experts", "hidden_size", "expert_intermediate_size"], BF, "down weights per expert"
            ),
        },
        outputs={"output": tensor(["num_tokens", "hidden_size"], BF, "MoE block output")},
        reference=reference,
        workloads=token_workloads(tokens),
        tolerance=BF16,
    )
    return with_counting(
        problem,
        tensor_core_dtype=BF,
        tensor_core_flops=(
            "2 * num_tokens * (num_experts * hidden_size + top_k * 3 * hidden_size * expert_intermediate_size)"
        ),
    )


def grouped_experts(
    model: ModelConfig,
    *,
    local_experts: int,
    rows: Sequence[int] = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 500),
) -> Problem:
    """The expert GEMMs of one expert-parallel rank over the tokens dispatched to it, grouped by expert."""
    hidden = hidden_size(model)
    experts, top_k, inter = _experts(model), _top_k(model), _expert_intermediate(model)
    reference = reference_source(
        """
        import torch

        INTER = $INTER

        NUM_LOCAL = $LOCAL

        $EXPERT_MLP

        def run(hidden_states, expert_offsets, row_weights, w13, w2):
            acc = torch.promote_types(hidden_states.dtype, torch.float32)
            rows = hidden_states.shape[0]
            row = torch.arange(rows, device=hidden_states.device)
            out = torch.zeros(rows, w2.shape[1], dtype=acc, device=hidden_states.device)
            for e in range(NUM_LOCAL):
                mine = ((row >= expert_offsets[e]) & (row < expert_offsets[e + 1]))[:, None]
                out = torch.where(mine, expert_mlp(hidden_states, w13[e], w2[e]).to(acc), out)
            return (out * row_weights[:, None]).to(hidden_states.dtype)
        """,
        INTER=inter,
        LOCAL=local_experts,
        EXPERT_MLP=_EXPERT_MLP.strip(),
    )
    weight_mib = local_experts * 3 * hidden * inter * 2 / 2**20
    problem = make_problem(
        name=f"{model.key}_moe_grouped_experts_ep{experts // local_experts}",
        model=model,
        op_type="moe",
        tags=["moe", "grouped-gemm", "expert-parallel", "swiglu", "bf16", "decode", "prefill", "tensor-core"],
        description=f"""
            The expert computation of {model.display_name} on one GPU of an expert-parallel deployment over
            {experts // local_experts} GPUs: this rank holds {local_experts} of the {experts} SwiGLU experts
            (hidden_size {hidden}, expert intermediate_size {inter}; {top_k} experts per token). The
            dispatcher (e.g. DeepEP) has already sent each (token, expert) pair to the rank owning the expert
            and sorted them: hidden_states is [total_rows, {hidden}] bf16 where rows
            expert_offsets[e]..expert_offsets[e+1]-1 go to local expert e (expert_offsets is
            [{local_experts + 1}] int64, non-decreasing, from 0 to total_rows; groups may be empty).
            w13 [{local_experts}, {2 * inter}, {hidden}] bf16 stacks gate and up rows, w2
            [{local_experts}, {hidden}, {inter}] bf16. Per row: bf16 GEMMs with fp32 accumulation,
            silu(gate) * up in fp32 rounded to bf16, down GEMM, times row_weights (fp32 routing weight),
            rounded to bf16; output [total_rows, {hidden}]. Small total_rows stream the {weight_mib:.0f} MiB
            of local weights; large ones are a grouped GEMM with uneven group sizes. {_DENSE_NOTE}
        """,
        axes={
            "total_rows": var("(token, expert) pairs dispatched to this rank"),
            "num_local_experts": const(local_experts),
            "num_offsets": const(local_experts + 1),
            "hidden_size": const(hidden),
            "expert_intermediate_size": const(inter),
            "gate_up_size": const(2 * inter),
        },
        inputs={
            "hidden_states": tensor(
                ["total_rows", "hidden_size"], BF, "dispatched activations, sorted by expert"
            ),
            "expert_offsets": tensor(["num_offsets"], I64, "row offsets of each local expert's group"),
            "row_weights": tensor(["total_rows"], F32, "routing weight of each row"),
            "w13": tensor(["num_local_experts", "gate_up_size", "hidden_size"], BF, "[gate; up] weights"),
            "w2": tensor(
                ["num_local_experts", "hidden_size", "expert_intermediate_size"], BF, "down weights"
            ),
        },
        outputs={"output": tensor(["total_rows", "hidden_size"], BF, "weighted expert outputs per row")},
        reference=reference,
        workloads=[{"total_rows": r} for r in rows],
        tolerance=BF16_BLOCK,
    )
    return with_counting(
        problem,
        tensor_core_dtype=BF,
        tensor_core_flops="2 * total_rows * 3 * hidden_size * expert_intermediate_size",
    )


def grouped_experts_fp8(
    model: ModelConfig,
    *,
    local_experts: int,
    rows: Sequence[int] = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 500),
) -> Problem:
    """DeepSeek-style fp8 expert GEMMs (1x128 activation groups, 128x128 weight blocks) of one EP rank."""
    hidden = hidden_size(model)
    experts, inter = _experts(model), _expert_intermediate(model)
    block = model.integer("quantization_config.weight_block_size")
    reference = reference_source(
        """
        import torch

        BLOCK = $BLOCK
        INTER = $INTER
        NUM_LOCAL = $LOCAL
        FP8_MAX = 448.0


        def dequant_rows(x, scales):
            # [rows, K] fp8 with one scale per 1 x BLOCK group.
            return (x.to(torch.float32).unflatten(-1, (-1, BLOCK)) * scales[..., None]).flatten(-2)


        def dequant_blocks(w, scales):
            # [N, K] fp8 with one scale per BLOCK x BLOCK tile (N and K are multiples of BLOCK here).
            n, k = w.shape
            tiles = w.to(torch.float32).reshape(n // BLOCK, BLOCK, k // BLOCK, BLOCK)
            return (tiles * scales[:, None, :, None]).reshape(n, k)


        def quant_rows(x):
            groups = x.unflatten(-1, (-1, BLOCK))
            scales = groups.abs().amax(dim=-1).clamp(min=1e-10) / FP8_MAX
            q = (groups / scales[..., None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
            return q.flatten(-2), scales


        def run(x_fp8, x_scales, expert_offsets, row_weights, w13_fp8, w13_scales, w2_fp8, w2_scales):
            rows = x_fp8.shape[0]
            x = dequant_rows(x_fp8, x_scales)
            row = torch.arange(rows, device=x.device)
            out = torch.zeros(rows, w2_fp8.shape[1], dtype=torch.float32, device=x.device)
            for e in range(NUM_LOCAL):
                mine = ((row >= expert_offsets[e]) & (row < expert_offsets[e + 1]))[:, None]
                gate_up = x @ dequant_blocks(w13_fp8[e], w13_scales[e]).t()
                act = torch.nn.functional.silu(gate_up[:, :INTER]) * gate_up[:, INTER:]
                # The intermediate is re-quantised to fp8 (1 x BLOCK groups) before the down GEMM.
                act_q, act_s = quant_rows(act)
                down = dequant_rows(act_q, act_s) @ dequant_blocks(w2_fp8[e], w2_scales[e]).t()
                out = torch.where(mine, down, out)
            return (out * row_weights[:, None]).to(torch.bfloat16)
        """,
        BLOCK=block,
        INTER=inter,
        LOCAL=local_experts,
    )
    k_groups, i_groups = hidden // block, inter // block
    problem = make_problem(
        name=f"{model.key}_moe_grouped_experts_fp8_ep{experts // local_experts}",
        model=model,
        op_type="moe",
        tags=[
            "moe",
            "grouped-gemm",
            "expert-parallel",
            "fp8",
            "e4m3",
            "block-scale",
            "swiglu",
            "decode",
            "prefill",
        ],
        description=f"""
            FP8 expert computation of {model.display_name} on one GPU of an expert-parallel deployment over
            {experts // local_experts} GPUs ({local_experts} of {experts} experts, hidden_size {hidden},
            expert intermediate_size {inter}), with the checkpoint's fp8 e4m3 block quantisation: weights
            carry one fp32 scale per {block}x{block} block, activations one per 1x{block} group (DeepGEMM's
            grouped fp8 GEMM). x_fp8 [total_rows, {hidden}] e4m3 with x_scales [total_rows, {k_groups}] fp32
            are the dispatched rows, sorted by expert: rows expert_offsets[e]..expert_offsets[e+1]-1 use local
            expert e (expert_offsets [{local_experts + 1}] int64, 0 to total_rows). w13_fp8 [{local_experts},
            {2 * inter}, {hidden}] with w13_scales [{local_experts}, {2 * inter // block}, {k_groups}]; w2_fp8
            [{local_experts}, {hidden}, {inter}] with w2_scales [{local_experts}, {hidden // block},
            {i_groups}]. Per row, in fp32: gate_up = x W13^T on dequantised values (value * scale); act =
            silu(gate) * up; act is re-quantised to e4m3 per 1x{block} group (scale = amax / 448, amax floored
            at 1e-10) and dequantised; down = act W2^T; output = down * row_weights, rounded to bf16,
            [total_rows, {hidden}]. Use the fp8 tensor cores, promoting partial sums to fp32 at every
            {block}-wide K block as DeepSeek-V3 does.
        """,
        axes={
            "total_rows": var("(token, expert) pairs dispatched to this rank"),
            "num_local_experts": const(local_experts),
            "num_offsets": const(local_experts + 1),
            "hidden_size": const(hidden),
            "hidden_groups": const(k_groups),
            "expert_intermediate_size": const(inter),
            "inter_groups": const(i_groups),
            "gate_up_size": const(2 * inter),
            "gate_up_blocks": const(2 * inter // block),
        },
        inputs={
            "x_fp8": tensor(["total_rows", "hidden_size"], E4M3, "dispatched activations, sorted by expert"),
            "x_scales": tensor(["total_rows", "hidden_groups"], F32, "activation scale per 1x128 group"),
            "expert_offsets": tensor(["num_offsets"], I64, "row offsets of each local expert's group"),
            "row_weights": tensor(["total_rows"], F32, "routing weight of each row"),
            "w13_fp8": tensor(
                ["num_local_experts", "gate_up_size", "hidden_size"], E4M3, "[gate; up] weights"
            ),
            "w13_scales": tensor(
                ["num_local_experts", "gate_up_blocks", "hidden_groups"], F32, "w13 block scales"
            ),
            "w2_fp8": tensor(
                ["num_local_experts", "hidden_size", "expert_intermediate_size"], E4M3, "down weights"
            ),
            "w2_scales": tensor(
                ["num_local_experts", "hidden_groups", "inter_groups"], F32, "w2 block scales"
            ),
        },
        outputs={"output": tensor(["total_rows", "hidden_size"], BF, "weighted expert outputs per row")},
        reference=reference,
        workloads=[{"total_rows": r} for r in rows],
        tolerance=FP8_GEMM,
    )
    # The reference runs every local expert on every row; a kernel runs each row through one expert.
    return with_counting(
        problem,
        tensor_core_dtype=E4M3,
        tensor_core_flops="2 * total_rows * 3 * hidden_size * expert_intermediate_size",
    )
