// Llama-3.1-8B residual add + RMSNorm (hidden 4096, eps 1e-5) in CUDA C++: one CTA of 128 threads
// per token and a single pass over memory: three streams in, two out, nothing re-read.
//
// Each thread owns 4 x 16-byte vectors (32 bf16) of the row of each input; all 8 loads are issued
// before the first use (128 bytes per thread in flight), and every warp access is a contiguous,
// fully coalesced 512 bytes. The sum hidden_states + residual is computed in fp32, rounded to bf16
// (the new residual stream, stored at once) and kept in registers; its sum of squares is
// accumulated in fp32, reduced with warp shuffles and across the 4 warps through shared memory
// (one barrier), then x * rsqrt(mean + eps) is rounded to bf16 and multiplied by the bf16 gain in
// Hugging Face's order. The grid is persistent (as many CTAs as fit on all SMs, striding over
// rows), so the gain is read from global memory once per CTA and kept in shared memory (8 KB).
//
// binding.cpp checks the tensors and calls launch() on torch's current stream; this file has no
// torch dependency, so the kernels compile (and report registers) in seconds.
#include <cuda_bf16.h>

#include "add_rmsnorm.h"

namespace llama_add_rmsnorm {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kVec = 8;                                      // bf16 per 16-byte access
constexpr int kVecsPerThread = kHidden / (kThreads * kVec);  // 4
constexpr float kEps = 1e-5f;
static_assert(kVecsPerThread == 4 && kHidden % (kThreads * kVec) == 0, "4 x 16-byte vectors per thread");

// 16 bytes seen either as one vector load/store or as four bf16 pairs.
union Pack {
    uint4 u;
    __nv_bfloat162 h[4];
};

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void __launch_bounds__(kThreads)
    add_rmsnorm_kernel(const uint4* __restrict__ hidden, const uint4* __restrict__ residual,
                       const uint4* __restrict__ weight, uint4* __restrict__ out, uint4* __restrict__ residual_out,
                       int rows) {
    // Partials are double-buffered by row parity: the next row's never overwrite ones still being
    // read, so one barrier per row is enough.
    __shared__ float partial[2][kWarps];
    __shared__ uint4 gain[kHidden / kVec];  // the gain, reused for every row this CTA handles (8 KB)
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;

    int parity = 0;
    for (int row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
        const size_t base = static_cast<size_t>(row) * (kHidden / kVec) + tid;
        Pack h[kVecsPerThread], v[kVecsPerThread];
#pragma unroll
        for (int k = 0; k < kVecsPerThread; ++k) {
            h[k].u = __ldcs(hidden + base + k * kThreads);  // read once: evict first
            v[k].u = __ldcs(residual + base + k * kThreads);
        }
        if (row == blockIdx.x) {
            // First row of this CTA: fetch the gain while the row is in flight (one memory round trip,
            // not two, which is what decode-sized batches pay for). Each thread later reads back only
            // the vectors it stored itself, so this needs no barrier of its own.
#pragma unroll
            for (int k = 0; k < kVecsPerThread; ++k) gain[tid + k * kThreads] = __ldg(weight + tid + k * kThreads);
        }

        float part[kVecsPerThread];  // one fp32 chain per vector: 4 independent FMA chains
#pragma unroll
        for (int k = 0; k < kVecsPerThread; ++k) {
            part[k] = 0.f;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                // bf16 + bf16 in fp32, rounded once to bf16: exactly torch's bf16 add.
                const float2 a = __bfloat1622float2(h[k].h[j]);
                const float2 b = __bfloat1622float2(v[k].h[j]);
                v[k].h[j] = __floats2bfloat162_rn(a.x + b.x, a.y + b.y);
                const float2 f = __bfloat1622float2(v[k].h[j]);  // the norm sees the rounded sum
                part[k] = fmaf(f.x, f.x, part[k]);
                part[k] = fmaf(f.y, f.y, part[k]);
            }
            __stcs(residual_out + base + k * kThreads, v[k].u);  // the new residual stream
        }
        float sum_sq = (part[0] + part[1]) + (part[2] + part[3]);
        sum_sq = warp_sum(sum_sq);
        if (lane == 0) partial[parity][warp] = sum_sq;
        __syncthreads();
        float total = 0.f;
#pragma unroll
        for (int i = 0; i < kWarps; ++i) total += partial[parity][i];  // same order in every thread
        const float rstd = rsqrtf(total * (1.f / kHidden) + kEps);

#pragma unroll
        for (int k = 0; k < kVecsPerThread; ++k) {
            Pack w, o;
            w.u = gain[tid + k * kThreads];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float2 f = __bfloat1622float2(v[k].h[j]);
                // Round the normalised value to bf16 first, then apply the gain (HF order).
                const float2 n = __bfloat1622float2(__floats2bfloat162_rn(f.x * rstd, f.y * rstd));
                const float2 g = __bfloat1622float2(w.h[j]);
                o.h[j] = __floats2bfloat162_rn(n.x * g.x, n.y * g.y);
            }
            __stcs(out + base + k * kThreads, o.u);  // written once: stream past the caches
        }
    }
}

}  // namespace

// Enough CTAs to fill every SM at full occupancy (persistent), never more than there are rows.
cudaError_t launch(const void* hidden, const void* residual, const void* w, void* out, void* residual_out, int rows,
                   cudaStream_t stream) {
    static int resident[64] = {};  // per device, computed on first use
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device >= 64) return cudaErrorInvalidDevice;
    if (resident[device] == 0) {
        int sms = 0, per_sm = 0;
        if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return err;
        if ((err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, add_rmsnorm_kernel, kThreads, 0)) != cudaSuccess)
            return err;
        resident[device] = (per_sm > 0 ? per_sm : 1) * sms;
    }
    const int grid = rows < resident[device] ? rows : resident[device];
    add_rmsnorm_kernel<<<grid, kThreads, 0, stream>>>(
        static_cast<const uint4*>(hidden), static_cast<const uint4*>(residual), static_cast<const uint4*>(w),
        static_cast<uint4*>(out), static_cast<uint4*>(residual_out), rows);
    return cudaGetLastError();
}

}  // namespace llama_add_rmsnorm
