// The torch binding of the Llama-3.1-8B residual add + RMSNorm kernel (kernel.cu): checks the
// tensors and launches on torch's current stream. Destination passing style:
// run(hidden_states, residual, norm_weight, output, residual_out).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "add_rmsnorm.h"

namespace {

void check_bf16(const torch::Tensor& t, const char* name) {
    TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
    TORCH_CHECK(t.scalar_type() == torch::kBFloat16, name, " must be bfloat16");
    TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, name, " must be 16-byte aligned");
}

}  // namespace

void run(torch::Tensor hidden_states, torch::Tensor residual, torch::Tensor norm_weight, torch::Tensor output,
         torch::Tensor residual_out) {
    using llama_add_rmsnorm::kHidden;
    check_bf16(hidden_states, "hidden_states");
    check_bf16(residual, "residual");
    check_bf16(norm_weight, "norm_weight");
    check_bf16(output, "output");
    check_bf16(residual_out, "residual_out");
    TORCH_CHECK(hidden_states.dim() == 2 && hidden_states.size(1) == kHidden, "hidden_states must be [tokens, 4096]");
    TORCH_CHECK(norm_weight.numel() == kHidden, "norm_weight must have 4096 elements");
    TORCH_CHECK(residual.sizes() == hidden_states.sizes() && output.sizes() == hidden_states.sizes() &&
                    residual_out.sizes() == hidden_states.sizes(),
                "residual, output and residual_out must have the shape of hidden_states");
    TORCH_CHECK(hidden_states.size(0) <= std::numeric_limits<int>::max(), "too many tokens");
    const int rows = static_cast<int>(hidden_states.size(0));
    if (rows == 0) return;
    const at::cuda::CUDAGuard guard(hidden_states.device());
    C10_CUDA_CHECK(llama_add_rmsnorm::launch(hidden_states.data_ptr(), residual.data_ptr(), norm_weight.data_ptr(),
                                             output.data_ptr(), residual_out.data_ptr(), rows,
                                             at::cuda::getCurrentCUDAStream()));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("run", &run, "Llama-3.1-8B residual add + RMSNorm, bf16 [tokens, 4096] (destination passing style)");
}
