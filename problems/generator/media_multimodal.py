"""Operator templates of vision-language models: vision-tower RoPE, connectors and cross-attention.

Connectors turn vision-encoder patches into language-model tokens; their workloads count images
(or merged tokens for dynamic-resolution models) from one image to a multi-image request.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16, BF16_BLOCK, const, expr, make_problem, reference_source, tensor, var
from .media_common import BF, I64, problem_name
from .models import ModelConfig

IMAGES: tuple[int, ...] = (1, 2, 4, 6, 8, 12, 16, 24, 32)
"""Images (or tiles) per call: one image, multi-image prompts, video frames, serving batches."""


def qwen2_5_vl_merger(
    model: ModelConfig,
    *,
    merged_tokens: Sequence[int] = (4, 16, 64, 256, 576, 1024, 2304, 4096, 8192),
    eps: float = 1e-6,  # Qwen2_5_VLPatchMerger: Qwen2RMSNorm(context_dim, eps=1e-6)
) -> Problem:
    """Qwen2.5-VL PatchMerger: RMSNorm, 2x2 merge, Linear + GELU + Linear into the LM width."""
    embed = model.integer("vision_config.hidden_size")
    out = model.integer("vision_config.out_hidden_size")
    merge = model.integer("vision_config.spatial_merge_size")
    unit = merge * merge
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        EPS = $EPS
        MERGED_DIM = $MERGED_DIM


        def run(hidden_states, ln_q_weight, mlp_fc1_weight, mlp_fc1_bias, mlp_fc2_weight, mlp_fc2_bias):
            x = hidden_states.to(torch.float32)
            x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS)
            x = ln_q_weight * x.to(hidden_states.dtype)
            x = x.reshape(-1, MERGED_DIM)  # consecutive patches form one merge window
            x = F.gelu(F.linear(x, mlp_fc1_weight, mlp_fc1_bias))
            return F.linear(x, mlp_fc2_weight, mlp_fc2_bias)
        """,
        EPS=eps,
        MERGED_DIM=embed * unit,
    )
    return make_problem(
        name=problem_name(model, "vision_merger"),
        model=model,
        op_type="patch_merger",
        tags=["multimodal", "vision-language", "rmsnorm", "gemm", "mlp", "gelu", "bf16", "tensor-core"],
        description=f"""
            PatchMerger closing the {model.display_name} vision tower: RMSNorm ln_q over each
            patch's {embed} channels (eps {eps:g}, fp32 statistics, rounded to bf16, then times the
            bf16 weight); each run of {unit} consecutive patches (one {merge}x{merge} window, the
            tower already orders patches window by window) concatenated into a {embed * unit}-vector;
            Linear({embed * unit}, {embed * unit}) + bias, exact GELU, Linear({embed * unit}, {out})
            + bias into the language model's width. hidden_states is [num_merged_tokens * {unit},
            {embed}] bf16 (all images and frames of a request; a 448x448 image gives 256 merged
            tokens); GEMMs accumulate in fp32, bf16 results. Output [num_merged_tokens, {out}] bf16.
        """,
        axes={
            "num_merged_tokens": var("language-model tokens produced"),
            "merge_unit": const(unit),
            "num_patches": expr("num_merged_tokens * merge_unit"),
            "embed_dim": const(embed),
            "merged_dim": expr("embed_dim * merge_unit"),
            "hidden_size": const(out),
        },
        inputs={
            "hidden_states": tensor(["num_patches", "embed_dim"], BF, "vision tower output, window-ordered"),
            "ln_q_weight": tensor(["embed_dim"], BF, "RMSNorm weight"),
            "mlp_fc1_weight": tensor(["merged_dim", "merged_dim"], BF, "first Linear, [out, in]"),
            "mlp_fc1_bias": tensor(["merged_dim"], BF, "first Linear bias"),
            "mlp_fc2_weight": tensor(["hidden_size", "merged_dim"], BF, "second Linear, [out, in]"),
            "mlp_fc2_bias": tensor(["hidden_size"], BF, "second Linear bias"),
        },
        outputs={"merged": tensor(["num_merged_tokens", "hidden_size"], BF, "language-model tokens")},
        reference=reference,
        workloads=[{"num_merged_tokens": m} for m in merged_tokens],
        tolerance=BF16_BLOCK,
    )


