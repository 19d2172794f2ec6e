"""State-space-model templates: Mamba-2's chunked SSD scan (prefill) and single-step state update (decode),
Mamba-1's selective state update (decode), and the short causal depthwise convolution both use.

The SSD reference is the chunked formulation of the Mamba-2 paper's ``ssd_minimal_discrete``: a quadratic
(attention-like) pass inside each chunk and a linear recurrence between chunks, all in fp32 from bf16
inputs. Its matrix products are charged at the bf16 tensor-core rate, as the Triton/CUDA kernels run them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..load import Problem
from .common import BF16, const, make_problem, reference_source, tensor, var
from .llm_shapes import BF, F32, limit_bytes, with_counting
from .models import ModelConfig

SSD_SIZES: tuple[tuple[int, int], ...] = (
    (1, 64), (1, 128), (1, 256), (1, 512), (2, 512), (1, 1024), (4, 512), (1, 2048), (2, 2048), (1, 4096),
    (4, 2048), (1, 8192),
)  # fmt: skip

SSD_REFERENCE_CHUNK = 64
"""Chunk length of the reference's evaluation; the result does not depend on it (the model's kernels use
its chunk_size), and short chunks keep the quadratic intra-chunk part cheap on the CPU."""


def mamba2_chunk_scan(model: ModelConfig, *, sizes: Sequence[tuple[int, int]] = SSD_SIZES) -> Problem:
    """Mamba-2 SSD over a prompt: y_t = C_t h_t + D x_t with h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t^T."""
    heads, dim, groups = model.integer("num_heads"), model.integer("head_dim"), model.integer("n_groups")
    state, chunk = model.integer("state_size"), model.integer("chunk_size")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        CHUNK = $CHUNK
        HEADS_PER_GROUP = $HPG


        def segsum(x):
            # [..., T] -> [..., T, T]: entry (i, j) = sum of x[j+1..i] for j <= i, -inf above the diagonal.
            t = x.shape[-1]
            x = x[..., None].expand(*x.shape, t)
            below = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=-1)
            sums = torch.cumsum(x.masked_fill(~below, 0), dim=-2)
            keep = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=0)
            return sums.masked_fill(~keep, float("-inf"))


        def run(x, dt, dt_bias, A_log, B, C, D):
            batch, seq_len, heads, dim = x.shape
            acc = torch.promote_types(x.dtype, torch.float32)  # fp32 math (fp64 when checked against fp64)
            chunks = seq_len // CHUNK
            dt = F.softplus(dt.to(acc) + dt_bias)  # [b, l, h]
            a = -torch.exp(A_log) * dt  # per-step log decay
            xs = (x.to(acc) * dt[..., None]).reshape(batch, chunks, CHUNK, heads, dim)
            per_head = (batch, chunks, CHUNK, heads, -1)
            bh = B.to(acc).repeat_interleave(HEADS_PER_GROUP, dim=2).reshape(per_head)
            ch = C.to(acc).repeat_interleave(HEADS_PER_GROUP, dim=2).reshape(per_head)
            a = a.reshape(batch, chunks, CHUNK, heads).permute(0, 3, 1, 2)  # [b, h, c, l]
            a_cumsum = torch.cumsum(a, dim=-1)
            # 1. within each chunk: a masked, decayed attention-like product
            decay = torch.exp(segsum(a))  # [b, h, c, l, s]
            scores = torch.einsum("bclhn,bcshn->bhcls", ch, bh) * decay
            y_diag = torch.einsum("bhcls,bcshp->bclhp", scores, xs)
            # 2. each chunk's final state, from its own inputs
            decay_states = torch.exp(a_cumsum[..., -1:] - a_cumsum)  # [b, h, c, l]
            states = torch.einsum("bclhn,bhcl,bclhp->bchpn", bh, decay_states, xs)
            # 3. the recurrence between chunks (zero initial state)
            states = torch.cat((torch.zeros_like(states[:, :1]), states), dim=1)
            decay_chunk = torch.exp(segsum(F.pad(a_cumsum[..., -1], (1, 0))))  # [b, h, c+1, c+1]
            new_states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
            states, final_state = new_states[:, :-1], new_states[:, -1]
            # 4. the contribution of the state entering each chunk
            y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", ch, states, torch.exp(a_cumsum))
            y = (y_diag + y_off).reshape(batch, seq_len, heads, dim) + x.to(acc) * D[:, None]
            return y.to(x.dtype), final_state
        """,
        CHUNK=SSD_REFERENCE_CHUNK,
        HPG=heads // groups,
    )
    problem = make_problem(
        name=f"{model.key}_mamba2_chunk_scan",
        model=model,
        op_type="ssm_scan",
        tags=["ssm", "mamba2", "ssd", "scan", "prefill", "chunked", "bf16", "tensor-core"],
        description=f"""
            The Mamba-2 state-space scan (SSD) of a prefill in {model.display_name}: {heads} heads of head_dim
            {dim}, state_size {state}, n_groups {groups} (head h uses B and C of group h //
            {heads // groups}), chunk_size {chunk}. Inputs: x [batch_size, seq_len, {heads}, {dim}] bf16; dt
            [batch_size, seq_len, {heads}] bf16 (raw); dt_bias, A_log, D [{heads}] fp32; B, C [batch_size,
            seq_len, {groups}, {state}] bf16. With dt' = softplus(dt + dt_bias) and A = -exp(A_log), per head:
            h_t = exp(dt'_t A) h_{{t-1}} + dt'_t x_t B_t^T (h is [{dim}, {state}], zero at t = 0), y_t = h_t
            C_t + D x_t. Outputs y [batch_size, seq_len, {heads}, {dim}] bf16 and final_state [batch_size,
            {heads}, {dim}, {state}] fp32 (the state after the last token). The reference evaluates the
            recurrence in chunks of {SSD_REFERENCE_CHUNK} (quadratic form inside a chunk, recurrence across
            chunks) in fp32; any exact method passes, e.g. the model's chunk_size {chunk} where seq_len allows
            it (a step-by-step scan is correct but slow); seq_len is a multiple of {SSD_REFERENCE_CHUNK}.
        """,
        axes={
            "batch_size": var("prompts in the batch"),
            "seq_len": var(f"prompt length, a multiple of {SSD_REFERENCE_CHUNK}"),
            "num_heads": const(heads),
            "head_dim": const(dim),
            "n_groups": const(groups),
            "state_size": const(state),
        },
        constraints=[f"seq_len % {SSD_REFERENCE_CHUNK} == 0"],
        inputs={
            "x": tensor(["batch_size", "seq_len", "num_heads", "head_dim"], BF, "input of the scan"),
            "dt": tensor(["batch_size", "seq_len", "num_heads"], BF, "raw time step (before softplus)"),
            "dt_bias": tensor(["num_heads"], F32, "time-step bias"),
            "A_log": tensor(["num_heads"], F32, "log of -A"),
            "B": tensor(
                ["batch_size", "seq_len", "n_groups", "state_size"], BF, "input projection of the state"
            ),
            "C": tensor(
                ["batch_size", "seq_len", "n_groups", "state_size"], BF, "output projection of the state"
            ),
            "D": tensor(["num_heads"], F32, "skip connection"),
        },
        outputs={
            "y": tensor(["batch_size", "seq_len", "num_heads", "head_dim"], BF, "scan output"),
            "final_state": tensor(
                ["batch_size", "num_heads", "head_dim", "state_size"], F32, "state after the last token"
            ),
        },
        reference=reference,
        workloads=[{"batch_size": b, "seq_len": s} for b, s in sizes],
        tolerance=BF16,
    )
    return with_counting(problem, tensor_core_dtype=BF)


DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 3, 100)


def mamba2_state_update(model: ModelConfig, *, batches: Sequence[int] = DECODE_BATCHES) -> Problem:
    """One decode step of Mamba-2: update each head's [head_dim, state] state and read it out."""
    heads, dim, groups = model.integer("num_heads"), model.integer("head_dim"), model.integer("n_groups")
    state = model.integer("state_size")
    batches = [b for (b,) in limit_bytes([(b,) for b in batches], 2 * heads * dim * state * 4, 600 * 2**20)]
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F

        HEADS_PER_GROUP = $HPG


        def run(ssm_state, x, dt, dt_bias, A_log, B, C, D):
            dt = F.softplus(dt.to(torch.float32) + dt_bias)  # [b, h]
            decay = torch.exp(-torch.exp(A_log) * dt)[..., None, None]
            bh = B.to(torch.float32).repeat_interleave(HEADS_PER_GROUP, dim=1)  # [b, h, n]
            ch = C.to(torch.float32).repeat_interleave(HEADS_PER_GROUP, dim=1)
            xf = x.to(torch.float32)
            new_state = ssm_state * decay + (dt[..., None] * xf)[..., None] * bh[:, :, None, :]
            y = (new_state * ch[:, :, None, :]).sum(dim=-1) + D[:, None] * xf
            return y.to(x.dtype), new_state
        """,
        HPG=heads // groups,
    )
    return make_problem(
        name=f"{model.key}_mamba2_state_update",
        model=model,
        op_type="ssm_state_update",
        tags=["ssm", "mamba2", "decode", "state-update", "memory-bound", "fp32-state"],
        description=f"""
            One decode step of the Mamba-2 layers of {model.display_name} (mamba_ssm's selective_state_update
            with heads): {heads} heads of head_dim {dim}, state_size {state}, n_groups {groups} (head h uses
            group h // {heads // groups}). ssm_state [batch_size, {heads}, {dim}, {state}] fp32; x
            [batch_size, {heads}, {dim}] bf16; dt [batch_size, {heads}] bf16 (raw); dt_bias, A_log, D
            [{heads}] fp32; B, C [batch_size, {groups}, {state}] bf16. In fp32: dt' = softplus(dt + dt_bias);
            new_state = ssm_state * exp(-exp(A_log) dt') + dt' x B^T; y = new_state C + D x. Outputs y
            [batch_size, {heads}, {dim}] bf16 and new_state (same shape as ssm_state, fp32; in place in a
            server). Memory-bound: the {heads * dim * state * 4 / 2**20:.0f} MiB state of each sequence is
            read and written once.
        """,
        axes={
            "batch_size": var("sequences decoding one token each"),
            "num_heads": const(heads),
            "head_dim": const(dim),
            "n_groups": const(groups),
            "state_size": const(state),
        },
        inputs={
            "ssm_state": tensor(
                ["batch_size", "num_heads", "head_dim", "state_size"], F32, "state before the step"
            ),
            "x": tensor(["batch_size", "num_heads", "head_dim"], BF, "input of the step"),
            "dt": tensor(["batch_size", "num_heads"], BF, "raw time step"),
            "dt_bias": tensor(["num_heads"], F32, "time-step bias"),
            "A_log": tensor(["num_heads"], F32, "log of -A"),
            "B": tensor(["batch_size", "n_groups", "state_size"], BF, "input projection of the state"),
            "C": tensor(["batch_size", "n_groups", "state_size"], BF, "output projection of the state"),
            "D": tensor(["num_heads"], F32, "skip connection"),
        },
        outputs={
            "y": tensor(["batch_size", "num_heads", "head_dim"], BF, "output of the step"),
            "new_state": tensor(
                ["batch_size", "num_heads", "head_dim", "state_size"], F32, "state after the step"
            ),
        },
        reference=reference,
        workloads=[{"batch_size": b} for b in batches],
        tolerance=BF16,
    )


def mamba1_state_update(model: ModelConfig, *, batches: Sequence[int] = DECODE_BATCHES) -> Problem:
    """One decode step of Mamba-1's selective SSM with the SiLU output gate."""
    if "mamba_expand" in model.config:  # Jamba spells the Mamba sizes with a mamba_ prefix
        inner = model.integer("mamba_expand") * model.integer("hidden_size")
        state = model.integer("mamba_d_state")
    else:
        inner, state = model.integer("intermediate_size"), model.integer("state_size")
    reference = reference_source(
        """
        import torch
        import torch.nn.functional as F


        def run(ssm_state, x, dt, dt_bias, A_log, B, C, D, z):
            dt = F.softplus(dt.to(torch.float32) + dt_bias)  # [b, d]
            decay = torch.exp(-torch.exp(A_log)[None] * dt[..., None])  # [b, d, n]
            xf = x.to(torch.float32)
            new_state = ssm_state * decay + (dt * xf)[..., None] * B.to(torch.float32)[:, None, :]
            y = (new_state * C.to(torch.float32)[:, None, :]).sum(dim=-1) + D * xf
            y = y * F.silu(z.to(torch.float32))
            return y.to(x.dtype), new_state
        """
    )
    return make_problem(
        name=f"{model.key}_mamba_state_update",
        model=model,
        op_type="ssm_state_update",
        tags=["ssm", "mamba", "decode", "state-update", "memory-bound", "fp32-state"],
        description=f"""
            One decode step of the Mamba (selective SSM) layers of {model.display_name}: {inner} inner
            channels, each with its own {state}-entry state and decay rates (mamba_ssm's
            selective_state_update). ssm_state [batch_size, {inner}, {state}] fp32; x, dt, z [batch_size,
            {inner}] bf16 (dt raw, z the gate branch); dt_bias [{inner}] fp32; A_log [{inner}, {state}] fp32;
            B, C [batch_size, {state}] bf16; D [{inner}] fp32. In fp32: dt' = softplus(dt + dt_bias);
            new_state = ssm_state * exp(-exp(A_log) dt') + (dt' x) B; y = (new_state . C + D x) * silu(z).
            Outputs y [batch_size, {inner}] bf16 and new_state fp32 (in place in a server). Memory-bound on
            the state.
        """,
        axes={
            "batch_size": var("sequences decoding one token each"),
            "inner": const(inner),
            "state_size": const(state),
        },
        inputs={
            "ssm_state": tensor(["batch_size", "inner", "state_size"], F32, "state before the step"),
            "x": tensor(["batch_size", "inner"], BF, "input of the step"),
            "dt": tensor(["batch_size", "inner"], BF, "raw time step"),
            "dt_bias": tensor(["inner"], F32, "time-step bias"),
            "A_log": tensor(["inner", "state_size"], F32, "log of -A"),
            "B": tensor(["batch_size", "state_size"], BF, "input projection of the state"),
            "C": tensor(["batch_size", "state_size"], BF, "output projection of the state"),
            "D": tensor(["inner"], F32, "skip connection"),
            "z": tensor(["batch_size", "inner"], BF, "gate branch"),
        },
        outputs={
            "y": tensor(["batch_size", "inner"], BF, "gated output of the step"),
            "new_state": tensor(["batch_size", "inner", "state_size"], F32, "state after the step"),
        },
        reference=reference,
        workloads=[{"batch_size": b} for b in batches],
        tolerance=BF16,
    )


CONV_SIZES: tuple[tuple[int, int], ...] = (
    (1, 64), (1, 128), (1, 256), (1, 512), (2, 512), (1, 1024), (4, 512), (1, 2048), (2, 2048), (1, 4096),
    (4, 2048), (1, 8192),
)  # fmt: skip


def causal_conv1d(model: ModelConfig, *, sizes: Sequence[tuple[int, int]] = CONV_SIZES) -> Problem:
    """The short causal depthwise convolution + SiLU in front of the SSM (causal_conv1d_fn)."""
    width = model.integer("conv_kernel")
    if "n_groups" in model.config:  # Mamba-2 convolves x, B and C together
        channels = model.integer("expand") * model.integer("hidden_size") + 2 * model.integer(
            "n_groups"
        ) * model.integer("state_size")
        what = "x, B and C of the Mamba-2 mixer, concatenated"
    else:
        channels = model.integer("intermediate_size")
        what = "the inner x branch of the Mamba mixer"
    reference = reference_source(
        """
        import torch

        WIDTH = $WIDTH


        def run(x, conv_weight, conv_bias):
            seq_len = x.shape[-1]
            xf = torch.nn.functional.pad(x.to(torch.float32), (WIDTH - 1, 0))
            w = conv_weight.to(torch.float32)
            out = conv_bias.to(torch.float32)[None, :, None].expand(x.shape[0], -1, seq_len)
            for tap in range(WIDTH):  # out[t] = bias + sum_k w[k] * x[t - (WIDTH - 1) + k]
                out = out + w[None, :, tap, None] * xf[..., tap : tap + seq_len]
            return torch.nn.functional.silu(out).to(x.dtype)
        """,
        WIDTH=width,
    )
    return make_problem(
        name=f"{model.key}_causal_conv1d",
        model=model,
        op_type="conv1d",
        tags=["ssm", "conv1d", "depthwise", "causal", "silu", "prefill", "memory-bound", "bf16"],
        description=f"""
            The causal depthwise convolution in front of the state-space scan of {model.display_name}, over
            {what} ({channels} channels, conv_kernel {width}), fused with its SiLU, as causal_conv1d_fn does.
            x is [batch_size, {channels}, seq_len] bf16 (channels-first); conv_weight [{channels}, {width}]
            and conv_bias [{channels}] bf16. out[b, c, t] = silu(bias[c] + sum_k w[c, k] x[b, c, t -
            {width - 1} + k]) with zeros before t = 0, in fp32, rounded to bf16; output shape of x.
            Elementwise work on a sliding window: memory-bound, read x once.
        """,
        axes={
            "batch_size": var("prompts in the batch"),
            "seq_len": var("prompt length"),
            "channels": const(channels),
            "width": const(width),
        },
        inputs={
            "x": tensor(["batch_size", "channels", "seq_len"], BF, "input, channels-first"),
            "conv_weight": tensor(["channels", "width"], BF, "depthwise filter per channel"),
            "conv_bias": tensor(["channels"], BF, "bias per channel"),
        },
        outputs={"output": tensor(["batch_size", "channels", "seq_len"], BF, "silu(conv(x))")},
        reference=reference,
        workloads=[{"batch_size": b, "seq_len": s} for b, s in sizes],
        tolerance=BF16,
    )
