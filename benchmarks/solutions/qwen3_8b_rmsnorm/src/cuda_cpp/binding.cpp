// The torch binding of the Qwen3-8B RMSNorm kernel (kernel.cu): checks the tensors and launches on
// torch's current stream. Destination passing style: run(hidden_states, norm_weight, output).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "rmsnorm.h"

namespace {

void check_bf16(const torch::Tensor& t, const char* name) {
    TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
    TORCH_CHECK(t.scalar_type() == torch::kBFloat16, name, " must be bfloat16");
    TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, name, " must be 16-byte aligned");
}

}  // namespace

void run(torch::Tensor hidden_states, torch::Tensor norm_weight, torch::Tensor output) {
    using qwen3_rmsnorm::kHidden;
    check_bf16(hidden_states, "hidden_states");
    check_bf16(norm_weight, "norm_weight");
    check_bf16(output, "output");
    TORCH_CHECK(hidden_states.dim() == 2 && hidden_states.size(1) == kHidden, "hidden_states must be [tokens, 4096]");
    TORCH_CHECK(norm_weight.numel() == kHidden, "norm_weight must have 4096 elements");
    TORCH_CHECK(output.sizes() == hidden_states.sizes(), "output must have the shape of hidden_states");
    TORCH_CHECK(hidden_states.size(0) <= std::numeric_limits<int>::max(), "too many tokens");
    const int rows = static_cast<int>(hidden_states.size(0));
    if (rows == 0) return;
    const at::cuda::CUDAGuard guard(hidden_states.device());
    C10_CUDA_CHECK(qwen3_rmsnorm::launch(hidden_states.data_ptr(), norm_weight.data_ptr(), output.data_ptr(), rows,
                                         at::cuda::getCurrentCUDAStream()));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("run", &run, "Qwen3-8B RMSNorm, bf16 [tokens, 4096] (destination passing style)");
}
