"""Operator templates of diffusion transformers: the DiT adaLN-Zero block, MMDiT joint attention, FLUX's
q/k norm with 3-axis rotary, Sana's linear attention and Mix-FFN, DiT-style patch embedding of latents.

Conventions of :mod:`.media`: ``(model, **options) -> Problem``, constants baked into a plain
PyTorch reference, workloads at the model's real resolutions. Latent sizes are image / 8 (SD3, FLUX,
PixArt, DiT VAEs) or image / 32 (Sana's DC-AE); token counts follow from the patch size. Timestep
embedding, UNets and the VAE are in :mod:`.media_diffusion`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16, BF16_ATTENTION, BF16_BLOCK, const, expr, make_problem, reference_source, tensor, var
from .media_common import BF, FUSED_CONTRACT, FUSED_HELPERS, I64, problem_name, with_tensor_core_dtype
from .models import ModelConfig

# -- DiT / MMDiT -----------------------------------------------------------------------------------


def dit_block(
    model: ModelConfig,
    *,
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128),
    eps: float = 1e-6,  # AdaLayerNormZero: nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
) -> Problem:
    """A whole DiT adaLN-Zero transformer block (class-conditional DiT)."""
    heads = model.integer("transformer.num_attention_heads")
    hd = model.integer("transformer.attention_head_dim")
    d = heads * hd
    grid = model.integer("transformer.sample_size") // model.integer("transformer.patch_size")
    tokens = grid * grid
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS = $HEADS
        EPS = $EPS


        $HELPERS

        def modulate(x, shift, scale):
            normed = F.layer_norm(x, (x.shape[-1],), eps=EPS)
            return normed * (1 + scale[:, None]) + shift[:, None]


        def run(hidden_states, emb, adaln_weight, adaln_bias, qkv_weight, qkv_bias, proj_weight, proj_bias,
                fc1_weight, fc1_bias, fc2_weight, fc2_bias):
            acc = torch.promote_types(hidden_states.dtype, torch.float32)
            h = hidden_states.to(acc)
            b, n, d = h.shape
            mod = linear(F.silu(emb.to(acc)), adaln_weight, adaln_bias)
            shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = mod.chunk(6, dim=-1)
            x = modulate(h, shift_msa, scale_msa)
            qkv = linear(x, qkv_weight, qkv_bias)
            q, k, v = qkv.reshape(b, n, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
            attn = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d)
            h = h + gate_msa[:, None] * linear(attn, proj_weight, proj_bias)
            x = modulate(h, shift_mlp, scale_mlp)
            x = F.gelu(linear(x, fc1_weight, fc1_bias), approximate="tanh")
            h = h + gate_mlp[:, None] * linear(x, fc2_weight, fc2_bias)
            return h.to(hidden_states.dtype)
        """,
        HEADS=heads,
        EPS=eps,
        HELPERS=FUSED_HELPERS,
    )
    problem = make_problem(
        name=problem_name(model, "dit_block"),
        model=model,
        op_type="dit_block",
        tags=[
            "dit",
            "transformer-layer",
            "adaln",
            "attention",
            "mlp",
            "gemm",
            "fusion",
            "bf16",
            "tensor-core",
        ],
        description=f"""
            One whole adaLN-Zero transformer block of {model.display_name} ({d} wide, {heads} heads
            of {hd}, {tokens} tokens = the {grid}x{grid} patch grid of a 256 px image). emb
            [batch_size, {d}] bf16 is the timestep + class embedding; mod = Linear(silu(emb)) with
            adaln_weight [{6 * d}, {d}] splits into shift_msa, scale_msa, gate_msa, shift_mlp,
            scale_mlp, gate_mlp (in that order). x1 = LN(h) * (1 + scale_msa) + shift_msa (LN
            without affine, eps {eps:g}, fp32 statistics, rounded to bf16); h += gate_msa *
            proj(MHA(x1)) where q, k, v come from packed qkv_weight [{3 * d}, {d}] (rows q, k, v),
            non-causal, scale 1/sqrt({hd}); x2 = LN(h) * (1 + scale_mlp) + shift_mlp; out = h +
            gate_mlp * fc2(gelu_tanh(fc1(x2))), MLP {d} -> {4 * d} -> {d}. All Linears have bias;
            modulation is broadcast per sample over tokens. hidden_states and output are
            [batch_size, {tokens}, {d}] bf16. {FUSED_CONTRACT} Attention runs on the fp32 q, k, v.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "num_tokens": const(tokens),
            "hidden_size": const(d),
            "mod_dim": expr("6 * hidden_size"),
            "qkv_dim": expr("3 * hidden_size"),
            "mlp_dim": expr("4 * hidden_size"),
        },
        inputs={
            "hidden_states": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "token activations"),
            "emb": tensor(["batch_size", "hidden_size"], BF, "timestep + class embedding"),
            "adaln_weight": tensor(["mod_dim", "hidden_size"], BF, "adaLN modulation Linear"),
            "adaln_bias": tensor(["mod_dim"], BF, "adaLN modulation bias"),
            "qkv_weight": tensor(["qkv_dim", "hidden_size"], BF, "q, k, v projections stacked"),
            "qkv_bias": tensor(["qkv_dim"], BF, "q, k, v biases stacked"),
            "proj_weight": tensor(["hidden_size", "hidden_size"], BF, "attention output projection"),
            "proj_bias": tensor(["hidden_size"], BF, "attention output bias"),
            "fc1_weight": tensor(["mlp_dim", "hidden_size"], BF, "MLP up projection"),
            "fc1_bias": tensor(["mlp_dim"], BF, "MLP up bias"),
            "fc2_weight": tensor(["hidden_size", "mlp_dim"], BF, "MLP down projection"),
            "fc2_bias": tensor(["hidden_size"], BF, "MLP down bias"),
        },
        outputs={"output": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "block output")},
        reference=reference,
        workloads=[{"batch_size": b} for b in batch_sizes],
        tolerance=BF16_BLOCK,
    )
    return with_tensor_core_dtype(problem, BF)


SD3_TOKEN_SIZES: tuple[tuple[int, int], ...] = (
    (1, 256),
    (2, 256),
    (1, 1024),
    (2, 1024),
    (1, 2304),
    (2, 2304),
    (1, 4096),
    (2, 4096),
    (4, 4096),
)
"""(batch_size, image tokens): (H/16)(W/16) for 256, 512, 768 and 1024 px; batch 2 = CFG pair."""


def mmdit_joint_attention(
    model: ModelConfig,
    *,
    text_len: int = 333,  # SD3 pipeline: 77 CLIP tokens + 256 T5 tokens (max_sequence_length=256)
    eps: float = 1e-6,  # JointTransformerBlock qk_norm="rms_norm": RMSNorm(head_dim, eps=1e-6)
    sizes: Sequence[tuple[int, int]] = SD3_TOKEN_SIZES,
) -> Problem:
    """MMDiT joint attention: per-head RMSNorm of q/k per stream, one attention over image + text."""
    heads = model.integer("transformer.num_attention_heads")
    hd = model.integer("transformer.attention_head_dim")
    d = heads * hd
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS = $HEADS
        EPS = $EPS


        def heads(x):
            b, n, d = x.shape
            return x.reshape(b, n, HEADS, d // HEADS).transpose(1, 2)


        def rms_norm(x, weight):
            y = x.to(torch.float32) * torch.rsqrt(x.to(torch.float32).pow(2).mean(dim=-1, keepdim=True) + EPS)
            return y.to(x.dtype) * weight


        def run(img_q, img_k, img_v, txt_q, txt_k, txt_v, norm_q_weight, norm_k_weight,
                norm_added_q_weight, norm_added_k_weight):
            n_img = img_q.shape[1]
            q = torch.cat([rms_norm(heads(img_q), norm_q_weight), rms_norm(heads(txt_q), norm_added_q_weight)], dim=2)
            k = torch.cat([rms_norm(heads(img_k), norm_k_weight), rms_norm(heads(txt_k), norm_added_k_weight)], dim=2)
            v = torch.cat([heads(img_v), heads(txt_v)], dim=2)
            o = F.scaled_dot_product_attention(q, k, v)
            o = o.transpose(1, 2).flatten(2)
            return o[:, :n_img], o[:, n_img:]
        """,
        HEADS=heads,
        EPS=eps,
    )
    img = ["batch_size", "num_img_tokens", "hidden_size"]
    txt = ["batch_size", "text_len", "hidden_size"]
    return make_problem(
        name=problem_name(model, "mmdit_joint_attention"),
        model=model,
        op_type="attention",
        tags=["mmdit", "attention", "joint-attention", "rmsnorm", "qk-norm", "dit", "bf16", "tensor-core"],
        description=f"""
            Joint attention of a {model.display_name} MMDiT block ({heads} heads of {hd}): the
            image and text streams project their own q, k, v (given here, [batch_size, tokens,
            {d}] bf16, heads contiguous); q and k get a per-head RMSNorm over the {hd} channels
            (eps {eps:g}, fp32 statistics, normalised value rounded to bf16, then times the bf16
            weight; separate weights for image q/k and text q/k), then one non-causal attention
            runs over the concatenation [image tokens, then {text_len} text tokens] with scale
            1/sqrt({hd}) and fp32 softmax. Outputs: the attention output split back into the
            image part [batch_size, num_img_tokens, {d}] and the text part [batch_size,
            {text_len}, {d}], bf16, heads flattened (before to_out). num_img_tokens = (H/16)(W/16)
            for an HxW image. A flash-attention kernel with the RMSNorm fused into the Q/K loads.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "num_img_tokens": var("image tokens"),
            "text_len": const(text_len),
            "hidden_size": const(d),
            "head_dim": const(hd),
        },
        inputs={
            "img_q": tensor(img, BF, "image-stream queries"),
            "img_k": tensor(img, BF, "image-stream keys"),
            "img_v": tensor(img, BF, "image-stream values"),
            "txt_q": tensor(txt, BF, "text-stream queries"),
            "txt_k": tensor(txt, BF, "text-stream keys"),
            "txt_v": tensor(txt, BF, "text-stream values"),
            "norm_q_weight": tensor(["head_dim"], BF, "image query RMSNorm weight"),
            "norm_k_weight": tensor(["head_dim"], BF, "image key RMSNorm weight"),
            "norm_added_q_weight": tensor(["head_dim"], BF, "text query RMSNorm weight"),
            "norm_added_k_weight": tensor(["head_dim"], BF, "text key RMSNorm weight"),
        },
        outputs={
            "img_out": tensor(img, BF, "attention output, image tokens"),
            "txt_out": tensor(txt, BF, "attention output, text tokens"),
        },
        reference=reference,
        workloads=[{"batch_size": b, "num_img_tokens": n} for b, n in sizes],
        tolerance=BF16_ATTENTION,
    )


FLUX_GRIDS: tuple[tuple[int, int, int], ...] = (
    (1, 16, 16),
    (1, 32, 32),
    (2, 32, 32),
    (1, 48, 48),
    (1, 64, 64),
    (1, 64, 96),
    (2, 64, 64),
    (1, 96, 96),
    (1, 96, 128),
)
"""(batch_size, grid height, grid width): image / 16 for 256, 512, 768, 1024, 1024x1536, 1536 and
1536x2048 px."""


def qk_norm_rope(
    model: ModelConfig,
    *,
    text_len: int = 512,  # FluxPipeline max_sequence_length for FLUX.1-dev/-schnell T5 prompts
    theta: float = 10000.0,  # FluxPosEmbed(theta=10000, axes_dim=axes_dims_rope)
    eps: float = 1e-6,  # FluxAttention norm_q/norm_k: RMSNorm(dim_head, eps=1e-6)
    sizes: Sequence[tuple[int, int, int]] = FLUX_GRIDS,
) -> Problem:
    """Per-head RMSNorm of q and k, then FLUX's 3-axis rotary embedding over text + image tokens."""
    heads = model.integer("transformer.num_attention_heads")
    hd = model.integer("transformer.attention_head_dim")
    axes_dim = [model.integer(f"transformer.axes_dims_rope.{i}") for i in range(3)]
    reference = reference_source(
        """
        import torch

        AXES_DIM = $AXES_DIM
        THETA = $THETA
        EPS = $EPS


        def rope_tables(pos_ids):
            ids = pos_ids.to(torch.float64)
            cos, sin = [], []
            for axis, d in enumerate(AXES_DIM):
                omega = 1.0 / THETA ** (torch.arange(0, d, 2, device=ids.device, dtype=torch.float64) / d)
                angles = ids[:, axis, None] * omega[None, :]
                cos.append(angles.cos().repeat_interleave(2, dim=-1))
                sin.append(angles.sin().repeat_interleave(2, dim=-1))
            return torch.cat(cos, dim=-1).float(), torch.cat(sin, dim=-1).float()


        def rms_norm(x, weight):
            y = x.to(torch.float32) * torch.rsqrt(x.to(torch.float32).pow(2).mean(dim=-1, keepdim=True) + EPS)
            return y.to(x.dtype) * weight


        def rotate(x, cos, sin):
            # Pairs (2i, 2i+1) rotate together: (a, b) -> (a cos - b sin, b cos + a sin).
            a, b = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
            rotated = torch.stack([-b, a], dim=-1).flatten(-2)
            return (x.to(torch.float32) * cos + rotated.to(torch.float32) * sin).to(x.dtype)


        def run(query, key, norm_q_weight, norm_k_weight, pos_ids):
            cos, sin = rope_tables(pos_ids)
            q = rotate(rms_norm(query, norm_q_weight), cos, sin)
            k = rotate(rms_norm(key, norm_k_weight), cos, sin)
            return q, k
        """,
        AXES_DIM=str(tuple(axes_dim)),
        THETA=theta,
        EPS=eps,
    )
    shape = ["batch_size", "num_heads", "num_tokens", "head_dim"]
    return make_problem(
        name=problem_name(model, "qk_norm_rope"),
        model=model,
        op_type="rope",
        tags=["rope", "rope-3axis", "rmsnorm", "qk-norm", "dit", "mmdit", "memory-bound", "bf16"],
        description=f"""
            Query/key preparation in every {model.display_name} attention ({heads} heads of {hd}):
            per-head RMSNorm over {hd} channels (eps {eps:g}, fp32 statistics, normalised value
            rounded to bf16, times the bf16 weight), then FLUX's rotary embedding. query and key are
            [batch_size, {heads}, num_tokens, {hd}] bf16 with num_tokens = {text_len} text tokens
            followed by grid_h * grid_w image tokens (grid = image / 16, row-major). pos_ids
            [num_tokens, 3] int64 are the position ids the pipeline builds (txt_ids and img_ids
            concatenated: (0, 0, 0) for text, (0, row, col) for image; any ids must work), shared
            by the batch. The head dim splits into axes of
            {axes_dim} channels; for an axis of d channels, omega_i = {theta:g}^(-2i/d) and angle =
            id * omega_i (computed in fp64, cast to fp32), each angle shared by channels 2i and 2i+1
            (interleaved pairs): (a, b) -> (a cos - b sin, b cos + a sin) in fp32, rounded to bf16.
            Outputs q, k like the inputs. Memory-bound: the angles can be computed in registers
            from the ids.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "grid_h": var("image patch rows"),
            "grid_w": var("image patch columns"),
            "num_heads": const(heads),
            "head_dim": const(hd),
            "text_len": const(text_len),
            "num_tokens": expr("text_len + grid_h * grid_w"),
        },
        inputs={
            "query": tensor(shape, BF, "projected queries"),
            "key": tensor(shape, BF, "projected keys"),
            "norm_q_weight": tensor(["head_dim"], BF, "query RMSNorm weight"),
            "norm_k_weight": tensor(["head_dim"], BF, "key RMSNorm weight"),
            "pos_ids": tensor(["num_tokens", 3], I64, "position ids (axis 0, row, col), in [0, 512)"),
        },
        outputs={"q": tensor(shape, BF, "rotated queries"), "k": tensor(shape, BF, "rotated keys")},
        reference=reference,
        workloads=[{"batch_size": b, "grid_h": h, "grid_w": w} for b, h, w in sizes],
        tolerance=BF16,
    )


# -- Sana ------------------------------------------------------------------------------------------

SANA_SIZES: tuple[tuple[int, int], ...] = (
    (1, 256),
    (2, 256),
    (1, 1024),
    (2, 1024),
    (4, 1024),
    (1, 4096),
    (2, 4096),
    (1, 16384),
)
"""(batch_size, tokens): DC-AE latents are image / 32 with patch 1, so 512 px is 16x16 = 256 tokens,
1024 px 1024, 2048 px 4096 and 4096 px 16384."""


def sana_linear_attention(
    model: ModelConfig,
    *,
    eps: float = 1e-15,  # SanaLinearAttnProcessor2_0
    sizes: Sequence[tuple[int, int]] = SANA_SIZES,
) -> Problem:
    """Sana's ReLU linear attention: (V K^T) Q with a ones row for the normaliser, in fp32."""
    heads = model.integer("transformer.num_attention_heads")
    hd = model.integer("transformer.attention_head_dim")
    d = heads * hd
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS = $HEADS
        EPS = $EPS


        def run(query, key, value):
            b, n, d = query.shape
            q = F.relu(query.transpose(1, 2).unflatten(1, (HEADS, -1))).float()  # B, H, D, N
            k = F.relu(key.transpose(1, 2).unflatten(1, (HEADS, -1)).transpose(2, 3)).float()  # B, H, N, D
            v = value.transpose(1, 2).unflatten(1, (HEADS, -1)).float()  # B, H, D, N
            v = F.pad(v, (0, 0, 0, 1), value=1.0)  # a row of ones yields the normaliser
            out = (v @ k) @ q  # B, H, D + 1, N
            out = out[:, :, :-1] / (out[:, :, -1:] + EPS)
            return out.flatten(1, 2).transpose(1, 2).to(query.dtype)
        """,
        HEADS=heads,
        EPS=eps,
    )
    shape = ["batch_size", "num_tokens", "hidden_size"]
    return make_problem(
        name=problem_name(model, "linear_attention"),
        model=model,
        op_type="linear_attention",
        tags=["linear-attention", "attention", "relu", "dit", "fp32-accumulate", "bf16"],
        description=f"""
            ReLU linear attention of {model.display_name} (SanaLinearAttnProcessor2_0, {heads} heads
            of {hd}, {d} wide): per head, with q = relu(Q), k = relu(K) and v = V (fp32),
            out_t = sum_s v_s (k_s . q_t) / (sum_s k_s . q_t + {eps:g}). query, key, value are
            [batch_size, num_tokens, {d}] bf16 (after to_q/to_k/to_v, heads contiguous); the
            reference appends a row of ones to v so that [V; 1] K^T (a [{hd + 1}, {hd}] matrix per
            head) gives the numerator and the normaliser together, then multiplies by Q, all in
            fp32. Output [batch_size, num_tokens, {d}] rounded to bf16. Cost is linear in tokens:
            one pass to reduce K^T V per head, one to apply it to every query.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "num_tokens": var("latent tokens"),
            "hidden_size": const(d),
        },
        inputs={
            "query": tensor(shape, BF, "queries"),
            "key": tensor(shape, BF, "keys"),
            "value": tensor(shape, BF, "values"),
        },
        outputs={"output": tensor(shape, BF, "attention output")},
        reference=reference,
        workloads=[{"batch_size": b, "num_tokens": n} for b, n in sizes],
        tolerance=BF16,
    )


