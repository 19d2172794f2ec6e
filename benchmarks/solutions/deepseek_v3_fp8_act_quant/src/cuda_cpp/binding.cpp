// The torch binding of the DeepSeek-V3 FP8 activation quantisation kernel (kernel.cu): checks the
// tensors and launches on torch's current stream. Destination passing style: run(x, x_fp8, scales).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "act_quant.h"

void run(torch::Tensor x, torch::Tensor x_fp8, torch::Tensor scales) {
    using deepseek_act_quant::kGroups;
    using deepseek_act_quant::kHidden;
    TORCH_CHECK(x.is_cuda() && x_fp8.is_cuda() && scales.is_cuda(), "all tensors must be on the GPU");
    TORCH_CHECK(x.scalar_type() == torch::kBFloat16, "x must be bfloat16");
    TORCH_CHECK(x_fp8.scalar_type() == torch::kFloat8_e4m3fn, "x_fp8 must be float8_e4m3fn");
    TORCH_CHECK(scales.scalar_type() == torch::kFloat32, "scales must be float32");
    TORCH_CHECK(x.is_contiguous() && x_fp8.is_contiguous() && scales.is_contiguous(), "all tensors must be contiguous");
    TORCH_CHECK(x.dim() == 2 && x.size(1) == kHidden, "x must be [tokens, 7168]");
    TORCH_CHECK(x_fp8.sizes() == x.sizes(), "x_fp8 must have the shape of x");
    TORCH_CHECK(scales.dim() == 2 && scales.size(0) == x.size(0) && scales.size(1) == kGroups, "scales must be [tokens, 56]");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0 && reinterpret_cast<uintptr_t>(x_fp8.data_ptr()) % 8 == 0,
                "x must be 16-byte and x_fp8 8-byte aligned");
    TORCH_CHECK(x.size(0) <= std::numeric_limits<int>::max(), "too many tokens");
    const int rows = static_cast<int>(x.size(0));
    if (rows == 0) return;
    const at::cuda::CUDAGuard guard(x.device());
    C10_CUDA_CHECK(deepseek_act_quant::launch(x.data_ptr(), x_fp8.data_ptr(), scales.data_ptr<float>(), rows,
                                              at::cuda::getCurrentCUDAStream()));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("run", &run, "DeepSeek-V3 1x128 group FP8 e4m3 activation quantisation (destination passing style)");
}
