"""Input generation: every dtype and descriptor, seeding, the name heuristics and malformed workloads."""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from solforge.problems import Definition, DType, FormatError, Workload
from solforge.problems.inputs import fp4_e2m1_codes, generate_inputs, name_tokens
from solforge.problems.reference import load_reference_module

E2M1_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def make_definition(
    inputs: dict[str, dict[str, Any]],
    axes: dict[str, Any] | None = None,
    *,
    name: str = "probe",
    op_type: str = "probe",
    outputs: dict[str, dict[str, Any]] | None = None,
    reference: str = "def run(*args):\n    return args[0]\n",
    custom: str | None = None,
) -> Definition:
    return Definition.model_validate(
        {
            "name": name,
            "op_type": op_type,
            "axes": axes or {"M": {"type": "var"}, "N": {"type": "const", "value": 64}},
            "inputs": inputs,
            "outputs": outputs or {"out": {"shape": [], "dtype": "float32"}},
            "reference": reference,
            "custom_inputs_entrypoint": custom,
        }
    )


def gen(definition: Definition, axes: dict[str, int] | None = None, seed: int = 0, **kw: Any) -> dict[str, Any]:
    workload = Workload.model_validate({"uuid": "w", "axes": axes if axes is not None else {"M": 32}, **kw})
    return generate_inputs(definition, workload, device="cpu", seed_or_generator=seed)


def one(name: str, shape: list[str] | None, dtype: str, description: str | None = None, **kw: Any) -> Any:
    d = make_definition({name: {"shape": shape, "dtype": dtype, "description": description}}, **kw)
    return gen(d)[name]


# -- dtypes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_plain_floats_are_standard_normal(dtype: str) -> None:
    x = one("x", ["M", "N"], dtype)
    assert x.dtype == getattr(torch, dtype) and x.shape == (32, 64)
    f = x.float()
    assert abs(f.mean().item()) < 0.15 and 0.85 < f.std().item() < 1.15


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_is_clamped_randn(dtype: str) -> None:
    x = one("x", ["M", "N"], dtype)
    assert x.dtype == getattr(torch, dtype)
    f = x.float()
    assert f.abs().max().item() <= 2.0
    assert (f.abs() == 2.0).any()  # the clamp was reached: randn tails exist in 2048 draws
    assert f.std().item() > 0.5


def test_fp4_packed_counts_bytes_and_holds_two_codes_per_byte() -> None:
    x = one("x", ["M", "N"], "float4_e2m1fn_x2")
    assert x.dtype == DType.float4_e2m1fn_x2.to_torch()
    assert x.shape == (32, 64)  # bytes: 128 fp4 values per row
    raw = x.view(torch.uint8)
    low, high = raw & 0xF, raw >> 4
    assert len(torch.unique(low)) > 8 and len(torch.unique(high)) > 8
    values = E2M1_VALUES[(low & 7).long()] * torch.where(low >= 8, -1.0, 1.0)
    assert 0.6 < values.std().item() < 1.4  # decoded values look like rounded randn


def test_fp4_unpacked_is_one_code_per_byte() -> None:
    x = one("x", ["M", "N"], "float4_e2m1")
    assert x.dtype == torch.uint8 and x.shape == (32, 64)
    assert int(x.max()) <= 15 and len(torch.unique(x)) > 8


def test_fp4_codes_round_to_nearest() -> None:
    codes = fp4_e2m1_codes(torch.tensor([0.1, 0.6, -1.1, 2.2, 2.9, 5.5, 100.0, -0.0, -7.0]))
    assert codes.tolist() == [0, 1, 8 | 2, 4, 5, 7, 7, 0, 8 | 7]


def test_bool_has_both_values() -> None:
    x = one("flags", ["M", "N"], "bool")
    assert x.dtype == torch.bool and 0.3 < x.float().mean().item() < 0.7


