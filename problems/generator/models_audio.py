"""Audio models added for the media catalogue: Whisper, wav2vec2 and HuBERT, conformer
speech encoders (wav2vec2-conformer, SeamlessM4T v2, Parakeet), CLAP, AST, EnCodec and MusicGen.

Same rules as :mod:`.models`: numbers copied from each repository's published ``config.json``,
nested configs flattened with dots, list entries by index (``.0``, ``.1``). A value that is a class
default rather than written in the file says so in a comment. Constants that live in modelling code
are template options, not model data.
"""

from __future__ import annotations

from ..definition import Category
from .models import ModelConfig

A = Category.audio


def _whisper(
    key: str, name: str, display: str, d_model: int, layers: int, heads: int, ffn: int, mels: int
) -> ModelConfig:
    return ModelConfig(
        key=key,
        hf_id=f"openai/{name}",
        display_name=display,
        category=A,
        config={
            "d_model": d_model,
            "num_mel_bins": mels,
            "encoder_layers": layers,
            "encoder_attention_heads": heads,
            "encoder_ffn_dim": ffn,
            "max_source_positions": 1500,
            "activation_function": "gelu",
        },
    )


WHISPER_TINY = _whisper("whisper_tiny", "whisper-tiny", "Whisper tiny", 384, 4, 6, 1536, 80)
WHISPER_BASE = _whisper("whisper_base", "whisper-base", "Whisper base", 512, 6, 8, 2048, 80)
WHISPER_SMALL = _whisper("whisper_small", "whisper-small", "Whisper small", 768, 12, 12, 3072, 80)
WHISPER_MEDIUM = _whisper("whisper_medium", "whisper-medium", "Whisper medium", 1024, 24, 16, 4096, 80)
WHISPER_LARGE_V3_TURBO = _whisper(
    "whisper_large_v3_turbo", "whisper-large-v3-turbo", "Whisper large-v3-turbo", 1280, 32, 20, 5120, 128
)


def _wav2vec2_like(
    key: str, hf_id: str, display: str, hidden: int, layers: int, heads: int, ffn: int, norm: str
) -> ModelConfig:
    return ModelConfig(
        key=key,
        hf_id=hf_id,
        display_name=display,
        category=A,
        config={
            "hidden_size": hidden,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "intermediate_size": ffn,
            "conv_dim.0": 512,
            "conv_kernel.0": 10,
            "conv_stride.0": 5,
            "conv_kernel.1": 3,
            "conv_stride.1": 2,
            "conv_kernel.5": 2,
            "conv_stride.5": 2,
            "conv_bias": norm == "layer",
            "feat_extract_norm": norm,
            "num_conv_pos_embeddings": 128,
            "num_conv_pos_embedding_groups": 16,
            "layer_norm_eps": 1e-05,
        },
    )


WAV2VEC2_BASE = _wav2vec2_like(
    "wav2vec2_base_960h", "facebook/wav2vec2-base-960h", "wav2vec2-base-960h", 768, 12, 12, 3072, "group"
)
HUBERT_BASE = _wav2vec2_like(
    "hubert_base_ls960",
    "facebook/hubert-base-ls960",
    "HuBERT base (hubert-base-ls960)",
    768,
    12,
    12,
    3072,
    "group",
)
HUBERT_LARGE = _wav2vec2_like(
    "hubert_large_ll60k",
    "facebook/hubert-large-ll60k",
    "HuBERT large (hubert-large-ll60k)",
    1024,
    24,
    16,
    4096,
    "layer",
)

WAV2VEC2_CONFORMER = ModelConfig(
    key="wav2vec2_conformer_large",
    hf_id="facebook/wav2vec2-conformer-rope-large-960h-ft",
    display_name="wav2vec2-conformer-rope-large-960h-ft",
    category=A,
    config={
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "conv_depthwise_kernel_size": 31,
        "position_embeddings_type": "rotary",
        "layer_norm_eps": 1e-05,
    },
)

SEAMLESS_M4T_V2 = ModelConfig(
    key="seamless_m4t_v2_large",
    hf_id="facebook/seamless-m4t-v2-large",
    display_name="SeamlessM4T v2 large speech encoder (seamless-m4t-v2-large)",
    category=A,
    config={
        "hidden_size": 1024,
        "speech_encoder_layers": 24,
        "speech_encoder_attention_heads": 16,
        "speech_encoder_intermediate_size": 4096,
        "conv_depthwise_kernel_size": 31,
        "feature_projection_input_dim": 160,
        "layer_norm_eps": 1e-05,
    },
)