def sana_glumbconv(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = (
        (1, 16),
        (2, 16),
        (1, 24),
        (1, 32),
        (2, 32),
        (4, 32),
        (1, 64),
        (2, 64),
    ),
) -> Problem:
    """Sana's Mix-FFN (GLUMBConv): 1x1 conv + SiLU, depthwise 3x3, gated SiLU, 1x1 conv."""
    heads = model.integer("transformer.num_attention_heads")
    c = heads * model.integer("transformer.attention_head_dim")
    hidden = int(model.number("transformer.mlp_ratio") * c)
    reference = reference_source(
        """
        import math

        import torch
        import torch.nn.functional as F


        def conv(x, w, b=None, **kwargs):
            # Tensor-core convolution: operand rounded to the weight dtype, fp32 accumulation.
            acc = torch.promote_types(w.dtype, torch.float32)
            return F.conv2d(x.to(w.dtype).to(acc), w.to(acc), None if b is None else b.to(acc), **kwargs)


        def run(hidden_states, conv_inverted_weight, conv_inverted_bias, conv_depth_weight, conv_depth_bias,
                conv_point_weight):
            b, n, c = hidden_states.shape
            grid = math.isqrt(n)  # square latent grids
            x = hidden_states.reshape(b, grid, grid, c).permute(0, 3, 1, 2)  # NCHW
            x = F.silu(conv(x, conv_inverted_weight[:, :, None, None], conv_inverted_bias))
            # The depthwise stencil runs on the fp32 intermediate (CUDA cores, no operand rounding).
            acc = x.dtype
            x = F.conv2d(x, conv_depth_weight.to(acc), conv_depth_bias.to(acc), padding=1, groups=x.shape[1])
            x, gate = x.chunk(2, dim=1)
            x = x * F.silu(gate)
            x = conv(x, conv_point_weight[:, :, None, None]).to(hidden_states.dtype)
            return x.flatten(2).transpose(1, 2)
        """
    )
    shape = ["batch_size", "num_tokens", "hidden_size"]
    problem = make_problem(
        name=problem_name(model, "glumbconv"),
        model=model,
        op_type="mix_ffn",
        tags=["mlp", "conv2d", "depthwise-conv", "glu", "silu", "gemm", "dit", "bf16", "tensor-core"],
        description=f"""
            Mix-FFN of every {model.display_name} block (GLUMBConv, {c} -> {2 * hidden} -> {hidden}
            -> {c}, mlp_ratio {model.number("transformer.mlp_ratio"):g}): tokens
            [batch_size, grid * grid, {c}] bf16 are viewed as a grid x grid NCHW map (row-major
            tokens); conv_inverted 1x1 ({c} -> {2 * hidden}) + bias + SiLU; conv_depth 3x3
            depthwise over the {2 * hidden} channels, padding 1, + bias; split channels into
            (x, gate) halves, x * silu(gate); conv_point 1x1 ({hidden} -> {c}, no bias). Weights
            bf16: conv_inverted_weight [{2 * hidden}, {c}], conv_depth_weight [{2 * hidden}, 1, 3,
            3], conv_point_weight [{c}, {hidden}]. grid is the latent side (image / 32). Output
            [batch_size, grid * grid, {c}] bf16. Two GEMMs around a depthwise stencil that needs a
            one-pixel halo. {FUSED_CONTRACT} The depthwise stencil runs on the fp32 intermediate.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "grid": var("latent side (image / 32)"),
            "num_tokens": expr("grid * grid"),
            "hidden_size": const(c),
            "inverted_dim": const(2 * hidden),
            "ffn_dim": const(hidden),
            "kernel": const(3),
            "one": const(1),
        },
        inputs={
            "hidden_states": tensor(shape, BF, "tokens, row-major over the latent grid"),
            "conv_inverted_weight": tensor(["inverted_dim", "hidden_size"], BF, "1x1 expansion conv"),
            "conv_inverted_bias": tensor(["inverted_dim"], BF, "expansion bias"),
            "conv_depth_weight": tensor(
                ["inverted_dim", "one", "kernel", "kernel"], BF, "depthwise 3x3 conv"
            ),
            "conv_depth_bias": tensor(["inverted_dim"], BF, "depthwise bias"),
            "conv_point_weight": tensor(["hidden_size", "ffn_dim"], BF, "1x1 projection conv"),
        },
        outputs={"output": tensor(shape, BF, "Mix-FFN output")},
        reference=reference,
        workloads=[{"batch_size": b, "grid": g} for b, g in sizes],
        tolerance=BF16_BLOCK,
    )
    return with_tensor_core_dtype(problem, BF)


# -- patch embedding -------------------------------------------------------------------------------

LATENT_PATCH_SIZES: tuple[tuple[int, int, int], ...] = (
    (1, 32, 32),
    (2, 32, 32),
    (1, 64, 64),
    (2, 64, 64),
    (1, 96, 96),
    (2, 96, 96),
    (1, 128, 128),
    (2, 128, 128),
    (4, 128, 128),
)
"""(batch_size, latent height, latent width): 256, 512, 768 and 1024 px (latent = image / 8)."""


def latent_patch_embed(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int, int]] = LATENT_PATCH_SIZES,
) -> Problem:
    """DiT-style PatchEmbed on latents: Conv2d(kernel = stride = patch) + bias + sincos positions."""
    heads = model.integer("transformer.num_attention_heads")
    d = heads * model.integer("transformer.attention_head_dim")
    c = model.integer("transformer.in_channels")
    p = model.integer("transformer.patch_size")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        PATCH = $PATCH


        def run(latents, proj_weight, proj_bias, pos_embed):
            b, c, h, w = latents.shape
            gh, gw = h // PATCH, w // PATCH
            x = latents.reshape(b, c, gh, PATCH, gw, PATCH).permute(0, 2, 4, 1, 3, 5).reshape(b, gh * gw, -1)
            return F.linear(x, proj_weight, proj_bias) + pos_embed
        """,
        PATCH=p,
    )
    return make_problem(
        name=problem_name(model, "latent_patch_embed"),
        model=model,
        op_type="patch_embed",
        tags=["patch-embed", "conv2d", "gemm", "dit", "memory-bound", "bf16"],
        description=f"""
            Input stage of the {model.display_name} transformer (PatchEmbed): Conv2d({c} -> {d},
            kernel = stride = {p}) + bias over the VAE latent, flattened to tokens, plus the 2D
            sin-cos position embedding of the grid (precomputed, here an input). latents is NCHW
            [batch_size, {c}, height, width] bf16 with height, width = image / 8; proj_weight is the
            conv weight flattened to [{d}, {c * p * p}] in (channel, row, col) order; pos_embed is
            [num_tokens, {d}] bf16 for the (height / {p}) x (width / {p}) grid, row-major. tokens =
            patches @ proj_weight^T + proj_bias (fp32 accumulation, rounded to bf16) + pos_embed
            (bf16 add). Output [batch_size, num_tokens, {d}] bf16. K = {c * p * p} is tiny: the
            {d}-wide output write dominates, so the op is memory-bound.
        """,
        axes={
            "batch_size": var("latents in the batch"),
            "height": var("latent height"),
            "width": var("latent width"),
            "in_channels": const(c),
            "patch": const(p),
            "patch_dim": expr("in_channels * patch * patch"),
            "num_tokens": expr("(height // patch) * (width // patch)"),
            "hidden_size": const(d),
        },
        constraints=["height % patch == 0", "width % patch == 0"],
        inputs={
            "latents": tensor(["batch_size", "in_channels", "height", "width"], BF, "VAE latents, NCHW"),
            "proj_weight": tensor(
                ["hidden_size", "patch_dim"], BF, "conv weight flattened (channel, row, col)"
            ),
            "proj_bias": tensor(["hidden_size"], BF, "conv bias"),
            "pos_embed": tensor(["num_tokens", "hidden_size"], BF, "2D sin-cos position embedding"),
        },
        outputs={"tokens": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "patch tokens")},
        reference=reference,
        workloads=[{"batch_size": b, "height": h, "width": w} for b, h, w in sizes],
        tolerance=BF16,
    )
