"""What the GPU can do: datasheet peaks, the local GPU seen through NVML, and its health.

Three things live here:

- :data:`GPU_SPECS`, a table of datasheet numbers (dense, i.e. *without* 2:4 structured sparsity:
  NVIDIA datasheets print the sparse figure for tensor cores, marked with an asterisk, and the
  dense one is half of it), one :class:`GpuSpec` per product, each number commented with where it
  comes from; :func:`match_spec` maps the names NVML and torch report ("NVIDIA H100 80GB HBM3",
  "NVIDIA A100-SXM4-80GB") onto the table.
- :class:`Peaks` and :func:`datasheet_peaks`, the ceilings a speed-of-light estimate uses (with a
  calibration when there is one: :func:`solforge.sandbox.sol.peaks.resolve_peaks`).
- :func:`detect_gpu` and :func:`check_health`, thin NVML readers (pynvml from nvidia-ml-py,
  imported lazily) that return None or an unhealthy verdict instead of raising when there is no
  NVIDIA driver.

Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

KB = 1024
MB = 1024**2
GB = 1000**3  # memory capacities are sold in decimal gigabytes
T = 1e12  # tera (FLOP/s, B/s)
P = 1e15  # peta


class HardwareModel(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid", frozen=True)


class GpuSpec(HardwareModel):
    """One GPU product's datasheet numbers. Tensor-core rates are dense (no sparsity), in FLOP/s."""

    key: str
    """Short table key: H100-SXM, H200, B200, ..."""
    name: str
    """The product as NVIDIA names it."""
    arch: str
    """Architecture family: ampere, ada, hopper, blackwell, blackwell-ultra."""
    compute_capability: str
    """CUDA compute capability, for example ``9.0``."""
    sm_count: int
    boost_clock_mhz: int | None
    """Maximum SM clock the datasheet peaks assume; None where NVIDIA does not publish it."""
    memory_bytes: int
    dram_bytes_per_s: float
    """Peak DRAM (HBM or GDDR) bandwidth."""
    l2_bytes: int
    smem_per_sm_bytes: int
    """Largest shared memory an SM can be configured to hold."""
    fp64_flops: float
    """Non-tensor (CUDA core) fp64 rate."""
    fp32_flops: float
    """Non-tensor (CUDA core) fp32 rate, FMA counted as 2."""
    fp64_tensor_flops: float | None = None
    tf32_tensor_flops: float | None = None
    fp16_tensor_flops: float | None = None
    """fp16 inputs with fp32 accumulation."""
    bf16_tensor_flops: float | None = None
    fp8_tensor_flops: float | None = None
    fp4_tensor_flops: float | None = None
    int8_tensor_ops: float | None = None
    source: str
    """The datasheet (or other document) the numbers come from."""

    def tensor_peaks(self) -> dict[str, float]:
        """Tensor-core peaks keyed by precision class (fp64, tf32, fp16, bf16, fp8, fp4, int8)."""
        pairs = {
            "fp64": self.fp64_tensor_flops,
            "tf32": self.tf32_tensor_flops,
            "fp16": self.fp16_tensor_flops,
            "bf16": self.bf16_tensor_flops,
            "fp8": self.fp8_tensor_flops,
            "fp4": self.fp4_tensor_flops,
            "int8": self.int8_tensor_ops,
        }
        return {k: v for k, v in pairs.items() if v is not None}


# -- the table -------------------------------------------------------------------------------------
# Datasheet tensor-core numbers with sparsity are halved to dense ones. Where a number is not on
# the datasheet the comment says where it comes from instead.

_H100_DS = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)"
_H200_DS = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)"
_A100_DS = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100)"
_B200_DS = "NVIDIA HGX B200 specifications, per GPU (nvidia.com/en-us/data-center/hgx)"
_GB200_DS = "NVIDIA GB200 NVL72 specifications, per GPU (nvidia.com/en-us/data-center/gb200-nvl72)"
_B300_DS = ("NVIDIA HGX B300 specifications (8-GPU totals divided by 8) and the 'Inside NVIDIA Blackwell "
            "Ultra' technical blog (developer.nvidia.com, 2025-08)")
_L40S_DS = "NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s)"
_ADA_WP = "NVIDIA Ada GPU architecture whitepaper v2.1, appendix table (GeForce RTX 4090)"

