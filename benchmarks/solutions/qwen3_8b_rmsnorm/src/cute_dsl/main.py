"""Qwen3-8B RMSNorm (hidden 4096, eps 1e-6) in CuTe DSL: one CTA of 128 threads per token.

A tiled copy with 128 threads x 8 bf16 values (one 16-byte vector each) covers 1024 columns, so
each thread holds 4 vectors of the row (and of the gain) in registers, all loaded before the
first use; every warp access is a contiguous 512 bytes. The sum of squares is reduced in fp32 in
registers, across the warp with butterfly shuffles and across the 4 warps through 16 bytes of
shared memory (one barrier); x * rsqrt(mean + eps) is rounded to bf16 and multiplied by the bf16
gain (Hugging Face's order). One read and one write of the activation.

The kernel is compiled once at import, on fake tensors whose token count is a symbolic integer
and whose hidden size and strides are static, so 16-byte alignment is provable and one binary
serves every batch size.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass import BFloat16, Float32
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor

HIDDEN = 4096
EPS = 1e-6
THREADS = 128
WARPS = THREADS // 32
VEC = 8  # bf16 per 16-byte access


@cute.kernel
def _rmsnorm_kernel(m_x: cute.Tensor, m_w: cute.Tensor, m_out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()

    # 128 threads along the row, 8 contiguous bf16 per thread: a (1, 1024) tile per copy step.
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), BFloat16, num_bits_per_copy=128)
    tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((1, THREADS)), cute.make_layout((1, VEC)))
    thr = tiled.get_slice(tidx)

    t_x = thr.partition_S(cute.local_tile(m_x, (1, HIDDEN), (row, 0)))
    t_out = thr.partition_D(cute.local_tile(m_out, (1, HIDDEN), (row, 0)))
    # The gain seen as a (1, HIDDEN) row so it partitions exactly like x.
    w_row = cute.make_tensor(m_w.iterator, cute.make_layout((1, HIDDEN), stride=(0, 1)))
    t_w = thr.partition_S(w_row)

    r_x = cute.make_fragment_like(t_x)
    r_w = cute.make_fragment_like(t_w)
    cute.copy(atom, t_x, r_x)
    cute.copy(atom, t_w, r_w)  # issued together with x: one memory round trip

    x = r_x.load().to(Float32)
    sum_sq = (x * x).reduce(cute.ReductionOp.ADD, Float32(0.0), reduction_profile=0)
    sum_sq = cute.arch.warp_reduction_sum(sum_sq)

    smem = cutlass.memory.SmemAllocator()
    partial = smem.allocate_tensor(Float32, cute.make_layout((WARPS,)), byte_alignment=16)
    # warp_idx() broadcasts with a full-warp shfl.sync: called inside the lane-0 branch, that shuffle
    # waits for 31 lanes that never reach it and the kernel hangs (seen on the H200). Read it before.
    warp = cute.arch.warp_idx()
    if cute.arch.lane_idx() == 0:
        partial[warp] = sum_sq
    cute.arch.barrier()
    total = partial[0]
    for i in cutlass.range_constexpr(1, WARPS):
        total = total + partial[i]  # the same order in every thread
    rstd = cute.math.rsqrt(total * Float32(1.0 / HIDDEN) + Float32(EPS))

    # Round the normalised value to bf16, then apply the bf16 gain (HF order).
    normed = (x * rstd).to(BFloat16).to(Float32)
    r_out = cute.make_fragment_like(t_out)
    r_out.store((normed * r_w.load().to(Float32)).to(BFloat16))
    cute.copy(atom, r_out, t_out)


@cute.jit
def _rmsnorm(m_x: cute.Tensor, m_w: cute.Tensor, m_out: cute.Tensor, stream: cuda.CUstream):
    _rmsnorm_kernel(m_x, m_w, m_out).launch(grid=[m_x.shape[0], 1, 1], block=[THREADS, 1, 1], stream=stream)


def _compile():
    tokens = cute.sym_int()
    x = make_fake_compact_tensor(BFloat16, (tokens, HIDDEN), stride_order=(1, 0), assumed_align=16)
    w = make_fake_compact_tensor(BFloat16, (HIDDEN,), assumed_align=16)
    out = make_fake_compact_tensor(BFloat16, (tokens, HIDDEN), stride_order=(1, 0), assumed_align=16)
    return cute.compile(_rmsnorm, x, w, out, cuda.CUstream(0))


# Module level, per the SOL-ExecBench convention: importing this file compiles the kernel.
_KERNEL = _compile()


def _rows(t: torch.Tensor) -> cute.Tensor:
    """A [tokens, 4096] tensor with the same type the kernel was compiled for: (?, 4096):(4096, 1)."""
    return from_dlpack(t, assumed_align=16).mark_compact_shape_dynamic(mode=0, stride_order=t.dim_order())


def run(hidden_states: torch.Tensor, norm_weight: torch.Tensor, output: torch.Tensor) -> None:
    tokens, hidden = hidden_states.shape
    assert hidden == HIDDEN and norm_weight.shape == (HIDDEN,) and output.shape == hidden_states.shape
    for t in (hidden_states, norm_weight, output):
        assert t.dtype == torch.bfloat16 and t.is_contiguous() and t.data_ptr() % 16 == 0
    assert tokens * HIDDEN < 2**31, "32-bit element offsets"
    if tokens == 0:
        return
    stream = cuda.CUstream(torch.cuda.current_stream(hidden_states.device).cuda_stream)
    _KERNEL(_rows(hidden_states), from_dlpack(norm_weight, assumed_align=16), _rows(output), stream)
