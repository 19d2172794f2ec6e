"""Operator templates of vision backbones: ConvNeXt, Swin, SegFormer and ResNet blocks.

ViT-style layers and MLPs are in :mod:`.media_layers`, their backward passes in :mod:`.media_backward`;
patch embedding and the eager attention softmax in :mod:`.media`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16, BF16_BLOCK, const, expr, make_problem, reference_source, tensor, var
from .media_common import BF, problem_name
from .models import ModelConfig

STAGE0_SIZES: tuple[tuple[int, int], ...] = (
    (1, 56),
    (2, 56),
    (4, 56),
    (1, 96),
    (8, 56),
    (16, 56),
    (8, 72),
    (32, 56),
    (16, 96),
)
"""(batch_size, feature side) at stage 0 (image / 4): 224 px (56), 288 px (72) and 384 px (96)."""


def convnext_block(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = STAGE0_SIZES,
    eps: float = 1e-6,  # ConvNextLayer: ConvNextLayerNorm(dim, eps=1e-6), not config.layer_norm_eps
) -> Problem:
    """A whole ConvNeXt block at stage 0: depthwise 7x7, LayerNorm, MLP x4, layer scale, residual."""
    c = model.integer("hidden_sizes.0")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        EPS = $EPS


        def run(x, dwconv_weight, dwconv_bias, norm_weight, norm_bias, pwconv1_weight, pwconv1_bias,
                pwconv2_weight, pwconv2_bias, layer_scale_parameter):
            c = x.shape[1]
            h = F.conv2d(x, dwconv_weight, dwconv_bias, padding=3, groups=c)
            h = h.permute(0, 2, 3, 1)  # channels last
            h = F.layer_norm(h.to(torch.float32), (c,), norm_weight.float(), norm_bias.float(), EPS).to(x.dtype)
            h = F.gelu(F.linear(h, pwconv1_weight, pwconv1_bias))
            h = F.linear(h, pwconv2_weight, pwconv2_bias) * layer_scale_parameter
            return x + h.permute(0, 3, 1, 2)
        """,
        EPS=eps,
    )
    shape = ["batch_size", "channels", "height", "width"]
    return make_problem(
        name=problem_name(model, "convnext_block"),
        model=model,
        op_type="convnext_block",
        tags=[
            "convnext",
            "depthwise-conv",
            "conv2d",
            "layernorm",
            "mlp",
            "gelu",
            "fusion",
            "bf16",
            "tensor-core",
        ],
        description=f"""
            One whole ConvNeXt block of {model.display_name} at stage 0 ({c} channels, image / 4):
            h = depthwise Conv2d 7x7 (padding 3, groups {c}, + bias) of x; LayerNorm over the {c}
            channels of each pixel (eps {eps:g}, fp32 statistics, affine, rounded to bf16);
            Linear({c} -> {4 * c}) + bias, exact GELU, Linear({4 * c} -> {c}) + bias; times the
            per-channel layer_scale_parameter (gamma); out = x + h. x is NCHW [batch_size, {c},
            height, width] bf16 with height = width = image / 4 (56 for 224 px); weights bf16
            (dwconv_weight [{c}, 1, 7, 7], pwconv weights in nn.Linear layout), fp32 accumulation,
            bf16 after each op. Output NCHW like x. A stencil followed by a per-pixel MLP: fuse the
            norm and the {4 * c}-wide intermediate into one pass over channels-last tiles.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "height": var("feature-map side"),
            "width": expr("height"),
            "channels": const(c),
            "mlp_dim": expr("4 * channels"),
            "one": const(1),
            "kernel": const(7),
        },
        inputs={
            "x": tensor(shape, BF, "block input, NCHW"),
            "dwconv_weight": tensor(["channels", "one", "kernel", "kernel"], BF, "depthwise 7x7 weight"),
            "dwconv_bias": tensor(["channels"], BF, "depthwise bias"),
            "norm_weight": tensor(["channels"], BF, "LayerNorm weight"),
            "norm_bias": tensor(["channels"], BF, "LayerNorm bias"),
            "pwconv1_weight": tensor(["mlp_dim", "channels"], BF, "pointwise up projection"),
            "pwconv1_bias": tensor(["mlp_dim"], BF, "up projection bias"),
            "pwconv2_weight": tensor(["channels", "mlp_dim"], BF, "pointwise down projection"),
            "pwconv2_bias": tensor(["channels"], BF, "down projection bias"),
            "layer_scale_parameter": tensor(["channels"], BF, "layer scale (gamma)"),
        },
        outputs={"output": tensor(shape, BF, "block output")},
        reference=reference,
        workloads=[{"batch_size": b, "height": h} for b, h in sizes],
        tolerance=BF16_BLOCK,
    )


def swin_window_attention(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = STAGE0_SIZES,
) -> Problem:
    """Swin (non-shifted) window attention sub-block: LN, window MHA with relative bias, residual."""
    c = model.integer("embed_dim")
    heads = model.integer("num_heads.0")
    window = model.integer("window_size")
    eps = model.number("layer_norm_eps")
    hd = c // heads
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS = $HEADS
        WINDOW = $WINDOW
        EPS = $EPS


        def relative_position_index(device):
            coords = torch.stack(torch.meshgrid(torch.arange(WINDOW, device=device),
                                                torch.arange(WINDOW, device=device), indexing="ij")).flatten(1)
            rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (WINDOW - 1)
            return rel[..., 0] * (2 * WINDOW - 1) + rel[..., 1]  # [W*W, W*W]


        def run(hidden_states, layernorm_weight, layernorm_bias, qkv_weight, qkv_bias, proj_weight, proj_bias,
                relative_position_bias_table):
            b, n, c = hidden_states.shape
            side = int(round(n ** 0.5))
            x = F.layer_norm(hidden_states.float(), (c,), layernorm_weight.float(), layernorm_bias.float(), EPS)
            x = x.to(hidden_states.dtype).reshape(b, side // WINDOW, WINDOW, side // WINDOW, WINDOW, c)
            windows = x.permute(0, 1, 3, 2, 4, 5).reshape(-1, WINDOW * WINDOW, c)
            q, k, v = F.linear(windows, qkv_weight, qkv_bias).reshape(
                windows.shape[0], WINDOW * WINDOW, 3, HEADS, c // HEADS).permute(2, 0, 3, 1, 4)
            bias = relative_position_bias_table[relative_position_index(q.device)].permute(2, 0, 1)
            scores = (q @ k.transpose(-1, -2)).float() * (c // HEADS) ** -0.5 + bias.float()
            probs = torch.softmax(scores, dim=-1).to(v.dtype)
            o = (probs @ v).transpose(1, 2).reshape(-1, WINDOW * WINDOW, c)
            o = F.linear(o, proj_weight, proj_bias)
            o = o.reshape(b, side // WINDOW, side // WINDOW, WINDOW, WINDOW, c).permute(0, 1, 3, 2, 4, 5)
            return hidden_states + o.reshape(b, n, c)
        """,
        HEADS=heads,
        WINDOW=window,
        EPS=eps,
    )
    shape = ["batch_size", "num_tokens", "channels"]
    return make_problem(
        name=problem_name(model, "window_attention"),
        model=model,
        op_type="window_attention",
        tags=[
            "swin",
            "window-attention",
            "attention",
            "relative-position-bias",
            "layernorm",
            "bf16",
            "tensor-core",
        ],
        description=f"""
            Attention half of a (non-shifted) {model.display_name} block at stage 0 ({c} channels,
            {heads} heads of {hd}, {window}x{window} windows): out = x + proj(W-MSA(LN(x))). x is
            [batch_size, side * side, {c}] bf16, tokens row-major over the side x side map (image /
            4: 56 for 224 px). LayerNorm eps {eps:g} (fp32 statistics, affine, bf16). The map is cut
            into non-overlapping {window}x{window} windows; per window, q, k, v from the packed
            qkv_weight [{3 * c}, {c}] + bias (rows q, k, v), scores = q k^T / sqrt({hd}) (bf16
            matmul rounded to bf16, then fp32) + relative_position_bias_table[index] where index(i,
            j) = (dy + {window - 1}) * {2 * window - 1} + (dx + {window - 1}) for the offset of
            token i from token j (table [{(2 * window - 1) ** 2}, {heads}]); fp32 softmax, rounded
            to bf16, times v; proj Linear + bias; windows merged back; residual add. Output like x.
            Tiny {window * window}-token attentions: batch many windows per CTA.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "side": var("feature-map side"),
            "num_tokens": expr("side * side"),
            "channels": const(c),
            "qkv_dim": expr("3 * channels"),
            "table_size": const((2 * window - 1) ** 2),
            "num_heads": const(heads),
        },
        constraints=[f"side % {window} == 0"],
        inputs={
            "hidden_states": tensor(shape, BF, "stage-0 tokens"),
            "layernorm_weight": tensor(["channels"], BF, "layernorm_before weight"),
            "layernorm_bias": tensor(["channels"], BF, "layernorm_before bias"),
            "qkv_weight": tensor(["qkv_dim", "channels"], BF, "query, key, value Linears stacked"),
            "qkv_bias": tensor(["qkv_dim"], BF, "q, k, v biases stacked"),
            "proj_weight": tensor(["channels", "channels"], BF, "attention output dense"),
            "proj_bias": tensor(["channels"], BF, "attention output bias"),
            "relative_position_bias_table": tensor(["table_size", "num_heads"], BF, "relative position bias"),
        },
        outputs={"output": tensor(shape, BF, "x + window attention")},
        reference=reference,
        workloads=[{"batch_size": b, "side": s} for b, s in sizes],
        tolerance=BF16_BLOCK,
    )


SEGFORMER_SIZES: tuple[tuple[int, int], ...] = (
    (1, 128),
    (2, 128),
    (1, 160),
    (4, 128),
    (4, 160),
    (8, 128),
    (8, 160),
    (16, 128),
    (16, 160),
)
"""(batch_size, stage-0 side = image / 4): 512 px ADE crops (128) and 640 px crops (160)."""


def segformer_mix_ffn(model: ModelConfig, *, sizes: Sequence[tuple[int, int]] = SEGFORMER_SIZES) -> Problem:
    """SegFormer Mix-FFN at stage 0: Linear, depthwise 3x3 conv, GELU, Linear."""
    c = model.integer("hidden_sizes.0")
    hidden = c * model.integer("mlp_ratios.0")
    reference = reference_source(
        """
        import math

        import torch
        import torch.nn.functional as F


        def run(hidden_states, dense1_weight, dense1_bias, dwconv_weight, dwconv_bias, dense2_weight, dense2_bias):
            b, n, c = hidden_states.shape
            side = math.isqrt(n)
            x = F.linear(hidden_states, dense1_weight, dense1_bias)
            x = x.transpose(1, 2).reshape(b, -1, side, side)
            x = F.conv2d(x, dwconv_weight, dwconv_bias, padding=1, groups=x.shape[1])
            x = F.gelu(x.flatten(2).transpose(1, 2))
            return F.linear(x, dense2_weight, dense2_bias)
        """
    )
    shape = ["batch_size", "num_tokens", "channels"]
    return make_problem(
        name=problem_name(model, "mix_ffn"),
        model=model,
        op_type="mix_ffn",
        tags=["segformer", "mlp", "depthwise-conv", "gelu", "gemm", "segmentation", "bf16"],
        description=f"""
            Mix-FFN of the {model.display_name} encoder at stage 0 ({c} channels, hidden {hidden},
            image / 4): dense1 Linear({c} -> {hidden}) + bias; the tokens, row-major over the side x
            side map, viewed as NCHW; depthwise Conv2d 3x3 over {hidden} channels (padding 1, +
            bias); exact GELU; dense2 Linear({hidden} -> {c}) + bias. hidden_states is
            [batch_size, side * side, {c}] bf16 (side 128 for a 512 px crop); weights bf16
            (dwconv_weight [{hidden}, 1, 3, 3]); fp32 accumulation, bf16 after every op. Output
            [batch_size, side * side, {c}] bf16. Narrow channels and many tokens: memory-bound
            unless the {hidden}-wide intermediate stays on chip (needs a one-row halo).
        """,
        axes={
            "batch_size": var("images in the batch"),
            "side": var("stage-0 side"),
            "num_tokens": expr("side * side"),
            "channels": const(c),
            "hidden": const(hidden),
            "one": const(1),
            "kernel": const(3),
        },
        inputs={
            "hidden_states": tensor(shape, BF, "stage-0 tokens"),
            "dense1_weight": tensor(["hidden", "channels"], BF, "first Linear"),
            "dense1_bias": tensor(["hidden"], BF, "first Linear bias"),
            "dwconv_weight": tensor(["hidden", "one", "kernel", "kernel"], BF, "depthwise 3x3 weight"),
            "dwconv_bias": tensor(["hidden"], BF, "depthwise bias"),
            "dense2_weight": tensor(["channels", "hidden"], BF, "second Linear"),
            "dense2_bias": tensor(["channels"], BF, "second Linear bias"),
        },
        outputs={"output": tensor(shape, BF, "Mix-FFN output")},
        reference=reference,
        workloads=[{"batch_size": b, "side": s} for b, s in sizes],
        tolerance=BF16_BLOCK,
    )


def resnet_stem(
    model: ModelConfig,
    *,
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256),
    eps: float = 1e-5,  # nn.BatchNorm2d default in ResNetConvLayer
) -> Problem:
    """ResNet stem: Conv 7x7 stride 2, BatchNorm (inference), ReLU, MaxPool 3x3 stride 2."""
    c = model.integer("embedding_size")
    cin = model.integer("num_channels")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        EPS = $EPS


        def run(pixel_values, conv_weight, bn_weight, bn_bias, bn_running_mean, bn_running_var):
            x = F.conv2d(pixel_values, conv_weight, stride=2, padding=3)
            x = F.batch_norm(x.float(), bn_running_mean.float(), bn_running_var.float(), bn_weight.float(),
                             bn_bias.float(), training=False, eps=EPS)
            x = F.relu(x).to(pixel_values.dtype)
            return F.max_pool2d(x, kernel_size=3, stride=2, padding=1)
        """,
        EPS=eps,
    )
    return make_problem(
        name=problem_name(model, "stem"),
        model=model,
        op_type="conv_bn_relu_pool",
        tags=["resnet", "conv2d", "batchnorm", "relu", "maxpool", "implicit-gemm", "fusion", "bf16"],
        description=f"""
            Stem of {model.display_name} (ResNetEmbeddings): Conv2d({cin} -> {c}, 7x7, stride 2,
            padding 3, no bias), BatchNorm2d in inference mode (running statistics, eps {eps:g},
            affine, computed in fp32), ReLU, rounded to bf16, then MaxPool 3x3 stride 2 padding 1.
            pixel_values is NCHW [batch_size, {cin}, 224, 224] bf16; conv_weight [{c}, {cin}, 7, 7]
            bf16 (fp32 accumulation, rounded to bf16 before the norm); BN parameters [{c}] bf16.
            Output [batch_size, {c}, 56, 56] bf16. K = {cin * 49} is small and odd: the 112x112
            conv output is 4x the final one, so fusing the pool saves most of the traffic.
        """,
        axes={
            "batch_size": var("images in the batch"),
            "in_channels": const(cin),
            "image_size": const(224),
            "channels": const(c),
            "kernel": const(7),
            "out_size": const(56),
        },
        inputs={
            "pixel_values": tensor(["batch_size", "in_channels", "image_size", "image_size"], BF, "images"),
            "conv_weight": tensor(["channels", "in_channels", "kernel", "kernel"], BF, "7x7 conv weight"),
            "bn_weight": tensor(["channels"], BF, "BatchNorm weight"),
            "bn_bias": tensor(["channels"], BF, "BatchNorm bias"),
            "bn_running_mean": tensor(["channels"], BF, "BatchNorm running mean"),
            "bn_running_var": tensor(["channels"], BF, "BatchNorm running variance"),
        },
        outputs={"output": tensor(["batch_size", "channels", "out_size", "out_size"], BF, "stem output")},
        reference=reference,
        workloads=[{"batch_size": b} for b in batch_sizes],
        tolerance=BF16,
    )