_HOPPER_SMEM = 228 * KB  # CUDA C++ Programming Guide, compute capability 9.0: 228 KB shared per SM
_BLACKWELL_SMEM = 228 * KB  # CUDA C++ Programming Guide, compute capability 10.x: 228 KB per SM
_AMPERE_SMEM = 164 * KB  # CUDA C++ Programming Guide, compute capability 8.0: 164 KB per SM
_ADA_SMEM = 100 * KB  # CUDA C++ Programming Guide, compute capability 8.9: 100 KB per SM
_B200_L2 = 126 * MB  # not on the datasheet: 126 MB per NVIDIA's Blackwell tuning guide (research notes, third-party)

GPU_SPECS: dict[str, GpuSpec] = {
    "H100-SXM": GpuSpec(
        key="H100-SXM", name="NVIDIA H100 SXM5 80GB", arch="hopper", compute_capability="9.0",
        sm_count=132,  # H100 whitepaper: 132 SMs on H100 SXM5
        boost_clock_mhz=1980,  # H100 whitepaper: max boost 1980 MHz (SXM5)
        memory_bytes=80 * GB, dram_bytes_per_s=3.35 * T,  # datasheet: 80 GB HBM3, 3.35 TB/s
        l2_bytes=50 * MB,  # H100 whitepaper: 50 MB L2 on H100 SXM5
        smem_per_sm_bytes=_HOPPER_SMEM,
        fp64_flops=34 * T, fp32_flops=67 * T,  # datasheet: FP64 34, FP32 67 TFLOPS
        fp64_tensor_flops=67 * T,  # datasheet: FP64 Tensor Core 67 TFLOPS
        tf32_tensor_flops=494.5 * T,  # datasheet: TF32 989 TFLOPS with sparsity
        fp16_tensor_flops=989.5 * T, bf16_tensor_flops=989.5 * T,  # datasheet: 1,979 TFLOPS with sparsity
        fp8_tensor_flops=1979 * T,  # datasheet: FP8 3,958 TFLOPS with sparsity
        int8_tensor_ops=1979 * T,  # datasheet: INT8 3,958 TOPS with sparsity
        source=_H100_DS + ", H100 SXM column",
    ),
    "H100-PCIe": GpuSpec(
        key="H100-PCIe", name="NVIDIA H100 PCIe 80GB", arch="hopper", compute_capability="9.0",
        sm_count=114,  # H100 whitepaper: 114 SMs on H100 PCIe
        boost_clock_mhz=1755,  # H100 whitepaper: max boost 1755 MHz (PCIe)
        memory_bytes=80 * GB, dram_bytes_per_s=2.0 * T,  # datasheet: 80 GB HBM2e, 2 TB/s
        l2_bytes=50 * MB, smem_per_sm_bytes=_HOPPER_SMEM,
        fp64_flops=26 * T, fp32_flops=51 * T,  # datasheet: FP64 26, FP32 51 TFLOPS
        fp64_tensor_flops=51 * T,  # datasheet: FP64 Tensor Core 51 TFLOPS
        tf32_tensor_flops=378 * T,  # datasheet: TF32 756 TFLOPS with sparsity
        fp16_tensor_flops=756.5 * T, bf16_tensor_flops=756.5 * T,  # datasheet: 1,513 TFLOPS with sparsity
        fp8_tensor_flops=1513 * T,  # datasheet: FP8 3,026 TFLOPS with sparsity
        int8_tensor_ops=1513 * T,  # datasheet: INT8 3,026 TOPS with sparsity
        source=_H100_DS + ", H100 PCIe column",
    ),
    "H100-NVL": GpuSpec(
        key="H100-NVL", name="NVIDIA H100 NVL 94GB", arch="hopper", compute_capability="9.0",
        sm_count=132,  # GH100 with 132 SMs enabled, as H100 SXM5
        boost_clock_mhz=1785,  # not on the datasheet: third-party spec databases (TechPowerUp)
        memory_bytes=94 * GB, dram_bytes_per_s=3.9 * T,  # datasheet: 94 GB HBM3, 3.9 TB/s
        l2_bytes=50 * MB, smem_per_sm_bytes=_HOPPER_SMEM,
        fp64_flops=30 * T, fp32_flops=60 * T,  # datasheet: FP64 30, FP32 60 TFLOPS
        fp64_tensor_flops=60 * T,  # datasheet: FP64 Tensor Core 60 TFLOPS
        tf32_tensor_flops=417.5 * T,  # datasheet: TF32 835 TFLOPS with sparsity
        fp16_tensor_flops=835.5 * T, bf16_tensor_flops=835.5 * T,  # datasheet: 1,671 TFLOPS with sparsity
        fp8_tensor_flops=1670.5 * T,  # datasheet: FP8 3,341 TFLOPS with sparsity
        int8_tensor_ops=1670.5 * T,  # datasheet: INT8 3,341 TOPS with sparsity
        source=_H100_DS + ", H100 NVL column",
    ),
    "H200": GpuSpec(
        key="H200", name="NVIDIA H200 SXM 141GB", arch="hopper", compute_capability="9.0",
        sm_count=132,  # same GH100 configuration as H100 SXM5
        boost_clock_mhz=1980,  # same clocks as H100 SXM5
        memory_bytes=141 * GB, dram_bytes_per_s=4.8 * T,  # datasheet: 141 GB HBM3e, 4.8 TB/s
        l2_bytes=50 * MB, smem_per_sm_bytes=_HOPPER_SMEM,
        fp64_flops=34 * T, fp32_flops=67 * T,  # datasheet: FP64 34, FP32 67 TFLOPS
        fp64_tensor_flops=67 * T,  # datasheet: FP64 Tensor Core 67 TFLOPS
        tf32_tensor_flops=494.5 * T,  # datasheet: TF32 989 TFLOPS with sparsity
        fp16_tensor_flops=989.5 * T, bf16_tensor_flops=989.5 * T,  # datasheet: 1,979 TFLOPS with sparsity
        fp8_tensor_flops=1979 * T,  # datasheet: FP8 3,958 TFLOPS with sparsity
        int8_tensor_ops=1979 * T,  # datasheet: INT8 3,958 TOPS with sparsity
        source=_H200_DS + ", H200 SXM column",
    ),
    "H200-NVL": GpuSpec(
        key="H200-NVL", name="NVIDIA H200 NVL 141GB", arch="hopper", compute_capability="9.0",
        sm_count=132,
        boost_clock_mhz=1785,  # not on the datasheet: third-party spec databases (TechPowerUp)
        memory_bytes=141 * GB, dram_bytes_per_s=4.8 * T,  # datasheet: 141 GB HBM3e, 4.8 TB/s
        l2_bytes=50 * MB, smem_per_sm_bytes=_HOPPER_SMEM,
        fp64_flops=30 * T, fp32_flops=60 * T,  # datasheet: FP64 30, FP32 60 TFLOPS
        fp64_tensor_flops=60 * T,  # datasheet: FP64 Tensor Core 60 TFLOPS
        tf32_tensor_flops=417.5 * T,  # datasheet: TF32 835 TFLOPS with sparsity
        fp16_tensor_flops=835.5 * T, bf16_tensor_flops=835.5 * T,  # datasheet: 1,671 TFLOPS with sparsity
        fp8_tensor_flops=1670.5 * T,  # datasheet: FP8 3,341 TFLOPS with sparsity
        int8_tensor_ops=1670.5 * T,  # datasheet: INT8 3,341 TOPS with sparsity
        source=_H200_DS + ", H200 NVL column",
    ),
    "A100-SXM-80GB": GpuSpec(
        key="A100-SXM-80GB", name="NVIDIA A100 SXM4 80GB", arch="ampere", compute_capability="8.0",
        sm_count=108,  # A100 whitepaper: 108 SMs
        boost_clock_mhz=1410,  # A100 whitepaper: boost 1410 MHz
        memory_bytes=80 * GB, dram_bytes_per_s=2.039 * T,  # datasheet: 80 GB HBM2e, 2,039 GB/s
        l2_bytes=40 * MB,  # A100 whitepaper: 40 MB L2
        smem_per_sm_bytes=_AMPERE_SMEM,
        fp64_flops=9.7 * T, fp32_flops=19.5 * T,  # datasheet: FP64 9.7, FP32 19.5 TFLOPS
        fp64_tensor_flops=19.5 * T,  # datasheet: FP64 Tensor Core 19.5 TFLOPS
        tf32_tensor_flops=156 * T,  # datasheet: TF32 156 TFLOPS (312 with sparsity)
        fp16_tensor_flops=312 * T, bf16_tensor_flops=312 * T,  # datasheet: 312 TFLOPS (624 with sparsity)
        int8_tensor_ops=624 * T,  # datasheet: INT8 624 TOPS (1,248 with sparsity); no FP8 on Ampere
        source=_A100_DS + ", A100 80GB SXM column",
    ),
    "A100-PCIe-80GB": GpuSpec(
        key="A100-PCIe-80GB", name="NVIDIA A100 PCIe 80GB", arch="ampere", compute_capability="8.0",
        sm_count=108, boost_clock_mhz=1410,
        memory_bytes=80 * GB, dram_bytes_per_s=1.935 * T,  # datasheet: 80 GB HBM2e, 1,935 GB/s
        l2_bytes=40 * MB, smem_per_sm_bytes=_AMPERE_SMEM,
        fp64_flops=9.7 * T, fp32_flops=19.5 * T, fp64_tensor_flops=19.5 * T,  # datasheet, as SXM
        tf32_tensor_flops=156 * T, fp16_tensor_flops=312 * T, bf16_tensor_flops=312 * T,
        int8_tensor_ops=624 * T,
        source=_A100_DS + ", A100 80GB PCIe column",
    ),
    "A100-40GB": GpuSpec(
        key="A100-40GB", name="NVIDIA A100 40GB (SXM4 or PCIe)", arch="ampere", compute_capability="8.0",
        sm_count=108, boost_clock_mhz=1410,
        memory_bytes=40 * GB, dram_bytes_per_s=1.555 * T,  # datasheet: 40 GB HBM2, 1,555 GB/s
        l2_bytes=40 * MB, smem_per_sm_bytes=_AMPERE_SMEM,
        fp64_flops=9.7 * T, fp32_flops=19.5 * T, fp64_tensor_flops=19.5 * T,
        tf32_tensor_flops=156 * T, fp16_tensor_flops=312 * T, bf16_tensor_flops=312 * T,
        int8_tensor_ops=624 * T,
        source=_A100_DS + ", A100 40GB columns",
    ),
    "L40S": GpuSpec(
        key="L40S", name="NVIDIA L40S 48GB", arch="ada", compute_capability="8.9",
        sm_count=142,  # 18,176 CUDA cores / 128 per SM
        boost_clock_mhz=2520,  # not on the datasheet: third-party spec databases (TechPowerUp)
        memory_bytes=48 * GB, dram_bytes_per_s=864e9,  # datasheet: 48 GB GDDR6, 864 GB/s
        l2_bytes=96 * MB,  # Ada whitepaper: AD102 96 MB L2
        smem_per_sm_bytes=_ADA_SMEM,
        fp64_flops=91.6 * T / 64,  # not on the datasheet: Ada runs fp64 at 1/64 of fp32 (Programming Guide)
        fp32_flops=91.6 * T,  # datasheet: FP32 91.6 TFLOPS
        tf32_tensor_flops=183 * T,  # datasheet: TF32 366 TFLOPS with sparsity
        # datasheet: 362.05 | 733 with sparsity (the datasheet's own dense figure, not 733 / 2)
        fp16_tensor_flops=362.05 * T, bf16_tensor_flops=362.05 * T,
        fp8_tensor_flops=733 * T,  # datasheet: FP8 1,466 TFLOPS with sparsity
        int8_tensor_ops=733 * T,  # datasheet: INT8 1,466 TOPS with sparsity; no fp64 tensor cores
        source=_L40S_DS,
    ),
    "RTX-4090": GpuSpec(
        key="RTX-4090", name="NVIDIA GeForce RTX 4090", arch="ada", compute_capability="8.9",
        sm_count=128,  # Ada whitepaper: 128 SMs
        boost_clock_mhz=2520,  # Ada whitepaper: boost 2520 MHz
        memory_bytes=24 * GB, dram_bytes_per_s=1008e9,  # whitepaper: 24 GB GDDR6X, 1,008 GB/s
        l2_bytes=72 * MB,  # whitepaper: 72 MB L2
        smem_per_sm_bytes=_ADA_SMEM,
        fp64_flops=82.6 * T / 64,  # 1/64 of fp32 (Programming Guide, cc 8.9)
        fp32_flops=82.6 * T,  # whitepaper: 82.6 TFLOPS
        tf32_tensor_flops=82.6 * T,  # whitepaper: TF32 82.6 (165.2 sparse)
        # whitepaper: FP16/BF16 with FP32 accumulate 165.2 (330.4 sparse); torch accumulates in fp32
        fp16_tensor_flops=165.2 * T, bf16_tensor_flops=165.2 * T,
        fp8_tensor_flops=330.3 * T,  # whitepaper: FP8 with FP32 accumulate 330.3 (660.6 sparse)
        int8_tensor_ops=660.6 * T,  # whitepaper: INT8 660.6 TOPS (1,321.2 sparse)
        source=_ADA_WP,
    ),
    "B200": GpuSpec(
        key="B200", name="NVIDIA B200 180GB (HGX)", arch="blackwell", compute_capability="10.0",
        sm_count=148,  # not on the datasheet: multiProcessorCount reported on B200 (third-party reports)
        boost_clock_mhz=None,  # not published
        memory_bytes=180 * GB, dram_bytes_per_s=7.7 * T,  # HGX B200 per GPU: 180 GB HBM3e, 7.7 TB/s
        l2_bytes=_B200_L2, smem_per_sm_bytes=_BLACKWELL_SMEM,
        fp64_flops=37 * T,  # HGX B200: FP64/FP64 Tensor Core 37 TFLOPS (296 for 8)
        fp32_flops=75 * T,  # HGX B200: FP32 75 TFLOPS (600 for 8)
        fp64_tensor_flops=37 * T,
        tf32_tensor_flops=1.1 * P,  # HGX B200: TF32 2.2 PFLOPS with sparsity
        fp16_tensor_flops=2.25 * P, bf16_tensor_flops=2.25 * P,  # 4.5 PFLOPS with sparsity
        fp8_tensor_flops=4.5 * P,  # FP8/FP6 9 PFLOPS with sparsity
        fp4_tensor_flops=9 * P,  # FP4 18 PFLOPS with sparsity
        int8_tensor_ops=4.5 * P,  # INT8 9 POPS with sparsity
        source=_B200_DS,
    ),
    "GB200": GpuSpec(
        key="GB200", name="NVIDIA GB200 (B200 in Grace Blackwell, 1,200 W)", arch="blackwell",
        compute_capability="10.0", sm_count=148, boost_clock_mhz=None,
        memory_bytes=186 * GB, dram_bytes_per_s=8 * T,  # GB200 NVL72 per GPU: 186 GB HBM3e, 8 TB/s
        l2_bytes=_B200_L2, smem_per_sm_bytes=_BLACKWELL_SMEM,
        fp64_flops=40 * T, fp32_flops=80 * T,  # GB200 NVL72 per GPU: FP64 40, FP32 80 TFLOPS
        fp64_tensor_flops=40 * T,
        tf32_tensor_flops=1.25 * P,  # TF32 2.5 PFLOPS with sparsity
        fp16_tensor_flops=2.5 * P, bf16_tensor_flops=2.5 * P,  # 5 PFLOPS with sparsity
        fp8_tensor_flops=5 * P,  # FP8/FP6 10 PFLOPS with sparsity
        fp4_tensor_flops=10 * P,  # FP4 20 PFLOPS with sparsity
        int8_tensor_ops=5 * P,  # INT8 10 POPS with sparsity
        source=_GB200_DS,
    ),
    "B300": GpuSpec(
        key="B300", name="NVIDIA B300 (Blackwell Ultra, HGX)", arch="blackwell-ultra",
        compute_capability="10.3",
        sm_count=160,  # Blackwell Ultra blog: 160 SMs in the full implementation (products may enable fewer)
        boost_clock_mhz=None,  # not published
        memory_bytes=288 * GB, dram_bytes_per_s=8 * T,  # blog: 288 GB HBM3e, 8 TB/s per GPU
        l2_bytes=_B200_L2,  # not published; assumed as B200
        smem_per_sm_bytes=_BLACKWELL_SMEM,
        fp64_flops=1.25 * T, fp64_tensor_flops=1.25 * T,  # HGX B300: FP64 10 TFLOPS for 8 GPUs
        fp32_flops=75 * T,  # HGX B300: FP32 600 TFLOPS for 8 GPUs
        tf32_tensor_flops=1.125 * P,  # HGX B300: TF32 18 PFLOPS with sparsity for 8 GPUs
        fp16_tensor_flops=2.25 * P, bf16_tensor_flops=2.25 * P,  # 36 PFLOPS with sparsity for 8
        fp8_tensor_flops=4.5 * P,  # FP8/FP6 72 PFLOPS with sparsity for 8
        fp4_tensor_flops=13.5 * P,  # FP4 108 PFLOPS dense for 8 (144 with sparsity)
        int8_tensor_ops=0.125 * P,  # INT8 2 POPS with sparsity for 8 (INT8 was cut on Blackwell Ultra)
        source=_B300_DS,
    ),
}
"""Datasheet peaks by table key."""

