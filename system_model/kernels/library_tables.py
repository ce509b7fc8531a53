"""NCCL's and RCCL's own cost-model constants, as their sources give them.

Read from NVIDIA/nccl 2.30.7 (commit 5067397c, ``src/graph/tuning.cc`` and
``src/graph/topo.h``) and ROCm/rccl (commit 0cbce2a7, ``src/graph/tuning.cc``; its newer
tables in ROCm/rocm-systems ``projects/rccl`` commit 03a89144 and ``rccl_wrap.cc`` commit
006a440c). Latencies in microseconds, bandwidths in GB/s (1e9 B/s), as the sources write
them. Protocols are indexed LL, LL128, Simple, as in the sources.
"""

from __future__ import annotations

__all__ = ["PROTOCOLS", "NCCL", "RCCL", "TREE_CORRECTION_NCCL"]

PROTOCOLS = ("ll", "ll128", "simple")

#: NCCL 2.30.7. ``base``: ``baseLatencies`` (tuning.cc:148-156); ``nvlink`` / ``net``:
#: ``hwLatencies`` per step (tuning.cc:157-176); caps per GPU generation, one node
#: (``llMaxBws``: total; ``perChMaxRingLL128Bws``, ``perChMaxTreeBws``,
#: ``perChMaxTreeLL128Bws``, ``perChMaxNVLSTreeBws``: per search channel; tuning.cc:177-211,
#: index N1 / N2 / N4+ by node count); ``nvls_latency``: NVLS's intra-node hwLatency, which
#: replaces the base latency (tuning.cc:171, :384-435).
NCCL = {
    "base": {"ring": (6.6, 14.0, 8.4), "tree": (6.8, 14.0, 8.4)},
    "nvlink": {"ring": (0.6, 1.9, 3.4), "tree": (0.6, 1.25, 4.0)},
    "net": {"ring": (2.7, 4.0, 14.0), "tree": (5.0, 8.5, 14.0), "nvls_tree": 20.9},
    "nvls_latency": 25.0,
    "ll_max": {"volta": (39.0, 39.0, 20.4), "ampere": (87.7, 22.5, 19.0), "hopper": (141.0, 45.0, 35.0),
               "blackwell": (282.0, 90.0, 70.0)},
    "ring_ll128_per_channel": {"volta": (20.0, 20.0, 20.0), "ampere": (20.0, 20.0, 20.0),
                               "hopper": (36.7, 36.7, 36.7), "blackwell": (40.0, 40.0, 40.0)},
    "tree_per_channel": {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0),
                         "blackwell": (70.0, 42.8, 24.0)},
    "tree_ll128_per_channel": {"volta": (20.0, 20.0, 20.0), "ampere": (20.0, 20.0, 20.0),
                               "hopper": (36.7, 36.7, 29.0), "blackwell": (55.6, 31.67, 20.0)},
    "nvls_tree_per_channel": {"hopper": (0.0, 57.7, 45.5), "blackwell": (0.0, 96.0, 80.0)},
    # Protocol factors on the ring's bus bandwidth (tuning.cc:327-337).
    "ll_factor": 0.5, "ll128_factor": 0.92, "tree_factor": 0.92, "tree_ll_divisor": 3.8,
    "tree_ll128_factor_one_node": 7.0 / 9.0, "tree_ll128_factor_nodes": 120.0 / 128.0, "tree_pattern_factor": 0.85,
    # Multi-node ring all-reduce with Simple: "Plateau effect of ring" (tuning.cc:630-655).
    "ring_plateau": 1.4,
    # NVLS multi-node needs CollNet-class NICs; here: NVLS inside a node only, NVLS-tree beyond.
}

#: RCCL: ``baseLatencies`` (rccl tuning.cc:57-60); tuning model 5 (gfx942, MI300X) and 6
#: (gfx950), identical in these rows (rocm-systems tuning.cc, chunk 16000): ``hwLat`` of
#: the XGMI row per step. LL128 is off unless a topology model enables it (rccl
#: tuning.cc:509-517), and tree with Simple is skipped on one gfx942/gfx950 node. Not
#: taken: ``bwRatio`` (ring LL 0.08, tree 0.06-0.59), steering values that RCCL pairs with
#: its table-driven protocol and channel overrides (rccl_wrap.cc) rather than rates.
RCCL = {
    "base": {"ring": (12.0, 12.0, 17.0), "tree": (12.0, 12.0, 17.0)},
    "xgmi": {"ring": (0.8, 0.8, 2.1), "tree": (0.9, 0.9, 2.3)},
    "ll128": False,
}

#: NCCL's tree correction factors, by log2(bytes / 64), 64 B .. 256 MB (tuning.cc:623-627).
TREE_CORRECTION_NCCL = {
    "ll": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "ll128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    "simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}
