"""SASS read for agents: the instruction mix, and one loop at a time (real nvcc and cuobjdump output)."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest

from solforge.sandbox.build.sass import instruction_mix, loop_text, loops
from solforge.sandbox.build.toolchain import find_cuobjdump

KERNEL = r"""
__global__ void sum_sq(const float* __restrict__ x, float* y, int n) {
  float acc = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i] * x[i];
  __shared__ float s[32];
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) { float t = 0; for (int w = 0; w < 4; ++w) t += s[w]; y[blockIdx.x] = t; }
}
"""


@pytest.fixture(scope="module")
def sass(tmp_path_factory: pytest.TempPathFactory) -> str:
    nvcc, cuobjdump = shutil.which("nvcc"), find_cuobjdump()
    if nvcc is None or cuobjdump is None:
        pytest.skip("needs nvcc and cuobjdump")
    folder = tmp_path_factory.mktemp("sass")
    (folder / "k.cu").write_text(KERNEL)
    subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-o", "k.cubin", "k.cu"], cwd=folder, check=True, timeout=300)
    return subprocess.run([cuobjdump, "-sass", str(folder / "k.cubin")], capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_the_mix_of_a_real_kernel_counts_its_memory_branches_and_guards(sass: str) -> None:
    mix = instruction_mix(sass)
    assert mix.global_loads == 1 and mix.global_stores == 1  # x[i] in the loop, y[blockIdx.x]
    assert mix.shared >= 2 and mix.local == 0 and mix.tensor_core == 0  # s[] written and read, no spills
    assert mix.branches >= 2 and mix.predicated >= 1  # the loop's branch, EXIT; the lane-0 store is guarded
    assert "NOP" not in dict(mix.top_opcodes)
    assert mix.instructions == sum(n for _, n in instruction_mix(sass, top=1000).top_opcodes)


def test_the_loop_over_x_is_found_and_shown_alone(sass: str) -> None:
    found = loops(sass)
    assert len(found) == 1  # the 4-step loop over s[] is unrolled; the trap after EXIT is not a loop
    text, loop, count = loop_text(sass, 1)
    assert count == 1 and text.splitlines()[0].startswith("Function : ") and "loop 1 of 1" in text
    body = instruction_mix(text)
    assert body.global_loads == 1 and body.shared == 0  # only the loop's own instructions
    assert text.rstrip().splitlines()[-1].split("/*")[1].startswith(f"{loop.end:04x}")
    with pytest.raises(ValueError, match="loops 1-1"):
        loop_text(sass, 2)


def test_tensor_core_tma_spills_and_dead_lines_are_told_apart() -> None:
    lines = """
        Function : k
        /*0000*/                   UTMALDG.2D [UR8], [UR4] ;
        /*0010*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;
        /*0020*/                   UTCHMMA gdesc[UR6], gdesc[UR8], tmem[UR4], tmem[UR10], idesc[UR11], UPT ;
        /*0030*/                   STL [R1+0x10], R4 ;
        /*0040*/                   LDL R4, [R1+0x10] ;
        /*0050*/              @!PT LDS R2, [RZ] ;
        /*0060*/               @P0 BRA 0x10 ;
        /*0070*/                   EXIT ;
        /*0080*/                   BRA 0x80;
        /*0090*/                   NOP;
    """
    mix = instruction_mix(lines)
    assert (mix.instructions, mix.tensor_core, mix.global_loads, mix.local) == (9, 2, 1, 2)
    assert (mix.shared, mix.never_run, mix.predicated, mix.branches) == (1, 1, 2, 3)
    assert [(loop.start, loop.end) for loop in loops(lines)] == [(0x10, 0x60)]


def test_no_loop_is_said_plainly() -> None:
    with pytest.raises(ValueError, match="no loop"):
        loop_text("/*0000*/ EXIT ;", 1)


@pytest.mark.slow
def test_compile_kernel_shows_a_loop_of_the_rmsnorm_kernel_with_its_mix(rmsnorm_build: Any) -> None:
    from solforge.tools.compile import CompileKernelInput, _code_view, build_result
    from solforge.tools.errors import ToolInputError

    solution = rmsnorm_build.solution.model_dump(mode="json")
    whole = _code_view(rmsnorm_build.report, CompileKernelInput(solution=solution, disassemble="sass"))
    assert whole.mix is not None and whole.loops is not None and whole.loops >= 1 and whole.mix.global_loads >= 1
    args = CompileKernelInput(solution=solution, disassemble="sass", loop=1)
    one = _code_view(rmsnorm_build.report, args)
    assert one.mix is not None and 0 < one.mix.instructions < whole.mix.instructions
    answer = build_result(rmsnorm_build.report, "rmsnorm", "s", args, one).render()
    assert "instruction mix of what is shown:" in answer and f"loop 1 of {whole.loops}" in answer
    with pytest.raises(ToolInputError, match="SASS only"):
        _code_view(rmsnorm_build.report, CompileKernelInput(solution=solution, disassemble="ptx", loop=1))
    with pytest.raises(ToolInputError, match="does not exist"):
        _code_view(rmsnorm_build.report, CompileKernelInput(solution=solution, disassemble="sass", loop=999))
