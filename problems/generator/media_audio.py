"""Operator templates of speech and audio models: front ends, conv stacks, Conformer, codec LMs.

Audio lengths are given in samples at the model's sampling rate (16 kHz for Whisper, wav2vec2 and
HuBERT, 48 kHz for CLAP) or in frames (100 per second for log-mel features).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..load import Problem
from .common import (
    BF16,
    BF16_BLOCK,
    FP32_LOG_SPECTRUM,
    const,
    expr,
    make_problem,
    reference_source,
    tensor,
    var,
)
from .media_common import BF, F32, I64, problem_name
from .models import ModelConfig

WHISPER_AUDIO: tuple[tuple[int, int], ...] = (
    (1, 16000),
    (2, 16000),
    (1, 80000),
    (1, 160000),
    (1, 480000),
    (4, 480000),
    (8, 480000),
    (16, 480000),
    (32, 480000),
)
"""(batch_size, samples at 16 kHz): 1, 5, 10 and 30 s clips, then batches of 30 s windows."""


def log_mel_spectrogram(
    model: ModelConfig,
    *,
    mels_key: str,
    n_fft: int,
    hop: int,
    style: Literal["whisper", "db"],
    sizes: Sequence[tuple[int, int]] = WHISPER_AUDIO,
    rate: str = "16 kHz",
) -> Problem:
    """Log-mel features: framed periodic-Hann STFT power, mel filterbank, log (Whisper or dB scaling)."""
    mels = model.integer(mels_key)
    bins = n_fft // 2 + 1
    reference = reference_source(
        """
        import math

        import torch
        import torch.nn.functional as F

        N_FFT = $N_FFT
        HOP = $HOP
        WHISPER = $WHISPER


        def run(waveform, mel_filters):
            device = waveform.device
            # Frames of a centred STFT (reflect padding by N_FFT / 2), times a periodic Hann window.
            padded = F.pad(waveform[:, None], (N_FFT // 2, N_FFT // 2), mode="reflect")[:, 0]
            frames = padded.unfold(-1, N_FFT, HOP)  # [batch, 1 + samples // HOP, N_FFT]
            if WHISPER:
                frames = frames[:, :-1]  # Whisper drops the last frame
            window = torch.hann_window(N_FFT, periodic=True, dtype=waveform.dtype, device=device)
            n = torch.arange(N_FFT, dtype=torch.float64, device=device)
            k = torch.arange(N_FFT // 2 + 1, dtype=torch.float64, device=device)
            angle = 2 * math.pi * n[:, None] * k[None, :] / N_FFT
            basis = torch.cat([torch.cos(angle), -torch.sin(angle)], dim=1).to(waveform.dtype)
            spectrum = (frames * window) @ basis  # real and imaginary parts side by side
            re, im = spectrum.chunk(2, dim=-1)
            power = re * re + im * im  # [batch, frames, bins]
            mel = mel_filters.to(power.dtype) @ power.transpose(1, 2)  # [batch, mels, frames]
            if WHISPER:
                log_spec = torch.clamp(mel, min=1e-10).log10()
                floor = log_spec.amax(dim=(1, 2), keepdim=True) - 8.0
                return (torch.maximum(log_spec, floor) + 4.0) / 4.0
            return 10.0 * torch.log10(torch.clamp(mel, min=1e-10))
        """,
        N_FFT=n_fft,
        HOP=hop,
        WHISPER=style == "whisper",
    )
    if style == "whisper":
        frames_expr = f"num_samples // {hop}"
        post = (
            "log10(max(mel, 1e-10)), floored at its maximum over the whole clip minus 8, then (x + 4) / 4 "
            f"(WhisperFeatureExtractor); the last STFT frame is dropped, so num_frames = num_samples / {hop}"
        )
    else:
        frames_expr = f"num_samples // {hop} + 1"
        post = (
            f"10 * log10(max(mel, 1e-10)) (dB, reference 1, no top_db), num_frames = num_samples / {hop} + 1"
        )
    return make_problem(
        name=problem_name(model, "log_mel"),
        model=model,
        op_type="mel_spectrogram",
        tags=["audio", "stft", "mel-spectrogram", "fft", "gemm", "feature-extraction", "fp32"],
        description=f"""
            Audio front end of {model.display_name}: {mels}-bin log-mel spectrogram of {rate} audio.
            waveform is [batch_size, num_samples] fp32; frames of {n_fft} samples every {hop} from
            the signal reflect-padded by {n_fft // 2} on both sides (centred STFT), times a periodic
            Hann window; power |DFT|^2 of the {bins} non-negative frequencies (fp32; an FFT is
            fine); mel = mel_filters @ power with mel_filters [{mels}, {bins}] fp32 (an input; real
            filterbanks are non-negative triangles, any values must work); then {post}. Output
            [batch_size, {mels}, num_frames] fp32. The reference computes the DFT as a matmul;
            a kernel may use cuFFT or a fused radix-2 FFT.
        """,
        axes={
            "batch_size": var("clips in the batch"),
            "num_samples": var("audio samples"),
            "num_mels": const(mels),
            "num_bins": const(bins),
            "num_frames": expr(frames_expr),
        },
        constraints=[f"num_samples % {hop} == 0"],
        inputs={
            "waveform": tensor(["batch_size", "num_samples"], F32, "audio samples"),
            "mel_filters": tensor(["num_mels", "num_bins"], F32, "mel filterbank"),
        },
        outputs={"log_mel": tensor(["batch_size", "num_mels", "num_frames"], F32, "log-mel features")},
        reference=reference,
        workloads=[{"batch_size": b, "num_samples": n} for b, n in sizes],
        tolerance=FP32_LOG_SPECTRUM,
    )


WAV2VEC2_AUDIO: tuple[tuple[int, int], ...] = (
    (1, 8000),
    (1, 16000),
    (2, 16000),
    (1, 48000),
    (1, 160000),
    (2, 160000),
    (4, 160000),
    (1, 480000),
    (4, 480000),
)
"""(batch_size, samples at 16 kHz): 0.5 s to 30 s utterances."""


def wav2vec2_feature_encoder(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = WAV2VEC2_AUDIO,
    eps: float = 1e-5,  # nn.GroupNorm default in Wav2Vec2GroupNormConvLayer
) -> Problem:
    """The wav2vec2/HuBERT convolutional feature encoder ("group" norm variant): 7 Conv1d + GELU."""
    c = model.integer("conv_dim.0")
    k0, s0 = model.integer("conv_kernel.0"), model.integer("conv_stride.0")
    k1, k5 = model.integer("conv_kernel.1"), model.integer("conv_kernel.5")
    if model.config.get("feat_extract_norm") != "group" or model.config.get("conv_bias"):
        raise ValueError(f"{model.hf_id}: this template covers feat_extract_norm='group' without conv bias")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        STRIDE0 = $S0
        EPS = $EPS


        def run(input_values, conv0_weight, norm_weight, norm_bias, conv1_weight, conv2_weight, conv3_weight,
                conv4_weight, conv5_weight, conv6_weight):
            x = F.conv1d(input_values[:, None], conv0_weight, stride=STRIDE0)
            # GroupNorm with one group per channel: statistics over time, per channel.
            x = F.group_norm(x.float(), x.shape[1], norm_weight.float(), norm_bias.float(), EPS).to(x.dtype)
            x = F.gelu(x)
            for weight in (conv1_weight, conv2_weight, conv3_weight, conv4_weight, conv5_weight, conv6_weight):
                x = F.gelu(F.conv1d(x, weight, stride=2))
            return x
        """,
        S0=s0,
        EPS=eps,
    )
    later = {f"conv{i}_weight": tensor(["channels", "channels", "k_mid" if i < 5 else "k_last"], BF,
                                       f"conv layer {i} weight") for i in range(1, 7)}  # fmt: skip
    return make_problem(
        name=problem_name(model, "feature_encoder"),
        model=model,
        op_type="conv1d_stack",
        tags=["audio", "conv1d", "conv-stack", "groupnorm", "gelu", "implicit-gemm", "bf16", "tensor-core"],
        description=f"""
            Convolutional feature encoder of {model.display_name}: raw 16 kHz audio to 50 Hz
            features. input_values [batch_size, num_samples] bf16 (normalised waveform); conv0
            Conv1d(1 -> {c}, kernel {k0}, stride {s0}, no bias), GroupNorm with {c} groups (one per
            channel, statistics over time, eps {eps:g}, fp32, affine), GELU; then conv1-conv4
            Conv1d({c} -> {c}, kernel {k1}, stride 2) and conv5-conv6 (kernel {k5}, stride 2), each
            without bias and followed by exact GELU; no padding anywhere. All bf16 with fp32
            accumulation. Output [batch_size, {c}, num_frames] bf16, channels first, num_frames =
            49 for 1 s (each layer gives floor((L - kernel) / stride) + 1). Six chained implicit
            GEMMs with K = {c * k1} over ever shorter sequences; the first layer's 3200 Hz output
            is the widest tensor.
        """,
        axes={
            "batch_size": var("utterances in the batch"),
            "num_samples": var("16 kHz samples"),
            "channels": const(c),
            "one": const(1),
            "k0": const(k0),
            "k_mid": const(k1),
            "k_last": const(k5),
            "num_frames": expr(_conv_stack_length([(k0, s0)] + [(k1, 2)] * 4 + [(k5, 2)] * 2)),
        },
        inputs={
            "input_values": tensor(["batch_size", "num_samples"], BF, "waveform"),
            "conv0_weight": tensor(["channels", "one", "k0"], BF, "first conv weight"),
            "norm_weight": tensor(["channels"], BF, "GroupNorm weight"),
            "norm_bias": tensor(["channels"], BF, "GroupNorm bias"),
            **later,
        },
        outputs={"features": tensor(["batch_size", "channels", "num_frames"], BF, "extracted features")},
        reference=reference,
        workloads=[{"batch_size": b, "num_samples": n} for b, n in sizes],
        tolerance=BF16,
    )


def _conv_stack_length(layers: list[tuple[int, int]]) -> str:
    """Axis expression of the output length of unpadded convolutions ``(kernel, stride)`` in turn."""
    length = "num_samples"
    for kernel, stride in layers:
        length = f"(({length}) - {kernel}) // {stride} + 1"
    return length


FRAMES_50HZ: tuple[tuple[int, int], ...] = (
    (1, 49),
    (2, 49),
    (1, 249),
    (1, 499),
    (4, 249),
    (2, 499),
    (1, 1499),
    (4, 499),
    (4, 1499),
)
"""(batch_size, frames at 50 Hz): 1, 5, 10 and 30 s utterances."""


def pos_conv_embed(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = FRAMES_50HZ,
) -> Problem:
    """wav2vec2/HuBERT convolutional position embedding: grouped Conv1d k=128, GELU, residual add."""
    d = model.integer("hidden_size")
    k = model.integer("num_conv_pos_embeddings")
    g = model.integer("num_conv_pos_embedding_groups")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        KERNEL = $KERNEL
        GROUPS = $GROUPS


        def run(hidden_states, conv_weight, conv_bias):
            x = hidden_states.transpose(1, 2)
            y = F.conv1d(x, conv_weight, conv_bias, padding=KERNEL // 2, groups=GROUPS)
            y = y[:, :, :-1]  # SamePad: an even kernel yields one extra frame
            return hidden_states + F.gelu(y).transpose(1, 2)
        """,
        KERNEL=k,
        GROUPS=g,
    )
    shape = ["batch_size", "num_frames", "hidden_size"]
    return make_problem(
        name=problem_name(model, "pos_conv_embed"),
        model=model,
        op_type="grouped_conv1d",
        tags=["audio", "conv1d", "grouped-conv", "position-embedding", "gelu", "implicit-gemm", "bf16"],
        description=f"""
            Convolutional relative position embedding at the input of the {model.display_name}
            transformer: out = x + gelu(conv(x)[..., :-1]) with conv = Conv1d({d} -> {d}, kernel
            {k}, padding {k // 2}, groups {g}, + bias) along time (weight norm already folded into
            conv_weight [{d}, {d // g}, {k}]); the last output frame is dropped (SamePad). x is
            [batch_size, num_frames, {d}] bf16, frames at 50 Hz (49 per second); the convolution
            runs channels-first over time, fp32 accumulation, bf16 result, exact GELU, bf16
            residual add. Output like x. Each of the {g} groups is a GEMM with K = {d // g * k}: a
            very long kernel over short sequences, so the zero padding is a large share of the work
            at 1 s.
        """,
        axes={
            "batch_size": var("utterances in the batch"),
            "num_frames": var("50 Hz frames"),
            "hidden_size": const(d),
            "group_size": const(d // g),
            "kernel": const(k),
        },
        inputs={
            "hidden_states": tensor(shape, BF, "projected features"),
            "conv_weight": tensor(["hidden_size", "group_size", "kernel"], BF, "grouped conv weight"),
            "conv_bias": tensor(["hidden_size"], BF, "conv bias"),
        },
        outputs={"output": tensor(shape, BF, "features + position embedding")},
        reference=reference,
        workloads=[{"batch_size": b, "num_frames": t} for b, t in sizes],
        tolerance=BF16,
    )


def conformer_conv_module(
    model: ModelConfig,
    *,
    hidden_key: str,
    kernel_key: str,
    norm: Literal["batch", "layer"],
    causal: bool,
    bias: bool,
    frame_rate: str,
    sizes: Sequence[tuple[int, int]] = FRAMES_50HZ,
    eps: float = 1e-5,  # nn.LayerNorm / nn.BatchNorm1d defaults in the Conformer convolution module
) -> Problem:
    """Conformer convolution module: LN, pointwise GLU, depthwise conv, norm, SiLU, pointwise, residual."""
    d = model.integer(hidden_key)
    k = model.integer(kernel_key)
    norm_args = (
        "bn_weight, bn_bias, bn_running_mean, bn_running_var"
        if norm == "batch"
        else "dw_norm_weight, dw_norm_bias"
    )
    bias_args = ", pointwise1_bias, depthwise_bias, pointwise2_bias" if bias else ""
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        KERNEL = $KERNEL
        CAUSAL = $CAUSAL
        BATCH_NORM = $BATCH_NORM
        EPS = $EPS


        def run(hidden_states, layer_norm_weight, layer_norm_bias, pointwise1_weight, depthwise_weight,
                $NORM_ARGS, pointwise2_weight$BIAS_ARGS):
            d = hidden_states.shape[-1]
            x = F.layer_norm(hidden_states.float(), (d,), layer_norm_weight.float(), layer_norm_bias.float(), EPS)
            x = x.to(hidden_states.dtype).transpose(1, 2)  # [batch, channels, frames]
            x = F.glu(F.conv1d(x, pointwise1_weight[:, :, None], $PW1_BIAS), dim=1)
            if CAUSAL:
                x = F.conv1d(F.pad(x, (KERNEL - 1, 0)), depthwise_weight, $DW_BIAS, groups=d)
            else:
                x = F.conv1d(x, depthwise_weight, $DW_BIAS, padding=(KERNEL - 1) // 2, groups=d)
            if BATCH_NORM:
                x = F.batch_norm(x.float(), bn_running_mean.float(), bn_running_var.float(), bn_weight.float(),
                                 bn_bias.float(), training=False, eps=EPS)
            else:
                x = F.layer_norm(x.transpose(1, 2).float(), (d,), dw_norm_weight.float(), dw_norm_bias.float(),
                                 EPS).transpose(1, 2)
            x = F.silu(x).to(hidden_states.dtype)
            x = F.conv1d(x, pointwise2_weight[:, :, None], $PW2_BIAS)
            return hidden_states + x.transpose(1, 2)
        """,
        KERNEL=k,
        CAUSAL=causal,
        BATCH_NORM=norm == "batch",
        EPS=eps,
        NORM_ARGS=norm_args,
        BIAS_ARGS=bias_args,
        PW1_BIAS="pointwise1_bias" if bias else "None",
        DW_BIAS="depthwise_bias" if bias else "None",
        PW2_BIAS="pointwise2_bias" if bias else "None",
    )
    shape = ["batch_size", "num_frames", "hidden_size"]
    inputs = {
        "hidden_states": tensor(shape, BF, "residual stream"),
        "layer_norm_weight": tensor(["hidden_size"], BF, "input LayerNorm weight"),
        "layer_norm_bias": tensor(["hidden_size"], BF, "input LayerNorm bias"),
        "pointwise1_weight": tensor(
            ["double_hidden", "hidden_size"], BF, "pointwise_conv1 (k=1) as [out, in]"
        ),
        "depthwise_weight": tensor(["hidden_size", "one", "kernel"], BF, "depthwise conv weight"),
    }
    if norm == "batch":
        inputs.update({
            "bn_weight": tensor(["hidden_size"], BF, "BatchNorm weight"),
            "bn_bias": tensor(["hidden_size"], BF, "BatchNorm bias"),
            "bn_running_mean": tensor(["hidden_size"], BF, "BatchNorm running mean"),
            "bn_running_var": tensor(["hidden_size"], BF, "BatchNorm running variance"),
        })  # fmt: skip
    else:
        inputs.update({
            "dw_norm_weight": tensor(["hidden_size"], BF, "depthwise LayerNorm weight"),
            "dw_norm_bias": tensor(["hidden_size"], BF, "depthwise LayerNorm bias"),
        })  # fmt: skip
    inputs["pointwise2_weight"] = tensor(
        ["hidden_size", "hidden_size"], BF, "pointwise_conv2 (k=1) as [out, in]"
    )
    if bias:
        inputs.update({
            "pointwise1_bias": tensor(["double_hidden"], BF, "pointwise_conv1 bias"),
            "depthwise_bias": tensor(["hidden_size"], BF, "depthwise conv bias"),
            "pointwise2_bias": tensor(["hidden_size"], BF, "pointwise_conv2 bias"),
        })  # fmt: skip
    norm_text = (
        f"BatchNorm1d in inference mode (running statistics, eps {eps:g}, fp32)"
        if norm == "batch"
        else f"LayerNorm over channels (eps {eps:g}, fp32)"
    )
    pad_text = (
        f"causal: {k - 1} zero frames on the left" if causal else f"padding {(k - 1) // 2} on both sides"
    )
    return make_problem(
        name=problem_name(model, "conformer_conv"),
        model=model,
        op_type="conformer_conv",
        tags=["audio", "conformer", "depthwise-conv", "conv1d", "glu", "silu", "layernorm", "fusion", "bf16"],
        description=f"""
            Convolution module of every {model.display_name} Conformer layer, with its residual:
            out = x + pw2(silu(norm(dw(glu(pw1(LN(x))))))). x is [batch_size, num_frames, {d}]
            bf16 ({frame_rate}); LN over {d} channels (eps {eps:g}, fp32 statistics, affine, bf16);
            pw1 = pointwise Conv1d({d} -> {2 * d}){" + bias" if bias else ", no bias"}; GLU over
            channels (first half * sigmoid(second half)); dw = depthwise Conv1d over time, kernel
            {k}, {pad_text}{", + bias" if bias else ", no bias"}; then {norm_text}; SiLU, rounded to
            bf16; pw2 = pointwise Conv1d({d} -> {d}){" + bias" if bias else ", no bias"}. Pointwise
            weights are given as [out, in] matrices; every conv accumulates in fp32 and rounds to
            bf16. Output like x. Two GEMMs around a per-channel temporal stencil.
        """,
        axes={
            "batch_size": var("utterances in the batch"),
            "num_frames": var("encoder frames"),
            "hidden_size": const(d),
            "double_hidden": expr("2 * hidden_size"),
            "one": const(1),
            "kernel": const(k),
        },
        inputs=inputs,
        outputs={"output": tensor(shape, BF, "x + convolution module")},
        reference=reference,
        workloads=[{"batch_size": b, "num_frames": t} for b, t in sizes],
        tolerance=BF16_BLOCK,
    )


def ast_embeddings(
    model: ModelConfig,
    *,
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128),
) -> Problem:
    """Audio Spectrogram Transformer embeddings: overlapping 16x16 patches + CLS/distillation + positions."""
    d = model.integer("hidden_size")
    p = model.integer("patch_size")
    fs, ts = model.integer("frequency_stride"), model.integer("time_stride")
    length, mels = model.integer("max_length"), model.integer("num_mel_bins")
    f_dim, t_dim = (mels - p) // fs + 1, (length - p) // ts + 1
    n = f_dim * t_dim
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        STRIDE = ($FS, $TS)


        def run(input_values, proj_weight, proj_bias, cls_token, distillation_token, position_embeddings):
            x = input_values[:, None].transpose(2, 3)  # [batch, 1, mel bins, frames]
            x = F.conv2d(x, proj_weight, proj_bias, stride=STRIDE).flatten(2).transpose(1, 2)
            b = x.shape[0]
            x = torch.cat([cls_token.expand(b, 1, -1), distillation_token.expand(b, 1, -1), x], dim=1)
            return x + position_embeddings
        """,
        FS=fs,
        TS=ts,
    )
    return make_problem(
        name=problem_name(model, "patch_embed"),
        model=model,
        op_type="patch_embed",
        tags=["audio", "patch-embed", "conv2d", "overlapping-patches", "implicit-gemm", "bf16"],
        description=f"""
            Embeddings of {model.display_name} (ASTEmbeddings): the log-mel input [batch_size,
            {length} frames, {mels} mel bins] bf16 is viewed as a 1-channel [{mels}, {length}]
            image (frequency rows, time columns) and cut into OVERLAPPING {p}x{p} patches with stride
            {fs} along frequency and {ts} along time ({f_dim} x {t_dim} = {n} patches, frequency-major),
            projected by Conv2d(1 -> {d}, kernel {p}, stride ({fs}, {ts})) + bias (proj_weight [{d},
            1, {p}, {p}]); prepend cls_token and distillation_token ([1, 1, {d}] each) and add
            position_embeddings [{n + 2}, {d}]. bf16 with fp32 accumulation. Output [batch_size,
            {n + 2}, {d}] bf16. Patches overlap 6 of 16 rows and columns: an implicit GEMM with K =
            {p * p} whose A operand re-reads each input value up to 4 times.
        """,
        axes={
            "batch_size": var("clips in the batch"),
            "max_length": const(length),
            "num_mel_bins": const(mels),
            "one": const(1),
            "patch": const(p),
            "num_tokens": const(n + 2, "patches + CLS + distillation"),
            "hidden_size": const(d),
        },
        inputs={
            "input_values": tensor(["batch_size", "max_length", "num_mel_bins"], BF, "log-mel features"),
            "proj_weight": tensor(["hidden_size", "one", "patch", "patch"], BF, "patch conv weight"),
            "proj_bias": tensor(["hidden_size"], BF, "patch conv bias"),
            "cls_token": tensor(["one", "one", "hidden_size"], BF, "CLS embedding"),
            "distillation_token": tensor(["one", "one", "hidden_size"], BF, "distillation embedding"),
            "position_embeddings": tensor(["num_tokens", "hidden_size"], BF, "learned positions"),
        },
        outputs={"embeddings": tensor(["batch_size", "num_tokens", "hidden_size"], BF, "token embeddings")},
        reference=reference,
        workloads=[{"batch_size": b} for b in batch_sizes],
        tolerance=BF16,
    )


MUSICGEN_SIZES: tuple[tuple[int, int], ...] = (
    (1, 1),
    (2, 1),
    (8, 1),
    (2, 50),
    (1, 250),
    (2, 250),
    (2, 500),
    (2, 1500),
    (8, 1500),
)
"""(batch_size, frames at 50 Hz): one decode step, a CFG pair, a serving batch, then prompts of 1 to
30 s (batch 2 = classifier-free guidance)."""


def musicgen_embed(
    model: ModelConfig,
    *,
    sizes: Sequence[tuple[int, int]] = MUSICGEN_SIZES,
    max_period: int = 10000,  # MusicgenSinusoidalPositionalEmbedding
) -> Problem:
    """MusicGen decoder input: sum of the per-codebook embeddings plus sinusoidal positions."""
    d = model.integer("decoder.hidden_size")
    books = model.integer("decoder.num_codebooks")
    vocab = model.integer("decoder.vocab_size") + 1  # nn.Embedding(vocab_size + 1, ...): the pad/BOS id 2048
    reference = reference_source(
        """
        import math

        import torch
        import torch.nn.functional as F

        MAX_PERIOD = $MAX_PERIOD


        def run(input_ids, embed_tokens_weight):
            batch, books, seq = input_ids.shape
            d = embed_tokens_weight.shape[-1]
            x = sum(F.embedding(input_ids[:, k], embed_tokens_weight[k]) for k in range(books))
            half = d // 2
            freqs = torch.exp(torch.arange(half, dtype=torch.float32, device=x.device) * -(math.log(MAX_PERIOD) / (half - 1)))
            angles = torch.arange(seq, dtype=torch.float32, device=x.device)[:, None] * freqs[None, :]
            positions = torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)
            return x + positions.to(x.dtype)
        """,
        MAX_PERIOD=max_period,
    )
    problem = make_problem(
        name=problem_name(model, "codebook_embed"),
        model=model,
        op_type="embedding",
        tags=["audio", "embedding", "gather", "codebooks", "position-embedding", "memory-bound", "bf16"],
        description=f"""
            Input embedding of the {model.display_name} decoder: the {books} EnCodec codebook
            streams are embedded with their own tables and summed, then sinusoidal positions are
            added. input_ids [batch_size, {books}, seq_len] int64 codes in [0, {vocab}) ({vocab - 1}
            is the pad/BOS code); embed_tokens_weight [{books}, {vocab}, {d}] bf16. x = sum over k
            of embed_tokens_weight[k][input_ids[:, k]] (bf16 adds in codebook order); positions
            p = 0..seq_len-1, freqs_i = exp(-i * ln({max_period}) / ({d // 2} - 1)), embedding =
            [cos(p * freqs), sin(p * freqs)] in fp32, rounded to bf16 and added. Output [batch_size,
            seq_len, {d}] bf16. A gather of {books} rows per token: memory-bound, and at one decode
            step per sample pure latency.
        """,
        axes={
            "batch_size": var("sequences in the batch"),
            "seq_len": var("frames (50 Hz)"),
            "num_codebooks": const(books),
            "vocab_size": const(vocab),
            "hidden_size": const(d),
        },
        inputs={
            "input_ids": tensor(["batch_size", "num_codebooks", "seq_len"], I64, f"codes in [0, {vocab})"),
            "embed_tokens_weight": tensor(
                ["num_codebooks", "vocab_size", "hidden_size"], BF, "per-codebook tables"
            ),
        },
        outputs={"inputs_embeds": tensor(["batch_size", "seq_len", "hidden_size"], BF, "decoder input")},
        reference=reference,
        workloads=[{"batch_size": b, "seq_len": s} for b, s in sizes],
        tolerance=BF16,
    )
    # A gather reads only the rows its codes name, not the whole tables: the ids, the output and, per
    # codebook, the distinct rows among batch_size * seq_len uniform codes (V * (1 - (1 - 1/V)^n) expected).
    # Counting the tables put T_SOL above the H100's compiled baseline at one sequence (2.3 us against 5.0).
    problem.definition.bytes = (
        "batch_size * seq_len * (num_codebooks * 8 + 2 * hidden_size)"
        " + num_codebooks * vocab_size * (1 - (1 - 1 / vocab_size) ** (batch_size * seq_len)) * 2 * hidden_size"
    )
    return problem