@pytest.mark.parametrize(
    ("dtype", "low", "high"),
    [("int8", -128, 127), ("uint8", 0, 255), ("int16", -1024, 1023), ("int32", -1024, 1023), ("int64", -1024, 1023)],
)
def test_ints_span_their_range(dtype: str, low: int, high: int) -> None:
    x = one("values", ["M", "N"], dtype)
    assert x.dtype == getattr(torch, dtype)
    assert int(x.min()) >= low and int(x.max()) <= high
    assert int(x.max()) - int(x.min()) > (high - low) * 0.9


# -- seeding --------------------------------------------------------------------------------------


def test_same_seed_same_values_other_seed_other_values() -> None:
    d = make_definition({"a": {"shape": ["M", "N"], "dtype": "bfloat16"}, "b": {"shape": ["M"], "dtype": "int32"}})
    first, again, other = gen(d, seed=7), gen(d, seed=7), gen(d, seed=8)
    for name in ("a", "b"):
        assert torch.equal(first[name], again[name])
        assert not torch.equal(first[name], other[name])
    assert not torch.equal(first["a"][0], first["a"][1])


def test_an_added_input_does_not_change_the_others() -> None:
    small = make_definition({"a": {"shape": ["M", "N"], "dtype": "float32"}})
    large = make_definition({"z": {"shape": ["M"], "dtype": "float32"}, "a": {"shape": ["M", "N"], "dtype": "float32"}})
    assert torch.equal(gen(small)["a"], gen(large)["a"])


def test_a_generator_is_drawn_in_order_and_reproducible() -> None:
    d = make_definition({"a": {"shape": ["M", "N"], "dtype": "float32"}, "b": {"shape": ["M", "N"], "dtype": "float32"}})
    w = Workload(uuid="w", axes={"M": 4})
    one_run = generate_inputs(d, w, device="cpu", seed_or_generator=torch.Generator().manual_seed(3))
    two_run = generate_inputs(d, w, device="cpu", seed_or_generator=torch.Generator().manual_seed(3))
    assert torch.equal(one_run["a"], two_run["a"]) and torch.equal(one_run["b"], two_run["b"])
    assert not torch.equal(one_run["a"], one_run["b"])


def test_global_rng_is_left_alone() -> None:
    d = make_definition({"a": {"shape": ["M", "N"], "dtype": "float32"}})
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    gen(d)
    assert torch.equal(torch.rand(3), expected)


def test_inputs_come_back_in_definition_order_on_the_device() -> None:
    d = make_definition({"z": {"shape": ["M"], "dtype": "float32"}, "a": {"shape": ["N"], "dtype": "float32"}})
    out = gen(d)
    assert list(out) == ["z", "a"] and all(t.device.type == "cpu" for t in out.values())


# -- name heuristics ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["rms_norm_weight", "input_layernorm_weight", "ln_q_weight", "norm1_weight", "gamma"])
def test_norm_weights_are_near_one_but_not_one(name: str) -> None:
    w = one(name, ["N"], "float32")
    assert 0.95 < w.mean().item() < 1.05
    assert 0.05 < w.std().item() < 0.15


@pytest.mark.parametrize("name", ["norm_bias", "ln_f_bias", "beta"])
def test_norm_biases_are_small(name: str) -> None:
    b = one(name, ["N"], "float32")
    assert abs(b.mean().item()) < 0.05 and 0.05 < b.std().item() < 0.15


def test_plain_weight_is_a_norm_gain_only_in_a_norm_definition() -> None:
    assert one("weight", ["N"], "float32", op_type="rmsnorm").min().item() > 0.5
    assert one("weight", ["N"], "float32", op_type="gemv").min().item() < 0


