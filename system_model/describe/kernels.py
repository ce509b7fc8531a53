"""A GEMM library's kernel: the choices the paper does not give, one set per tile shape.

A hardware file lists its library's kernels (``[[kernels]]``, the large tile first); for each
GEMM the model runs the one whose modelled time is least
(:func:`system_model.kernels.gemm.choose_kernel`), as the libraries' heuristics aim to.
"""

from __future__ import annotations

from dataclasses import dataclass

from .units import check_int_range, check_range

__all__ = ["GemmKernelConfig"]


@dataclass(frozen=True)
class GemmKernelConfig:
    """Kernel choices the paper does not give.

    Attributes
    ----------
    tile_m, tile_n : int
        Macro tile per workgroup: 128 x 128, a common rocBLAS/Tensile fp16 macro tile on
        CDNA for large GEMMs. In T3 a tile is the unit the tracker counts writes for.
    k_tile : int
        Depth of one k-loop iteration (Tensile's DepthU): the k-slice a CU prefetches.
    prefetch_stages : int
        k-slices a CU's global-to-LDS pipeline holds (2: double buffering); all but the one
        being consumed are in flight, which bounds the GEMM's outstanding requests.
    group_rows : int
        Tile rows walked together, column by column, inside a stage (grouped rasterisation,
        Tensile's WorkGroupMapping of 8).
    compute_efficiency : float
        Fraction of the matrix-core peak a compute-bound tile achieves.
    bytes_per_element : int
        fp16.
    split_k : int
        Parts K is split into, each computed by its own CU (1: none). A tile's parts but the
        last store fp32 partial sums into a workspace, which the last part reads back,
        adds and stores the tile from (the "fixup" of Stream-K, arXiv 2301.03598, and of
        cuBLASLt's split-K with its reduction in the output): a tile is complete when its
        last part ends, so a fused epilogue and T3's tracked store see one store per tile.
        (The timeline credits a tile's output to its parts' waves in equal shares; its parts
        are adjacent in the dispatch order, so that is within a tile of exact.)
    max_split_k : int
        The most parts the library splits K into for a GEMM whose tiles underfill the GPU
        (fewer tiles than CUs), as cuBLASLt's split-K, hipBLASLt's GlobalSplitU and Stream-K
        (the only selection on MI350) can, 1..16. The model then tries 2, 4, 8 and 16 parts up to
        this (:func:`system_model.kernels.gemm.split_variants`) and each GEMM runs the
        fastest. 1 (the default, and every preset's): never split. Whether a library's
        heuristics split a given skinny GEMM is not known here, and the published points
        that could tell say they did not: PyTorch async-TP's 64-row matmuls on 8 x H100 take
        the time of one unsplit 128 x 128 tile per SM over the whole K (docs/model.md).
    """

    tile_m: int = 128
    tile_n: int = 128
    k_tile: int = 32
    prefetch_stages: int = 2
    group_rows: int = 8
    compute_efficiency: float = 0.8
    bytes_per_element: int = 2
    split_k: int = 1
    max_split_k: int = 1

    def __post_init__(self):
        check_int_range("tile_m", self.tile_m, 1, 4096)
        check_int_range("tile_n", self.tile_n, 1, 4096)
        check_int_range("k_tile", self.k_tile, 1, 4096)
        check_int_range("prefetch_stages", self.prefetch_stages, 2, 16)
        check_int_range("group_rows", self.group_rows, 1, 4096)
        check_range("compute_efficiency", self.compute_efficiency, 0.01, 1.0)
        check_int_range("bytes_per_element", self.bytes_per_element, 1, 8)
        check_int_range("split_k", self.split_k, 1, 64)
        check_int_range("max_split_k", self.max_split_k, 1, 16)

    def prefetch_bytes_per_cu(self, k: int) -> int:
        """Operand bytes one CU keeps in flight."""
        depth = min(self.k_tile, k)
        return (self.prefetch_stages - 1) * (self.tile_m + self.tile_n) * depth * self.bytes_per_element