# NVML / torch device names to table keys. First match wins, so specific patterns come first.
_NAME_PATTERNS: list[tuple[str, str]] = [
    (r"gh200", ""),  # Grace Hopper: memory differs by SKU (96 GB HBM3 or 144 GB HBM3e); not in the table
    (r"h200.*nvl|h200-nvl", "H200-NVL"),
    (r"h200", "H200"),
    (r"h100.*nvl|h100-nvl", "H100-NVL"),
    (r"h100.*pcie|h100-pcie", "H100-PCIe"),
    (r"h100", "H100-SXM"),  # "NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"
    (r"gb300", ""),  # not in the table
    (r"b300", "B300"),  # "NVIDIA B300 SXM6 AC"
    (r"gb200", "GB200"),
    (r"b200", "B200"),
    (r"a100.*(80gb.*pcie|pcie.*80gb)", "A100-PCIe-80GB"),  # "NVIDIA A100 80GB PCIe"
    (r"a100.*80gb", "A100-SXM-80GB"),  # "NVIDIA A100-SXM4-80GB"
    (r"a100", "A100-40GB"),  # "NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"
    (r"l40s", "L40S"),
    (r"rtx 4090|rtx-4090|rtx4090", "RTX-4090"),
]


def match_spec(name: str) -> GpuSpec | None:
    """The datasheet entry for a GPU name as NVML or torch reports it, or a table key.

    Parameters
    ----------
    name
        For example ``"NVIDIA H200"``, ``"NVIDIA H100 80GB HBM3"``, ``"NVIDIA A100-SXM4-80GB"`` or
        ``"B200"``.

    Returns
    -------
    GpuSpec | None
        None for a GPU the table does not hold.
    """
    if name in GPU_SPECS:
        return GPU_SPECS[name]
    lowered = name.strip().lower()
    for key, spec in GPU_SPECS.items():
        if lowered == key.lower():
            return spec
    for pattern, key in _NAME_PATTERNS:
        if re.search(pattern, lowered):
            return GPU_SPECS.get(key) if key else None
    return None


