// The launcher kernel.cu exports to binding.cpp: plain CUDA types only, so the kernels compile
// without torch's headers (seconds, not minutes).
#pragma once
#include <cuda_runtime.h>

namespace qwen3_rmsnorm {

constexpr int kHidden = 4096;

// out[r] = w * bf16(x[r] * rsqrt(mean(x[r]^2) + 1e-6)) for r < rows, on `stream`.
// x, out: [rows, 4096] bf16, w: [4096] bf16, all 16-byte aligned. Returns the launch status.
cudaError_t launch(const void* x, const void* w, void* out, int rows, cudaStream_t stream);

}  // namespace qwen3_rmsnorm