PARAKEET_CTC_1_1B = ModelConfig(
    key="parakeet_ctc_1_1b",
    hf_id="nvidia/parakeet-ctc-1.1b",
    display_name="Parakeet CTC 1.1B (FastConformer, parakeet-ctc-1.1b)",
    category=A,
    config={
        "encoder_config.hidden_size": 1024,
        "encoder_config.num_hidden_layers": 42,
        "encoder_config.num_attention_heads": 8,
        "encoder_config.intermediate_size": 4096,
        "encoder_config.conv_kernel_size": 9,
        "encoder_config.subsampling_factor": 8,
        "encoder_config.num_mel_bins": 80,
    },
)

CLAP_HTSAT = ModelConfig(
    key="clap_htsat_unfused",
    hf_id="laion/clap-htsat-unfused",
    display_name="CLAP HTSAT (clap-htsat-unfused)",
    category=A,
    config={
        "audio_config.num_mel_bins": 64,
        "audio_config.spec_size": 256,
        "audio_config.patch_embeds_hidden_size": 96,
        "audio_config.window_size": 8,
        # preprocessor_config.json (ClapFeatureExtractor)
        "feature_extractor.sampling_rate": 48000,
        "feature_extractor.fft_window_size": 1024,
        "feature_extractor.hop_length": 480,
        "feature_extractor.feature_size": 64,
    },
)

AST_AUDIOSET = ModelConfig(
    key="ast_audioset",
    hf_id="MIT/ast-finetuned-audioset-10-10-0.4593",
    display_name="AST AudioSet (ast-finetuned-audioset-10-10-0.4593)",
    category=A,
    config={
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "patch_size": 16,
        "frequency_stride": 10,
        "time_stride": 10,
        "max_length": 1024,
        "num_mel_bins": 128,
        "layer_norm_eps": 1e-12,
    },
)

AST_SPEECH_COMMANDS = ModelConfig(
    key="ast_speech_commands",
    hf_id="MIT/ast-finetuned-speech-commands-v2",
    display_name="AST Speech Commands (ast-finetuned-speech-commands-v2)",
    category=A,
    config={
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "patch_size": 16,
        "frequency_stride": 10,
        "time_stride": 10,
        "max_length": 128,
        "num_mel_bins": 128,
        "layer_norm_eps": 1e-12,
    },
)

ENCODEC_24KHZ = ModelConfig(
    key="encodec_24khz",
    hf_id="facebook/encodec_24khz",
    display_name="EnCodec 24 kHz (encodec_24khz)",
    category=A,
    config={
        "num_filters": 32,
        "upsampling_ratios.0": 8,
        "hidden_size": 128,
        "residual_kernel_size": 3,
        "compress": 2,
        "sampling_rate": 24000,
        # EncodecConfig defaults, not overridden in config.json
        "use_causal_conv": True,
        "use_conv_shortcut": True,
        "pad_mode": "reflect",
    },
)

MUSICGEN_SMALL = ModelConfig(
    key="musicgen_small",
    hf_id="facebook/musicgen-small",
    display_name="MusicGen small (musicgen-small)",
    category=A,
    config={
        "decoder.hidden_size": 1024,
        "decoder.num_hidden_layers": 24,
        "decoder.num_attention_heads": 16,
        "decoder.ffn_dim": 4096,
        "decoder.num_codebooks": 4,
        "decoder.vocab_size": 2048,
        "decoder.scale_embedding": False,
    },
)

MUSICGEN_LARGE = ModelConfig(
    key="musicgen_large",
    hf_id="facebook/musicgen-large",
    display_name="MusicGen large (musicgen-large)",
    category=A,
    config={
        "decoder.hidden_size": 2048,
        "decoder.num_hidden_layers": 48,
        "decoder.num_attention_heads": 32,
        "decoder.ffn_dim": 8192,
        "decoder.num_codebooks": 4,
        "decoder.vocab_size": 2048,
        "decoder.scale_embedding": False,
    },
)
