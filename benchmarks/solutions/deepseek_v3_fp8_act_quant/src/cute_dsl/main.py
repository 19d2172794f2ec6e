"""DeepSeek-V3 per-token-group FP8 quantisation (hidden 7168, 1 x 128 groups, e4m3) in CuTe DSL:
amax, scale and cast fused in one pass, one CTA of 128 threads per token.

A tiled copy with 128 threads x 8 bf16 values (one 16-byte vector each) covers 1024 columns, so
each thread holds 7 vectors of the row, all loaded before the first use (every warp access a
contiguous 512 bytes). A 128-element group is 16 consecutive vectors, so at each of the 7 steps
the 16 lanes of a half-warp hold exactly one group: the group amax is a max over the thread's 8
values and 4 butterfly shuffles inside the half-warp, with no shared memory and no barrier.
scale = max(amax, 1e-10) * fp32(1/448) (torch on a GPU divides a tensor by a Python scalar as a
multiply by its reciprocal); x / scale is correctly rounded like torch's tensor division, as
x * r plus one FMA residual correction with r the correctly rounded 1/scale (Markstein), which
costs 3 instructions instead of a full division. The e4m3 conversion (cvt.rn.satfinite) rounds to
nearest even and saturates at +-448, which is the reference's clamp. Each thread stores its 8 fp8
values as one 8-byte write and lane 0 of each half-warp writes the group's scale.

The kernel is compiled once at import, on fake tensors whose token count is a symbolic integer
and whose other sizes and strides are static, so vector alignment is provable and one binary
serves every batch size.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass import BFloat16, Float8E4M3FN, Float32
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor

HIDDEN = 7168
GROUP = 128
GROUPS = HIDDEN // GROUP  # 56 per token
THREADS = 128
VEC = 8  # bf16 per 16-byte load, fp8 per 8-byte store
VECS_PER_THREAD = HIDDEN // (THREADS * VEC)  # 7
LANES_PER_GROUP = GROUP // VEC  # 16: one half-warp per group
GROUPS_PER_STEP = THREADS // LANES_PER_GROUP  # 8
FP8_MAX = 448.0
MIN_AMAX = 1e-10


@cute.kernel
def _act_quant_kernel(m_x: cute.Tensor, m_q: cute.Tensor, m_s: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()

    # The same thread/value layout for bf16 loads (16 B) and fp8 stores (8 B).
    thr_layout = cute.make_layout((1, THREADS))
    val_layout = cute.make_layout((1, VEC))
    load_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), BFloat16, num_bits_per_copy=128)
    store_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), Float8E4M3FN, num_bits_per_copy=64)
    thr_load = cute.make_tiled_copy_tv(load_atom, thr_layout, val_layout).get_slice(tidx)
    thr_store = cute.make_tiled_copy_tv(store_atom, thr_layout, val_layout).get_slice(tidx)

    t_x = thr_load.partition_S(cute.local_tile(m_x, (1, HIDDEN), (row, 0)))  # ((8,1),1,7)
    t_q = thr_store.partition_D(cute.local_tile(m_q, (1, HIDDEN), (row, 0)))
    r_x = cute.make_fragment_like(t_x)
    r_q = cute.make_fragment_like(t_q)
    cute.copy(load_atom, t_x, r_x)  # all 7 vectors in flight before the first use

    for k in cutlass.range_constexpr(VECS_PER_THREAD):
        x = r_x[None, 0, k].load().to(Float32)  # vector tidx + 128 k: group 8 k + tidx // 16
        amax = cute.math.abs(x).reduce(cute.ReductionOp.MAX, Float32(0.0), reduction_profile=0)
        amax = cute.arch.warp_reduction_max(amax, threads_in_group=LANES_PER_GROUP)
        scale = cute.arch.fmax(amax, Float32(MIN_AMAX)) * Float32(1.0 / FP8_MAX)
        inv = Float32(1.0) / scale  # rcp.rn: correctly rounded
        scale_v = cute.full_like(x, scale)
        inv_v = cute.full_like(x, inv)
        q = x * inv_v  # within 1 ulp of x / scale
        q = cute.math.fma(cute.math.fma(-q, scale_v, x), inv_v, q)  # exact residual, one correction
        r_q[None, 0, k].store(q.to(Float8E4M3FN))
        if tidx % LANES_PER_GROUP == 0:
            m_s[row, k * GROUPS_PER_STEP + tidx // LANES_PER_GROUP] = scale
    cute.copy(store_atom, r_q, t_q)


@cute.jit
def _act_quant(m_x: cute.Tensor, m_q: cute.Tensor, m_s: cute.Tensor, stream: cuda.CUstream):
    _act_quant_kernel(m_x, m_q, m_s).launch(grid=[m_x.shape[0], 1, 1], block=[THREADS, 1, 1], stream=stream)


def _compile():
    tokens = cute.sym_int()
    x = make_fake_compact_tensor(BFloat16, (tokens, HIDDEN), stride_order=(1, 0), assumed_align=16)
    q = make_fake_compact_tensor(Float8E4M3FN, (tokens, HIDDEN), stride_order=(1, 0), assumed_align=16)
    s = make_fake_compact_tensor(Float32, (tokens, GROUPS), stride_order=(1, 0), assumed_align=16)
    return cute.compile(_act_quant, x, q, s, cuda.CUstream(0))


# Module level, per the SOL-ExecBench convention: importing this file compiles the kernel.
_KERNEL = _compile()


def _rows(t: torch.Tensor) -> cute.Tensor:
    """A row-major [tokens, n] tensor typed as compiled: (?, n):(n, 1), 16-byte aligned."""
    return from_dlpack(t, assumed_align=16).mark_compact_shape_dynamic(mode=0, stride_order=t.dim_order())


def run(x: torch.Tensor, x_fp8: torch.Tensor, scales: torch.Tensor) -> None:
    tokens, hidden = x.shape
    assert hidden == HIDDEN and x_fp8.shape == x.shape and scales.shape == (tokens, GROUPS)
    assert x.dtype == torch.bfloat16 and x_fp8.dtype == torch.float8_e4m3fn and scales.dtype == torch.float32
    for t in (x, x_fp8, scales):
        assert t.is_contiguous() and t.data_ptr() % 16 == 0
    assert tokens * HIDDEN < 2**31, "32-bit element offsets"
    if tokens == 0:
        return
    stream = cuda.CUstream(torch.cuda.current_stream(x.device).cuda_stream)
    _KERNEL(_rows(x), _rows(x_fp8), _rows(scales), stream)