# -- peaks ---------------------------------------------------------------------------------------------


class Peaks(HardwareModel):
    """The ceilings a speed-of-light estimate divides by, and where they came from."""

    gpu: str
    """The GPU's name (as the caller gave it)."""
    source: str
    """``datasheet:<table key>`` or ``calibrated:<GPU name>``."""
    dram_bytes_per_s: float
    tensor_flops: dict[str, float] = Field(default_factory=dict)
    """Tensor-core rates by precision class: fp64, tf32, fp16, bf16, fp8, fp4, int8 (absent: no such
    tensor cores, or unknown)."""
    fp32_flops: float
    """CUDA-core fp32 rate: other FLOPs, fp32 matrix products and anything without tensor cores."""
    fp64_flops: float | None = None
    """CUDA-core fp64 rate."""
    l2_bytes: int | None = None
    spec_key: str | None = None
    """The datasheet entry behind these peaks, if any."""
    notes: list[str] = Field(default_factory=list)


def datasheet_peaks(spec: GpuSpec, gpu: str | None = None) -> Peaks:
    """The datasheet numbers of ``spec`` as :class:`Peaks`."""
    return Peaks(
        gpu=gpu or spec.name,
        source=f"datasheet:{spec.key}",
        dram_bytes_per_s=spec.dram_bytes_per_s,
        tensor_flops=spec.tensor_peaks(),
        fp32_flops=spec.fp32_flops,
        fp64_flops=spec.fp64_flops,
        l2_bytes=spec.l2_bytes,
        spec_key=spec.key,
    )