def vision_rope_2d(
    model: ModelConfig,
    *,
    embed_key: str,
    heads_key: str = "vision_config.num_heads",
    patches: Sequence[int] = (64, 256, 1024, 2304, 4096, 8192, 16384, 32768),
    theta: float = 10000.0,  # VisionRotaryEmbedding(dim, theta=10000.0)
) -> Problem:
    """Qwen2-VL vision-tower 2D RoPE: half the rotary channels follow the row, half the column."""
    embed = model.integer(embed_key)
    heads = model.integer(heads_key)
    hd = embed // heads
    reference = reference_source(
        """
        import torch

        THETA = $THETA


        def rotate_half(x):
            x1, x2 = x.chunk(2, dim=-1)
            return torch.cat([-x2, x1], dim=-1)


        def run(query, key, pos_ids):
            head_dim = query.shape[-1]
            rot = head_dim // 2  # rotary channels per axis pair (VisionRotaryEmbedding(head_dim // 2))
            inv_freq = 1.0 / THETA ** (torch.arange(0, rot, 2, dtype=torch.float32, device=query.device) / rot)
            freqs = (pos_ids.to(torch.float32)[:, :, None] * inv_freq[None, None, :]).flatten(1)  # [n, rot]
            emb = torch.cat([freqs, freqs], dim=-1)
            cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
            q, k = query.float(), key.float()
            return ((q * cos) + rotate_half(q) * sin).to(query.dtype), ((k * cos) + rotate_half(k) * sin).to(key.dtype)
        """,
        THETA=theta,
    )
    shape = ["num_patches", "num_heads", "head_dim"]
    return make_problem(
        name=problem_name(model, "vision_rope_2d"),
        model=model,
        op_type="rope",
        tags=["rope", "rope-2d", "multimodal", "vision-tower", "memory-bound", "bf16"],
        description=f"""
            2D rotary embedding of the {model.display_name} vision tower ({heads} heads of {hd}),
            applied to q and k of every block. query and key are [num_patches, {heads}, {hd}] bf16
            (all patches of all images of a request, packed); pos_ids [num_patches, 2] int64 are
            each patch's (row, col) in its image grid (window-ordered by the model; any ids must
            work). inv_freq_i = {theta:g}^(-2i/{hd // 2}) for i < {hd // 4}; freqs = [row * inv_freq,
            col * inv_freq] ({hd // 2} values), emb = [freqs, freqs] ({hd}); out = x * cos(emb) +
            rotate_half(x) * sin(emb) with rotate_half(x) = [-x2, x1] over the two halves, in fp32,
            rounded to bf16. Outputs q, k like the inputs. Memory-bound.
        """,
        axes={"num_patches": var("patches in the request"), "num_heads": const(heads), "head_dim": const(hd)},
        inputs={
            "query": tensor(shape, BF, "queries"),
            "key": tensor(shape, BF, "keys"),
            "pos_ids": tensor(["num_patches", 2], I64, "(row, col) per patch, in [0, 256)"),
        },
        outputs={"q": tensor(shape, BF, "rotated queries"), "k": tensor(shape, BF, "rotated keys")},
        reference=reference,
        workloads=[{"num_patches": n} for n in patches],
        tolerance=BF16,
    )


