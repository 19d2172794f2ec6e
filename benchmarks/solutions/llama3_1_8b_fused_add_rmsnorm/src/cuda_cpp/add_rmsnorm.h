// The launcher kernel.cu exports to binding.cpp: plain CUDA types only, so the kernels compile
// without torch's headers (seconds, not minutes).
#pragma once
#include <cuda_runtime.h>

namespace llama_add_rmsnorm {

constexpr int kHidden = 4096;

// residual_out[r] = bf16(hidden[r] + residual[r]);
// out[r] = w * bf16(residual_out[r] * rsqrt(mean(residual_out[r]^2) + 1e-5)), for r < rows, on `stream`.
// Activations: [rows, 4096] bf16, w: [4096] bf16, all 16-byte aligned. Returns the launch status.
cudaError_t launch(const void* hidden, const void* residual, const void* w, void* out, void* residual_out, int rows,
                   cudaStream_t stream);

}  // namespace llama_add_rmsnorm