def default_calibration_dir() -> Path:
    from solforge.problems.config import cache_dir

    return cache_dir() / "calibration"


def gpu_slug(name: str) -> str:
    """A file-name-safe form of a GPU name: ``"NVIDIA H100 80GB HBM3"`` -> ``nvidia-h100-80gb-hbm3``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


# -- NVML ---------------------------------------------------------------------------------------------


class GpuInfo(HardwareModel):
    """One GPU as NVML sees it."""

    index: int
    """NVML (physical) index; CUDA_VISIBLE_DEVICES does not renumber it."""
    name: str
    uuid: str
    driver: str
    cuda_driver_version: str | None = None
    """The CUDA version the driver supports, for example ``13.0``."""
    compute_capability: str | None = None
    memory_total_bytes: int
    memory_used_bytes: int
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    spec_key: str | None = None
    """The datasheet entry :func:`match_spec` finds for this GPU."""


@contextlib.contextmanager
def _nvml() -> Iterator[Any | None]:
    """Yield the pynvml module with NVML initialised, or None without a driver (or without pynvml)."""
    try:
        import pynvml
    except ImportError:
        yield None
        return
    try:
        pynvml.nvmlInit()
    except Exception:  # pynvml.NVMLError and subclasses: no library, no driver, no device
        yield None
        return
    try:
        yield pynvml
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def cpus_of_mask(words: Any) -> set[int]:
    """The CPU numbers set in NVML's CPU-affinity words (64 CPUs per word, lowest first)."""
    return {64 * w + bit for w, word in enumerate(words) for bit in range(64) if int(word) >> bit & 1}


