"""The GEMM inside Triton-distributed's fused GEMM + all-reduce on NVIDIA GPUs.

Its ``gemm_ar`` layer (``layers/nvidia/gemm_allreduce_layer.py``, ``_init_ctx``, at the
commit of the published rows, c5cb9bb6) builds its Triton GEMM with one of two fixed
configurations, chosen by the largest M the layer serves:

* the low-latency kernel, M <= :data:`LOW_LATENCY_M`: ``BLOCK_SIZE_M, N, K = 32, 64, 256``,
  5 stages, 4 warps;
* otherwise ``128, 256, 64``, 4 stages, 8 warps;

both with ``GROUP_SIZE_M`` 1. The tile decides how many SMs a small-M GEMM fills: at 128
rows the low-latency kernel's 32 x 64 tiles give 320 tiles for an N of 5,120, where a
128 x 128 library tile gives 40. How fast its 32-row tile computes is not published (on
Hopper and Blackwell the warpgroup matrix instructions take 64 rows or more); the model
assumes ``PeerConfig.ll_tile_compute_efficiency`` of the matrix-core peak, and
``python -m system_model.studies.serving.ll_tile`` shows what that assumption moves.

Versions: at c5cb9bb6 the layer runs only where the switch reduces (``USE_MULTIMEM_ST`` is
fixed and its consumer loads with ``multimem.ld_reduce``); the load-based path the model
runs on other NVIDIA GPUs (``Consumer_Load``) is from later versions, which keep these tiles
but give the larger one 3 stages (at 1512a811). The model takes c5cb9bb6's, the version of
the published rows.

Here rather than in the scheme so that the GEMM's lower bound
(:attr:`~system_model.schemes.context.Sublayer.gemm_lower_bound_s`) counts the kernels the
peers run as well as the library's: no scheme's GEMM may beat it.
"""

from __future__ import annotations

from dataclasses import replace

from ..describe.kernels import GemmKernelConfig

__all__ = ["LOW_LATENCY_M", "LL_GEMM_TILE", "AR_GEMM_TILE", "triton_ar_kernel"]

#: M at or below which its GEMM + AR runs the low-latency kernel (with 16 communication CTAs;
#: ``NUM_COMM_SMS=16 if max_M <= 256 else 4`` in ``layers/nvidia/tp_attn.py`` and ``tp_mlp.py``).
LOW_LATENCY_M = 256
#: ``BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_stages`` of the low-latency kernel and of the other.
LL_GEMM_TILE = (32, 64, 256, 5)
AR_GEMM_TILE = (128, 256, 64, 4)


def triton_ar_kernel(base: GemmKernelConfig, m: int, ll_compute_efficiency: float) -> GemmKernelConfig:
    """The fused GEMM + AR's GEMM for an ``m``-row output: ``base`` (the preset's kernel: its
    element size and compute efficiency) with the layer's tile, k-depth and stages, never
    split; the low-latency tile at ``ll_compute_efficiency`` of the matrix-core peak."""
    low_latency = m <= LOW_LATENCY_M
    tm, tn, tk, stages = LL_GEMM_TILE if low_latency else AR_GEMM_TILE
    efficiency = ll_compute_efficiency if low_latency else base.compute_efficiency
    return replace(base, tile_m=tm, tile_n=tn, k_tile=tk, prefetch_stages=stages, group_rows=1, split_k=1,
                   max_split_k=1, compute_efficiency=efficiency)