def internvl_projector(
    model: ModelConfig,
    *,
    tiles: Sequence[int] = (1, 2, 3, 5, 7, 9, 13, 26),
    eps: float = 1e-5,  # InternVLChatModel.mlp1: nn.LayerNorm default eps
) -> Problem:
    """InternVL connector: pixel shuffle 0.5 (v2), LayerNorm, Linear, GELU, Linear."""
    c = model.integer("vision_config.hidden_size")
    grid = model.integer("vision_config.image_size") // model.integer("vision_config.patch_size")
    llm = model.integer("llm_config.hidden_size")
    ratio = model.number("downsample_ratio")
    factor = round(1 / ratio)
    out_tokens = (grid // factor) ** 2
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        GRID = $GRID
        EPS = $EPS


        def pixel_shuffle(x):
            n, w, h, c = x.shape  # InternVL pixel_shuffle(scale_factor=0.5), ps_version "v2"
            x = x.reshape(n, w, h // 2, c * 2).permute(0, 2, 1, 3)
            x = x.reshape(n, h // 2, w // 2, c * 4).permute(0, 2, 1, 3)
            return x


        def run(vit_embeds, ln_weight, ln_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias):
            n = vit_embeds.shape[0]
            x = pixel_shuffle(vit_embeds.reshape(n, GRID, GRID, -1)).reshape(n, -1, 4 * vit_embeds.shape[-1])
            x = F.layer_norm(x.float(), (x.shape[-1],), ln_weight.float(), ln_bias.float(), EPS).to(x.dtype)
            x = F.gelu(F.linear(x, fc1_weight, fc1_bias))
            return F.linear(x, fc2_weight, fc2_bias)
        """,
        GRID=grid,
        EPS=eps,
    )
    return make_problem(
        name=problem_name(model, "mlp_projector"),
        model=model,
        op_type="projector",
        tags=["multimodal", "vision-language", "pixel-shuffle", "layernorm", "mlp", "gemm", "gelu", "bf16"],
        description=f"""
            Vision-to-language connector of {model.display_name} (mlp1 after pixel shuffle):
            vit_embeds [num_tiles, {grid * grid}, {c}] bf16 are the InternViT patch features of each
            448x448 tile (CLS dropped), viewed as a {grid}x{grid} grid; pixel_shuffle with
            downsample_ratio {ratio:g} (ps_version v2: two reshape/transpose steps that fold each
            2x2 neighbourhood into the channels) gives {out_tokens} tokens of {4 * c}; then
            LayerNorm({4 * c}, eps {eps:g}, fp32 statistics, affine, bf16), Linear({4 * c} ->
            {llm}) + bias, exact GELU, Linear({llm} -> {llm}) + bias. GEMMs accumulate in fp32,
            bf16 results. Output [num_tiles, {out_tokens}, {llm}] bf16. num_tiles counts the dynamic
            tiles plus thumbnail of every image in the request (up to 13 per image).
        """,
        axes={
            "num_tiles": var("448x448 tiles"),
            "num_patches": const(grid * grid),
            "vit_dim": const(c),
            "shuffled_dim": const(4 * c),
            "num_tokens": const(out_tokens),
            "llm_dim": const(llm),
        },
        inputs={
            "vit_embeds": tensor(["num_tiles", "num_patches", "vit_dim"], BF, "patch features per tile"),
            "ln_weight": tensor(["shuffled_dim"], BF, "LayerNorm weight"),
            "ln_bias": tensor(["shuffled_dim"], BF, "LayerNorm bias"),
            "fc1_weight": tensor(["llm_dim", "shuffled_dim"], BF, "first Linear"),
            "fc1_bias": tensor(["llm_dim"], BF, "first Linear bias"),
            "fc2_weight": tensor(["llm_dim", "llm_dim"], BF, "second Linear"),
            "fc2_bias": tensor(["llm_dim"], BF, "second Linear bias"),
        },
        outputs={"image_embeds": tensor(["num_tiles", "num_tokens", "llm_dim"], BF, "language-model tokens")},
        reference=reference,
        workloads=[{"num_tiles": t} for t in tiles],
        tolerance=BF16,
    )


def idefics3_connector(model: ModelConfig, *, images: Sequence[int] = IMAGES) -> Problem:
    """Idefics3 / SmolVLM connector: pixel shuffle by scale_factor, then a Linear without bias."""
    c = model.integer("vision_config.hidden_size")
    grid = model.integer("vision_config.image_size") // model.integer("vision_config.patch_size")
    s = model.integer("scale_factor")
    llm = model.integer("text_config.hidden_size")
    seq = grid * grid
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        SCALE = $SCALE


        def run(image_hidden_states, proj_weight):
            bsz, seq, dim = image_hidden_states.shape
            side = int(round(seq ** 0.5))
            x = image_hidden_states.reshape(bsz, side, side // SCALE, dim * SCALE)
            x = x.permute(0, 2, 1, 3).reshape(bsz, side // SCALE, side // SCALE, dim * SCALE * SCALE)
            x = x.permute(0, 2, 1, 3).reshape(bsz, seq // (SCALE * SCALE), dim * SCALE * SCALE)
            return F.linear(x, proj_weight)
        """,
        SCALE=s,
    )
    return make_problem(
        name=problem_name(model, "connector"),
        model=model,
        op_type="projector",
        tags=["multimodal", "vision-language", "pixel-shuffle", "gemm", "bf16", "tensor-core"],
        description=f"""
            Connector of {model.display_name} (Idefics3Connector): image_hidden_states
            [num_images, {seq}, {c}] bf16 are the SigLIP patch features of each image or image
            split ({grid}x{grid} patches); pixel_shuffle with scale_factor {s} folds every {s}x{s}
            neighbourhood into the channels ({seq // (s * s)} tokens of {c * s * s}, using the
            reshape / permute order of Idefics3Connector.pixel_shuffle), then
            modality_projection Linear({c * s * s} -> {llm}, no bias), fp32 accumulation, bf16
            output [num_images, {seq // (s * s)}, {llm}]. The shuffle is a pure index permutation:
            fold it into the GEMM's A-operand load.
        """,
        axes={
            "num_images": var("images or image splits"),
            "num_patches": const(seq),
            "vision_dim": const(c),
            "shuffled_dim": const(c * s * s),
            "num_tokens": const(seq // (s * s)),
            "text_dim": const(llm),
        },
        inputs={
            "image_hidden_states": tensor(["num_images", "num_patches", "vision_dim"], BF, "vision features"),
            "proj_weight": tensor(["text_dim", "shuffled_dim"], BF, "modality projection"),
        },
        outputs={
            "image_embeds": tensor(["num_images", "num_tokens", "text_dim"], BF, "language-model tokens")
        },
        reference=reference,
        workloads=[{"num_images": n} for n in images],
        tolerance=BF16,
    )


def gemma3_projector(model: ModelConfig, *, images: Sequence[int] = IMAGES) -> Problem:
    """Gemma 3 multimodal projector: 4x4 average pool, Gemma RMSNorm (1 + w), matmul into the LM width."""
    c = model.integer("vision_config.hidden_size")
    grid = model.integer("vision_config.image_size") // model.integer("vision_config.patch_size")
    tokens = model.integer("mm_tokens_per_image")
    side = round(tokens**0.5)
    k = grid // side
    llm = model.integer("text_config.hidden_size")
    eps = model.number("vision_config.layer_norm_eps")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        GRID = $GRID
        KERNEL = $KERNEL
        EPS = $EPS


        def run(vision_outputs, mm_soft_emb_norm_weight, mm_input_projection_weight):
            b, n, c = vision_outputs.shape
            x = vision_outputs.transpose(1, 2).reshape(b, c, GRID, GRID)
            x = F.avg_pool2d(x, kernel_size=KERNEL, stride=KERNEL).flatten(2).transpose(1, 2)
            xf = x.float()
            xf = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
            x = (xf * (1.0 + mm_soft_emb_norm_weight.float())).to(x.dtype)
            return torch.matmul(x, mm_input_projection_weight)
        """,
        GRID=grid,
        KERNEL=k,
        EPS=eps,
    )
    return make_problem(
        name=problem_name(model, "mm_projector"),
        model=model,
        op_type="projector",
        tags=["multimodal", "vision-language", "avgpool", "rmsnorm", "gemm", "bf16", "tensor-core"],
        description=f"""
            Multimodal projector of {model.display_name} (Gemma3MultiModalProjector): vision_outputs
            [num_images, {grid * grid}, {c}] bf16 are the SigLIP features of each 896x896 image
            (or pan-and-scan crop), a {grid}x{grid} patch grid; AvgPool2d({k}, stride {k}) down to
            {side}x{side} = {tokens} tokens (bf16 mean of {k * k} patches); Gemma RMSNorm over {c}
            channels in fp32 (eps {eps:g}) scaled by (1 + weight), rounded to bf16; then matmul
            with mm_input_projection_weight [{c}, {llm}] (note: [in, out]), fp32 accumulation.
            Output [num_images, {tokens}, {llm}] bf16. The pooling reads {grid * grid} rows per
            image to produce {tokens}: fuse it with the norm into the GEMM prologue.
        """,
        axes={
            "num_images": var("images or crops"),
            "num_patches": const(grid * grid),
            "vision_dim": const(c),
            "num_tokens": const(tokens),
            "text_dim": const(llm),
        },
        inputs={
            "vision_outputs": tensor(["num_images", "num_patches", "vision_dim"], BF, "vision features"),
            "mm_soft_emb_norm_weight": tensor(["vision_dim"], BF, "RMSNorm weight (applied as 1 + w)"),
            "mm_input_projection_weight": tensor(["vision_dim", "text_dim"], BF, "projection, [in, out]"),
        },
        outputs={
            "image_embeds": tensor(["num_images", "num_tokens", "text_dim"], BF, "language-model tokens")
        },
        reference=reference,
        workloads=[{"num_images": n} for n in images],
        tolerance=BF16_BLOCK,
    )


def paligemma_projector(model: ModelConfig, *, images: Sequence[int] = IMAGES) -> Problem:
    """PaliGemma projector: Linear + bias into the LM width, scaled by 1/sqrt(text hidden size)."""
    c = model.integer("vision_config.hidden_size")
    grid = model.integer("vision_config.image_size") // model.integer("vision_config.patch_size")
    proj = model.integer("vision_config.projection_dim")
    text = model.integer("text_config.hidden_size")
    reference = reference_source(
        """
        import torch.nn.functional as F

        SCALE = $SCALE


        def run(image_features, proj_weight, proj_bias):
            return F.linear(image_features, proj_weight, proj_bias) * SCALE
        """,
        SCALE=text**-0.5,
    )
    return make_problem(
        name=problem_name(model, "mm_projector"),
        model=model,
        op_type="projector",
        tags=["multimodal", "vision-language", "gemm", "bf16", "tensor-core"],
        description=f"""
            Multimodal projector of {model.display_name}: image_features [num_images, {grid * grid},
            {c}] bf16 (SigLIP output, {grid}x{grid} patches of a {grid * 14} px image) go through
            Linear({c} -> {proj}) + bias (proj_weight [{proj}, {c}]), fp32 accumulation, rounded to
            bf16, then are multiplied by 1/sqrt({text}) = {text**-0.5:.6g} (the text hidden size
            normaliser PaliGemmaModel applies to image features), rounded to bf16. Output
            [num_images, {grid * grid}, {proj}] bf16. A plain GEMM (K = {c}) with a scale in the
            epilogue.
        """,
        axes={
            "num_images": var("images in the batch"),
            "num_patches": const(grid * grid),
            "vision_dim": const(c),
            "proj_dim": const(proj),
        },
        inputs={
            "image_features": tensor(["num_images", "num_patches", "vision_dim"], BF, "SigLIP features"),
            "proj_weight": tensor(["proj_dim", "vision_dim"], BF, "projector Linear"),
            "proj_bias": tensor(["proj_dim"], BF, "projector bias"),
        },
        outputs={
            "image_embeds": tensor(["num_images", "num_patches", "proj_dim"], BF, "scaled image tokens")
        },
        reference=reference,
        workloads=[{"num_images": n} for n in images],
        tolerance=BF16,
    )


LLAMA_VISION_SIZES: tuple[tuple[int, int, int], ...] = (
    (1, 1, 1),
    (1, 1, 4),
    (4, 1, 4),
    (8, 1, 4),
    (1, 32, 4),
    (1, 128, 4),
    (2, 256, 4),
    (1, 512, 4),
    (1, 1024, 4),
)
"""(batch_size, text tokens, image tiles): decode steps with one image of 1 or 4 tiles, then
prefill chunks of 32 to 1024 tokens."""


def llama_vision_cross_attention(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int, int]] = LLAMA_VISION_SIZES,
) -> Problem:
    """Mllama cross-attention decoder sub-layer with cached vision K/V: RMSNorm, q_proj, q_norm, GQA, o_proj, tanh gate."""
    d = model.integer("text_config.hidden_size")
    heads = model.integer("text_config.num_attention_heads")
    kv = model.integer("text_config.num_key_value_heads")
    eps = model.number("text_config.rms_norm_eps")
    hd = d // heads
    per_tile = (
        model.integer("vision_config.image_size") // model.integer("vision_config.patch_size")
    ) ** 2 + 1
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS = $HEADS
        KV_HEADS = $KV_HEADS
        EPS = $EPS


        def rms_norm(x, weight):
            xf = x.to(torch.float32)
            return weight * (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)).to(x.dtype)


        def run(hidden_states, input_layernorm_weight, q_proj_weight, q_norm_weight, key_states, value_states,
                o_proj_weight, cross_attn_attn_gate):
            b, t, d = hidden_states.shape
            x = rms_norm(hidden_states, input_layernorm_weight)
            q = F.linear(x, q_proj_weight).reshape(b, t, HEADS, d // HEADS).transpose(1, 2)
            q = rms_norm(q, q_norm_weight)
            k = key_states.repeat_interleave(HEADS // KV_HEADS, dim=1)
            v = value_states.repeat_interleave(HEADS // KV_HEADS, dim=1)
            o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d)
            return hidden_states + torch.tanh(cross_attn_attn_gate) * F.linear(o, o_proj_weight)
        """,
        HEADS=heads,
        KV_HEADS=kv,
        EPS=eps,
    )
    return make_problem(
        name=problem_name(model, "cross_attention"),
        model=model,
        op_type="cross_attention",
        tags=[
            "multimodal",
            "cross-attention",
            "gqa",
            "rmsnorm",
            "qk-norm",
            "decode",
            "prefill",
            "bf16",
            "tensor-core",
        ],
        description=f"""
            Gated cross-attention sub-layer of a {model.display_name} cross-attention decoder layer,
            text attending to image tokens whose keys and values are cached (computed once per
            image, k_norm already applied). h = RMSNorm(x) (input_layernorm, eps {eps:g}, fp32
            statistics, bf16, times weight); q = q_proj(h) ({d} -> {heads} heads of {hd}, no bias),
            then per-head q_norm RMSNorm over {hd} (same rules); grouped-query attention ({heads}
            query heads share {kv} K/V heads, head h uses K/V head h // {heads // kv}) over all
            image tokens, non-causal, no mask, scale 1/sqrt({hd}), fp32 softmax; o_proj ({d} -> {d},
            no bias); out = x + tanh(cross_attn_attn_gate) * o. hidden_states [batch_size,
            num_text_tokens, {d}] bf16; key_states and value_states [batch_size, {kv},
            num_vision_tokens, {hd}] bf16 with num_vision_tokens = tiles x {per_tile}; the gate is
            a [1] bf16 tensor. Output like hidden_states. Decode steps are bound by the KV read.
        """,
        axes={
            "batch_size": var("sequences in the batch"),
            "num_text_tokens": var("text tokens in the step"),
            "num_tiles": var("image tiles per sequence"),
            "tokens_per_tile": const(per_tile),
            "num_vision_tokens": expr("num_tiles * tokens_per_tile"),
            "hidden_size": const(d),
            "num_kv_heads": const(kv),
            "head_dim": const(hd),
            "one": const(1),
        },
        inputs={
            "hidden_states": tensor(
                ["batch_size", "num_text_tokens", "hidden_size"], BF, "text residual stream"
            ),
            "input_layernorm_weight": tensor(["hidden_size"], BF, "input RMSNorm weight"),
            "q_proj_weight": tensor(["hidden_size", "hidden_size"], BF, "query projection"),
            "q_norm_weight": tensor(["head_dim"], BF, "per-head query RMSNorm weight"),
            "key_states": tensor(
                ["batch_size", "num_kv_heads", "num_vision_tokens", "head_dim"], BF, "cached keys"
            ),
            "value_states": tensor(
                ["batch_size", "num_kv_heads", "num_vision_tokens", "head_dim"], BF, "cached values"
            ),
            "o_proj_weight": tensor(["hidden_size", "hidden_size"], BF, "output projection"),
            "cross_attn_attn_gate": tensor(["one"], BF, "attention gate (tanh applied)"),
        },
        outputs={
            "output": tensor(["batch_size", "num_text_tokens", "hidden_size"], BF, "x + gated attention")
        },
        reference=reference,
        workloads=[{"batch_size": b, "num_text_tokens": t, "num_tiles": n} for b, t, n in sizes],
        tolerance=BF16,
    )


def blip2_qformer_cross_attention(
    model: ModelConfig, *, images: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128)
) -> Problem:
    """BLIP-2 Q-Former cross-attention layer: 32 queries attend to ViT features, post-LN residual."""
    d = model.integer("qformer_config.hidden_size")
    heads = model.integer("qformer_config.num_attention_heads")
    enc = model.integer("qformer_config.encoder_hidden_size")
    eps = model.number("qformer_config.layer_norm_eps")
    queries = model.integer("num_query_tokens")
    n_img = (model.integer("vision_config.image_size") // model.integer("vision_config.patch_size")) ** 2 + 1
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS = $HEADS
        EPS = $EPS


        def run(query_tokens, image_embeds, q_weight, q_bias, kv_weight, kv_bias, out_weight, out_bias,
                ln_weight, ln_bias):
            b, nq, d = query_tokens.shape
            q = F.linear(query_tokens, q_weight, q_bias).reshape(b, nq, HEADS, -1).transpose(1, 2)
            k, v = F.linear(image_embeds, kv_weight, kv_bias).chunk(2, dim=-1)
            k = k.reshape(b, -1, HEADS, d // HEADS).transpose(1, 2)
            v = v.reshape(b, -1, HEADS, d // HEADS).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, nq, d)
            h = F.linear(o, out_weight, out_bias) + query_tokens
            return F.layer_norm(h.float(), (d,), ln_weight.float(), ln_bias.float(), EPS).to(h.dtype)
        """,
        HEADS=heads,
        EPS=eps,
    )
    return make_problem(
        name=problem_name(model, "qformer_cross_attention"),
        model=model,
        op_type="cross_attention",
        tags=["multimodal", "q-former", "cross-attention", "layernorm", "gemm", "bf16", "tensor-core"],
        description=f"""
            Cross-attention of a {model.display_name} Q-Former layer (every
            {model.integer("qformer_config.cross_attention_frequency")}nd layer): the {queries}
            query tokens [batch_size, {queries}, {d}] bf16 attend to the frozen ViT features
            image_embeds [batch_size, {n_img}, {enc}] bf16 ({n_img - 1} patches + CLS). q =
            Linear({d} -> {d}) + bias of the queries; k, v = one packed Linear({enc} -> {2 * d}) +
            bias of the image features (kv_weight rows: k then v); {heads} heads of {d // heads},
            non-causal, fp32 softmax; output dense Linear({d} -> {d}) + bias, + query_tokens, then
            LayerNorm (eps {eps:g}, fp32 statistics, affine) - BERT's post-LN. bf16 GEMMs with fp32
            accumulation. Output [batch_size, {queries}, {d}] bf16. The K/V projection of {n_img}
            image tokens dominates the FLOPs.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "num_queries": const(queries),
            "num_image_tokens": const(n_img),
            "hidden_size": const(d),
            "encoder_dim": const(enc),
            "kv_dim": expr("2 * hidden_size"),
        },
        inputs={
            "query_tokens": tensor(["batch_size", "num_queries", "hidden_size"], BF, "query states"),
            "image_embeds": tensor(["batch_size", "num_image_tokens", "encoder_dim"], BF, "ViT features"),
            "q_weight": tensor(["hidden_size", "hidden_size"], BF, "query projection"),
            "q_bias": tensor(["hidden_size"], BF, "query bias"),
            "kv_weight": tensor(["kv_dim", "encoder_dim"], BF, "key and value projections stacked"),
            "kv_bias": tensor(["kv_dim"], BF, "key and value biases stacked"),
            "out_weight": tensor(["hidden_size", "hidden_size"], BF, "output dense"),
            "out_bias": tensor(["hidden_size"], BF, "output dense bias"),
            "ln_weight": tensor(["hidden_size"], BF, "LayerNorm weight"),
            "ln_bias": tensor(["hidden_size"], BF, "LayerNorm bias"),
        },
        outputs={"output": tensor(["batch_size", "num_queries", "hidden_size"], BF, "updated query states")},
        reference=reference,
        workloads=[{"batch_size": b} for b in images],
        tolerance=BF16,
    )