def gpu_local_cpus(index: int) -> set[int] | None:
    """The CPUs nearest physical GPU ``index`` (NVML's CPU affinity: its NUMA node), among those this
    process may run on. None when NVML cannot tell, or when every allowed CPU is as near (one node)."""
    allowed = os.sched_getaffinity(0)
    with _nvml() as nv:
        if nv is None:
            return None
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            words = nv.nvmlDeviceGetCpuAffinity(handle, (max(allowed) // 64) + 1)
        except Exception:
            return None
    local = cpus_of_mask(words) & allowed
    return local if local and local != allowed else None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _try(fn: Any, *args: Any) -> Any:
    """Call an NVML query, None when this GPU or driver does not support it."""
    try:
        return fn(*args)
    except Exception:  # NVMLError_NotSupported and friends: the field is optional
        return None


def _visible_index(nv: Any) -> int:
    """The NVML index of the first GPU CUDA_VISIBLE_DEVICES names (0 when unset)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if not visible:
        return 0
    if visible.isdigit():
        return int(visible)
    for i in range(nv.nvmlDeviceGetCount()):
        uuid = _text(_try(nv.nvmlDeviceGetUUID, nv.nvmlDeviceGetHandleByIndex(i)) or "")
        if uuid.startswith(visible):  # CUDA accepts UUID prefixes
            return i
    return 0


def detect_gpu(index: int | None = None) -> GpuInfo | None:
    """Describe one NVIDIA GPU through NVML.

    Parameters
    ----------
    index
        NVML (physical) index; None takes the first GPU ``CUDA_VISIBLE_DEVICES`` names, else 0.

    Returns
    -------
    GpuInfo | None
        None when pynvml, the driver or the GPU is missing.
    """
    with _nvml() as nv:
        if nv is None:
            return None
        try:
            if index is None:
                index = _visible_index(nv)
            if index >= nv.nvmlDeviceGetCount():
                return None
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            name = _text(nv.nvmlDeviceGetName(handle))
            memory = nv.nvmlDeviceGetMemoryInfo(handle)
        except Exception:  # the device vanished or NVML refused: treat as no GPU
            return None
        cc = _try(nv.nvmlDeviceGetCudaComputeCapability, handle)
        cuda = _try(nv.nvmlSystemGetCudaDriverVersion)
        power = _try(nv.nvmlDeviceGetPowerUsage, handle)
        limit = _try(nv.nvmlDeviceGetEnforcedPowerLimit, handle)
        spec = match_spec(name)
        return GpuInfo(
            index=index,
            name=name,
            uuid=_text(_try(nv.nvmlDeviceGetUUID, handle) or ""),
            driver=_text(_try(nv.nvmlSystemGetDriverVersion) or "unknown"),
            cuda_driver_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None,
            compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
            memory_total_bytes=int(memory.total),
            memory_used_bytes=int(memory.used),
            sm_clock_mhz=_try(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_SM),
            mem_clock_mhz=_try(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_MEM),
            max_sm_clock_mhz=_try(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_SM),
            max_mem_clock_mhz=_try(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_MEM),
            temperature_c=_try(nv.nvmlDeviceGetTemperature, handle, nv.NVML_TEMPERATURE_GPU),
            power_w=power / 1000 if isinstance(power, int | float) else None,
            power_limit_w=limit / 1000 if isinstance(limit, int | float) else None,
            spec_key=spec.key if spec is not None else None,
        )


# nvmlClocksEventReason* bits (nvml.h; stable across driver versions).
_REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
_BAD_REASONS = frozenset({"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"})
"""Throttling that makes timings untrustworthy (thermal or hardware slowdown). A software power cap
is reported but tolerated: a GPU under a long heavy kernel reaches it routinely."""

TEMPERATURE_LIMIT_C = 87
"""Fallback slowdown temperature when NVML does not report the GPU's own threshold: H100/H200 start
thermal slowdown around 87-90 C, so timings above this are suspect."""


class GpuHealth(HardwareModel):
    """Whether a GPU is fit to time kernels on right now, and why not."""

    index: int
    name: str | None = None
    ok: bool
    reason: str = ""
    """Empty when ok; else the first problem found, in words."""
    warnings: list[str] = Field(default_factory=list)
    temperature_c: int | None = None
    slowdown_temperature_c: int | None = None
    throttle_reasons: list[str] = Field(default_factory=list)
    sm_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    ecc_uncorrected_volatile: int | None = None
    """Uncorrectable ECC errors since the driver loaded (any is fatal to results)."""
    retired_pages_pending: bool | None = None
    remapped_rows_pending: bool | None = None
    remapping_failed: bool | None = None


def check_health(index: int | None = None) -> GpuHealth:
    """Read temperature, throttling, ECC and memory-repair state of one GPU.

    Parameters
    ----------
    index
        NVML (physical) index; None as :func:`detect_gpu`.

    Returns
    -------
    GpuHealth
        ``ok`` False, with the reason, when there is no GPU or driver, the GPU is thermally or
        hardware throttled, hotter than its slowdown threshold, has uncorrected ECC errors or
        pending page retirement / row remapping (which need a GPU reset).
    """
    with _nvml() as nv:
        if nv is None:
            return GpuHealth(index=index if index is not None else 0, ok=False, reason="no NVIDIA driver or GPU (NVML unavailable)")
        try:
            if index is None:
                index = _visible_index(nv)
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            name = _text(nv.nvmlDeviceGetName(handle))
        except Exception as exc:  # a GPU that fell off the bus answers with an NVML error
            return GpuHealth(index=index or 0, ok=False, reason=f"NVML cannot open GPU {index}: {exc}")
        problems: list[str] = []
        warnings: list[str] = []
        temperature = _try(nv.nvmlDeviceGetTemperature, handle, nv.NVML_TEMPERATURE_GPU)
        slowdown = _try(nv.nvmlDeviceGetTemperatureThreshold, handle, nv.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
        limit = slowdown if isinstance(slowdown, int) and slowdown > 0 else TEMPERATURE_LIMIT_C
        if isinstance(temperature, int) and temperature >= limit:
            problems.append(f"temperature {temperature} C is at or above the slowdown threshold {limit} C")
        getter = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = _try(getter, handle)
        reasons = [label for bit, label in _REASON_BITS.items() if isinstance(mask, int) and mask & bit]
        bad = [r for r in reasons if r in _BAD_REASONS]
        if bad:
            problems.append(f"clocks throttled: {', '.join(bad)}")
        if "sw_power_cap" in reasons:
            warnings.append("clocks limited by the software power cap")
        ecc = _try(nv.nvmlDeviceGetTotalEccErrors, handle, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC)
        if isinstance(ecc, int) and ecc > 0:
            problems.append(f"{ecc} uncorrected ECC errors since the driver loaded")
        pending_pages = _try(nv.nvmlDeviceGetRetiredPagesPendingStatus, handle)
        if pending_pages:
            problems.append("retired memory pages are pending: the GPU needs a reset")
        remap = _try(nv.nvmlDeviceGetRemappedRows, handle)  # (corrected, uncorrected, pending, failed)
        remap_pending = bool(remap[2]) if remap else None
        remap_failed = bool(remap[3]) if remap else None
        if remap_pending:
            problems.append("memory row remapping is pending: the GPU needs a reset")
        if remap_failed:
            problems.append("memory row remapping failed: the GPU needs service")
        return GpuHealth(
            index=index,
            name=name,
            ok=not problems,
            reason="; ".join(problems),
            warnings=warnings,
            temperature_c=temperature if isinstance(temperature, int) else None,
            slowdown_temperature_c=slowdown if isinstance(slowdown, int) else None,
            throttle_reasons=reasons,
            sm_clock_mhz=_try(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_SM),
            max_sm_clock_mhz=_try(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_SM),
            ecc_uncorrected_volatile=ecc if isinstance(ecc, int) else None,
            retired_pages_pending=bool(pending_pages) if pending_pages is not None else None,
            remapped_rows_pending=remap_pending,
            remapping_failed=remap_failed,
        )