def test_additive_causal_mask_bottom_right_aligned() -> None:
    d = make_definition(
        {"attn_mask": {"shape": ["Q", "K"], "dtype": "bfloat16"}},
        axes={"Q": {"type": "var"}, "K": {"type": "var"}},
    )
    mask = gen(d, axes={"Q": 3, "K": 5})["attn_mask"]
    lowest = torch.finfo(torch.bfloat16).min
    expected = torch.tensor(
        [[0, 0, 0, 1, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], dtype=torch.bool
    )  # query i sees keys <= i + (K - Q)
    assert mask.dtype == torch.bfloat16
    assert torch.equal(mask == lowest, expected)
    assert torch.equal(mask[~expected], torch.zeros(int((~expected).sum()), dtype=torch.bfloat16))


def test_bool_causal_mask_and_padding_mask() -> None:
    d = make_definition(
        {"causal_mask": {"shape": ["Q", "Q"], "dtype": "bool"}, "key_mask": {"shape": ["Q"], "dtype": "bool"}},
        axes={"Q": {"type": "var"}},
    )
    out = gen(d, axes={"Q": 6})
    assert torch.equal(out["causal_mask"], torch.ones(6, 6, dtype=torch.bool).tril())
    keep = out["key_mask"]
    assert keep[0] and int(keep.sum()) >= 1
    first_false = int(keep.sum())
    assert keep[:first_false].all() and not keep[first_false:].any()  # a prefix


def test_probabilities_are_softmax_rows() -> None:
    p = one("router_probs", ["M", "N"], "float32")
    assert (p >= 0).all()
    torch.testing.assert_close(p.sum(-1), torch.ones(32))
    assert p.max().item() > 2 / 64  # not uniform


@pytest.mark.parametrize("name", ["var", "rstd", "running_variance"])
def test_statistics_are_positive(name: str) -> None:
    assert one(name, ["M"], "float32").min().item() > 0


def test_cos_sin_are_one_consistent_rotary_table() -> None:
    d = make_definition(
        {"cos": {"shape": ["T", "D"], "dtype": "float32"}, "sin": {"shape": ["T", "D"], "dtype": "float32"}},
        axes={"T": {"type": "var"}, "D": {"type": "const", "value": 16}},
    )
    out = gen(d, axes={"T": 5})
    cos, sin = out["cos"], out["sin"]
    torch.testing.assert_close(cos**2 + sin**2, torch.ones(5, 16))  # same positions in both tables
    torch.testing.assert_close(cos[:, :8], cos[:, 8:])  # rotate-half layout
    # Consecutive positions: the lowest-frequency channel 0 advances by exactly one radian per row.
    angles = torch.atan2(sin[:, 0].double(), cos[:, 0].double())
    steps = torch.remainder(angles[1:] - angles[:-1], 2 * math.pi)
    torch.testing.assert_close(steps, torch.ones(4, dtype=torch.float64), atol=1e-5, rtol=0)
    assert not torch.equal(gen(d, axes={"T": 5}, seed=1)["cos"], cos)


def test_weight_matrices_are_scaled_by_fan_in() -> None:
    d = make_definition(
        {
            "q_proj_weight": {"shape": ["O", "I"], "dtype": "float32"},
            "w1": {"shape": ["O", "I"], "dtype": "float32"},
            "conv_weight": {"shape": ["O", "C", "K"], "dtype": "float32"},
        },
        axes={"O": {"type": "const", "value": 256}, "I": {"type": "const", "value": 1024},
              "C": {"type": "const", "value": 64}, "K": {"type": "const", "value": 4}},
    )
    out = gen(d, axes={})
    for name in ("q_proj_weight", "w1"):
        assert abs(out[name].std().item() * math.sqrt(1024) - 1) < 0.05, name
    assert abs(out["conv_weight"].std().item() * math.sqrt(64 * 4) - 1) < 0.05


def test_quantisation_scales_are_positive_only_in_quantised_problems() -> None:
    quantised = make_definition(
        {"x": {"shape": ["M", "N"], "dtype": "float8_e4m3fn"}, "x_scale": {"shape": ["M"], "dtype": "float32"}}
    )
    assert gen(quantised)["x_scale"].min().item() > 0
    plain = make_definition({"x": {"shape": ["M", "N"], "dtype": "bfloat16"}, "scale": {"shape": ["M"], "dtype": "bfloat16"}})
    assert gen(plain)["scale"].min().item() < 0  # AdaLN-style scale stays randn


def test_expert_ids_are_valid_and_distinct_per_row() -> None:
    d = make_definition(
        {"topk_ids": {"shape": ["T", "K"], "dtype": "int32"}, "expert_indices": {"shape": ["T"], "dtype": "int64"}},
        axes={"T": {"type": "var"}, "K": {"type": "const", "value": 8}, "num_experts": {"type": "const", "value": 16}},
    )
    out = gen(d, axes={"T": 200})
    ids = out["topk_ids"]
    assert ids.dtype == torch.int32 and int(ids.min()) >= 0 and int(ids.max()) <= 15
    assert all(len(set(row)) == 8 for row in ids.tolist())
    assert int(out["expert_indices"].max()) <= 15 and len(torch.unique(out["expert_indices"])) == 16


def test_token_ids_use_the_vocab_axis_and_description_ranges_win() -> None:
    d = make_definition(
        {
            "input_ids": {"shape": ["T"], "dtype": "int64"},
            "slot": {"shape": ["T"], "dtype": "int32", "description": "page slots in [0, num_pages)"},
            "odd": {"shape": ["T"], "dtype": "int32", "description": "values in [5, 9]"},
        },
        axes={"T": {"type": "var"}, "vocab_size": {"type": "const", "value": 50}, "num_pages": {"type": "const", "value": 3}},
    )
    out = gen(d, axes={"T": 500})
    assert int(out["input_ids"].min()) >= 0 and int(out["input_ids"].max()) == 49
    assert set(out["slot"].tolist()) == {0, 1, 2}
    assert set(out["odd"].tolist()) == {5, 6, 7, 8, 9}


def test_lengths_and_offsets_stay_in_bounds() -> None:
    d = make_definition(
        {
            "kv_lens": {"shape": ["B"], "dtype": "int32"},
            "cu_seqlens": {"shape": ["B1"], "dtype": "int32"},
        },
        axes={"B": {"type": "var"}, "B1": {"type": "expr", "expression": "B + 1"}, "max_kv_len": {"type": "var"},
              "total_tokens": {"type": "var"}},
    )
    out = gen(d, axes={"B": 300, "max_kv_len": 40, "total_tokens": 1000})
    lens = out["kv_lens"]
    assert int(lens.min()) >= 1 and int(lens.max()) <= 40 and int(lens.max()) > 30
    offsets = out["cu_seqlens"].tolist()
    assert offsets[0] == 0 and offsets[-1] == 1000 and offsets == sorted(offsets)


def test_python_scalar_defaults() -> None:
    d = make_definition(
        {
            "eps": {"shape": None, "dtype": "float32"},
            "sm_scale": {"shape": None, "dtype": "float32"},
            "top_k": {"shape": None, "dtype": "int32"},
            "causal": {"shape": None, "dtype": "bool"},
            "alpha": {"shape": None, "dtype": "float32"},
        },
        axes={"head_dim": {"type": "const", "value": 64}, "top_k": {"type": "const", "value": 6}},
    )
    out = gen(d, axes={})
    assert out == {"eps": 1e-6, "sm_scale": 0.125, "top_k": 6, "causal": False, "alpha": 1.0}
    assert isinstance(out["top_k"], int) and isinstance(out["eps"], float)


def test_name_tokens() -> None:
    assert name_tokens("Q_proj.Weight2") == ["q", "proj", "weight", "2"]


# -- scalar descriptors ---------------------------------------------------------------------------


def test_scalar_descriptors_give_python_values_and_0d_tensors() -> None:
    d = make_definition(
        {
            "eps": {"shape": None, "dtype": "float32"},
            "k": {"shape": None, "dtype": "int64"},
            "t": {"shape": [], "dtype": "bfloat16"},
        }
    )
    out = gen(d, inputs={"eps": {"type": "scalar", "value": 1e-5}, "k": {"type": "scalar", "value": 4},
                         "t": {"type": "scalar", "value": 2.5}})
    assert out["eps"] == 1e-5 and isinstance(out["eps"], float)
    assert out["k"] == 4 and isinstance(out["k"], int)
    assert out["t"].shape == () and out["t"].dtype == torch.bfloat16 and out["t"].item() == 2.5


def test_scalar_descriptor_for_a_tensor_names_the_input() -> None:
    d = make_definition({"weights": {"shape": ["M"], "dtype": "float32"}})
    with pytest.raises(FormatError, match=r"'weights'.*scalar descriptor"):
        gen(d, inputs={"weights": {"type": "scalar", "value": 1.0}})


def test_fractional_scalar_for_an_int_names_the_input() -> None:
    d = make_definition({"k": {"shape": None, "dtype": "int32"}})
    with pytest.raises(FormatError, match=r"'k'.*not an integer"):
        gen(d, inputs={"k": {"type": "scalar", "value": 2.5}})


# -- safetensors ----------------------------------------------------------------------------------


@pytest.fixture
def tensors_file(tmp_path: Path) -> Path:
    from safetensors.torch import save_file

    path = tmp_path / "blobs" / "real.safetensors"
    path.parent.mkdir()
    save_file(
        {"hidden": torch.arange(32 * 64, dtype=torch.float32).reshape(32, 64).to(torch.bfloat16), "ids": torch.arange(32)},
        str(path),
    )
    return path


def st(path: str, key: str) -> dict[str, Any]:
    return {"inputs": {"x": {"type": "safetensors", "path": path, "tensor_key": key}}}


def test_safetensors_relative_to_the_problem_folder_and_absolute(tensors_file: Path) -> None:
    d = make_definition({"x": {"shape": ["M", "N"], "dtype": "bfloat16"}})
    w = Workload.model_validate({"uuid": "w", "axes": {"M": 32}, **st("blobs/real.safetensors", "hidden")})
    rel = generate_inputs(d, w, device="cpu", seed_or_generator=0, problem_folder=tensors_file.parent.parent)
    absolute = gen(d, **st(str(tensors_file), "hidden"))
    expected = torch.arange(32 * 64, dtype=torch.float32).reshape(32, 64).to(torch.bfloat16)
    assert torch.equal(rel["x"], expected) and torch.equal(absolute["x"], expected)


@pytest.mark.parametrize(
    ("axes", "dtype", "key", "path", "message"),
    [
        ({"M": 32}, "bfloat16", "missing_key", None, "has no tensor 'missing_key'"),
        ({"M": 16}, "bfloat16", "hidden", None, r"shape \[32, 64\], this workload needs \[16, 64\]"),
        ({"M": 32}, "float16", "hidden", None, "dtype torch.bfloat16, the definition says float16"),
        ({"M": 32}, "bfloat16", "hidden", "nowhere.safetensors", "does not exist"),
        ({"M": 32}, "bfloat16", "hidden", "relative.safetensors", "relative but no problem folder"),
    ],
)
def test_safetensors_errors_name_the_input(
    tensors_file: Path, axes: dict[str, int], dtype: str, key: str, path: str | None, message: str
) -> None:
    d = make_definition({"x": {"shape": ["M", "N"], "dtype": dtype}})
    where = str(tensors_file) if path is None else (str(tensors_file.parent / path) if path.startswith("nowhere") else path)
    with pytest.raises(FormatError, match=rf"input 'x'.*{message}"):
        gen(d, axes=axes, **st(where, key))


# -- custom entrypoint ----------------------------------------------------------------------------

CUSTOM_REFERENCE = '''
import torch


def make_inputs(axes_and_scalars, device):
    m = axes_and_scalars["M"]
    logits = torch.randn(m, axes_and_scalars["N"], device=device)
    return {"probs": torch.softmax(logits, dim=-1), "lengths": torch.full((m,), axes_and_scalars["N"], dtype=torch.int32)}


def broken(axes_and_scalars, device):
    return {"probs": torch.zeros(2, 2)}


def partial(axes_and_scalars, device):
    return {"probs": torch.zeros(axes_and_scalars["M"], axes_and_scalars["N"])}


def run(probs, lengths):
    return probs.sum()
'''


def custom_definition(entry: str | None = "make_inputs") -> Definition:
    return make_definition(
        {"probs": {"shape": ["M", "N"], "dtype": "float32"}, "lengths": {"shape": ["M"], "dtype": "int32"}},
        reference=CUSTOM_REFERENCE,
        custom=entry,
    )


CUSTOM = {"inputs": {"probs": {"type": "custom"}, "lengths": {"type": "custom"}}}


def test_custom_entrypoint_is_seeded_and_restores_the_global_rng() -> None:
    d = custom_definition()
    torch.manual_seed(5)
    expected_next = torch.rand(2)
    torch.manual_seed(5)
    first = gen(d, seed=11, **CUSTOM)
    assert torch.equal(torch.rand(2), expected_next)
    again, other = gen(d, seed=11, **CUSTOM), gen(d, seed=12, **CUSTOM)
    assert torch.equal(first["probs"], again["probs"]) and not torch.equal(first["probs"], other["probs"])
    torch.testing.assert_close(first["probs"].sum(-1), torch.ones(32))
    assert first["lengths"].tolist() == [64] * 32


def test_custom_entrypoint_errors_name_the_input() -> None:
    with pytest.raises(FormatError, match=r"input 'probs'.*shape \[2, 2\], this workload needs \[32, 64\]"):
        gen(custom_definition("broken"), inputs={"probs": {"type": "custom"}})
    with pytest.raises(FormatError, match=r"input 'lengths'.*returned no value"):
        gen(custom_definition("partial"), **CUSTOM)
    with pytest.raises(FormatError, match=r"inputs \['lengths', 'probs'\] are custom but.*no custom_inputs_entrypoint"):
        gen(custom_definition(None), **CUSTOM)


# -- malformed workloads --------------------------------------------------------------------------


def test_unknown_input_and_missing_axis_are_format_errors() -> None:
    d = make_definition({"x": {"shape": ["M", "N"], "dtype": "float32"}})
    with pytest.raises(FormatError, match=r"inputs \['y'\] that the definition does not have"):
        gen(d, inputs={"y": {"type": "random"}})
    with pytest.raises(FormatError, match=r"var axes \['M'\]"):
        gen(d, axes={})


def test_range_hint_naming_an_unknown_axis_names_the_input() -> None:
    d = make_definition({"idx": {"shape": ["M"], "dtype": "int32", "description": "in [0, nope)"}})
    with pytest.raises(FormatError, match=r"input 'idx'.*'nope', which is not an axis"):
        gen(d)


# -- reference loading ----------------------------------------------------------------------------


def test_reference_module_is_fresh_and_inspectable() -> None:
    d = make_definition({"x": {"shape": ["M"], "dtype": "float32"}}, reference="import torch\nCOUNT = []\n\ndef run(x):\n    COUNT.append(1)\n    return x * 2\n")
    first, second = load_reference_module(d), load_reference_module(d)
    first.run(torch.ones(1))
    assert first.COUNT == [1] and second.COUNT == []
    assert "return x * 2" in inspect.getsource(first.run)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def run(x):\n    return x +\n", "syntax error"),
        ("raise RuntimeError('boom')\ndef run(x):\n    return x\n", "boom"),
        ("run = 3\ndef run_not(x):\n    pass\n# def run\n", "no callable run"),
    ],
)
def test_broken_references_are_format_errors(source: str, message: str) -> None:
    d = make_definition({"x": {"shape": ["M"], "dtype": "float32"}}, reference=source)
    with pytest.raises(FormatError, match=message):
        load_reference_module(d)
