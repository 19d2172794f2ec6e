// DeepSeek-V3 per-token-group FP8 quantisation (hidden 7168, 1 x 128 groups, e4m3) in CUDA C++:
// amax, scale and cast fused in one pass; one read of x, one write of x_fp8 and the scales.
//
// One CTA of 128 threads per token. Thread t owns the 16-byte vectors t + 128 k (k < 7) of the row,
// all 7 loaded before the first use (112 bytes per thread in flight, each warp access a coalesced
// 512 bytes). A 128-element group is 16 consecutive vectors, so the 16 lanes of a half-warp hold
// exactly one group at each k: the group amax needs no shared memory and no barrier, only 4
// butterfly shuffles inside the half-warp. |x| and max are exact in bf16, so the per-thread amax
// runs on packed bf16 pairs; scale = max(amax, 1e-10) * fp32(1/448) (torch on a GPU divides a
// tensor by a Python scalar as a multiply by its reciprocal); x / scale is correctly rounded like
// torch's tensor division, but costs 3 instructions instead of a dozen: q = x * r with r the
// correctly rounded 1/scale (once per group), then one FMA residual correction (Markstein's
// theorem: the result is the IEEE quotient). The hardware e4m3 conversion then rounds to nearest
// even and saturates at +-448, which is the reference's clamp. Each thread stores its 8 fp8 values
// as one 8-byte write (a half-warp writes one full 128-byte group) and lane 0 of the group writes
// the scale.
//
// binding.cpp checks the tensors and calls launch() on torch's current stream; this file has no
// torch dependency, so the kernels compile (and report registers) in seconds.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cstdint>

#include "act_quant.h"

namespace deepseek_act_quant {
namespace {

constexpr int kThreads = 128;
constexpr int kVec = 8;                                      // bf16 per 16-byte access
constexpr int kVecsPerThread = kHidden / (kThreads * kVec);  // 7
constexpr int kLanesPerGroup = kGroup / kVec;                // 16: one half-warp per group
constexpr int kGroupsPerStep = kThreads / kLanesPerGroup;    // 8 groups per k
constexpr float kMinAmax = 1e-10f;
constexpr float kInvFp8Max = 1.0f / 448.0f;
static_assert(kHidden % (kThreads * kVec) == 0 && kLanesPerGroup == 16, "a group is one half-warp's vectors");

union Pack {
    uint4 u;
    __nv_bfloat162 h[4];
};

__device__ __forceinline__ uint32_t to_e4m3x2(float a, float b) {
    // cvt.rn.satfinite.e4m3x2.f32: round to nearest even, saturate to +-448; a lands in the low byte.
    return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
}

// x / d correctly rounded, given r = 1/d correctly rounded (no overflow or underflow in range here).
__device__ __forceinline__ float div_by(float x, float d, float r) {
    const float q = __fmul_rn(x, r);        // within 1 ulp of x / d (never contracted)
    return fmaf(fmaf(-q, d, x), r, q);      // exact residual x - q*d, one correction step
}

__global__ void __launch_bounds__(kThreads) act_quant_kernel(const uint4* __restrict__ x, uint2* __restrict__ q,
                                                             float* __restrict__ scales) {
    const int tid = threadIdx.x;
    const size_t row = blockIdx.x;
    const size_t base = row * (kHidden / kVec) + tid;

    Pack v[kVecsPerThread];
#pragma unroll
    for (int k = 0; k < kVecsPerThread; ++k) v[k].u = __ldcs(x + base + k * kThreads);  // read once: evict first

#pragma unroll
    for (int k = 0; k < kVecsPerThread; ++k) {
        __nv_bfloat162 m = __habs2(v[k].h[0]);
#pragma unroll
        for (int j = 1; j < 4; ++j) m = __hmax2(m, __habs2(v[k].h[j]));
        float amax = fmaxf(__low2float(m), __high2float(m));
        // Butterfly over the 16 lanes of this half-warp (offsets below 16 never cross halves).
#pragma unroll
        for (int offset = kLanesPerGroup / 2; offset > 0; offset >>= 1)
            amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
        const float scale = fmaxf(amax, kMinAmax) * kInvFp8Max;
        const float inv_scale = __frcp_rn(scale);

        uint32_t packed[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const float2 f = __bfloat1622float2(v[k].h[j]);
            packed[j] = to_e4m3x2(div_by(f.x, scale, inv_scale), div_by(f.y, scale, inv_scale));
        }
        __stcs(q + base + k * kThreads, make_uint2(packed[0] | (packed[1] << 16), packed[2] | (packed[3] << 16)));
        if ((tid & (kLanesPerGroup - 1)) == 0)
            scales[row * kGroups + k * kGroupsPerStep + tid / kLanesPerGroup] = scale;
    }
}

}  // namespace

// One CTA per token: 14 KB of input each, thousands of CTAs for prefill batches.
cudaError_t launch(const void* x, void* q, float* scales, int rows, cudaStream_t stream) {
    act_quant_kernel<<<rows, kThreads, 0, stream>>>(static_cast<const uint4*>(x), static_cast<uint2*>(q), scales);
    return cudaGetLastError();
}

}  // namespace deepseek_act_quant
