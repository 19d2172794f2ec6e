// The launcher kernel.cu exports to binding.cpp: plain CUDA types only, so the kernels compile
// without torch's headers (seconds, not minutes).
#pragma once
#include <cuda_runtime.h>

namespace deepseek_act_quant {

constexpr int kHidden = 7168;
constexpr int kGroup = 128;
constexpr int kGroups = kHidden / kGroup;  // 56 per token

// For each token r < rows and group g < 56: scales[r][g] = max(amax, 1e-10) / 448 and
// q[r][128 g + i] = e4m3(x[r][128 g + i] / scales[r][g]), on `stream`.
// x: [rows, 7168] bf16 (16-byte aligned), q: [rows, 7168] e4m3 (8-byte aligned), scales: [rows, 56] fp32.
// Returns the launch status.
cudaError_t launch(const void* x, void* q, float* scales, int rows, cudaStream_t stream);

}  // namespace deepseek_act_quant
