"""T3 against today's software overlap (Flux, PyTorch async-TP, FlashOverlap, DMA-engine
collectives, NVLS) on today's GPUs and fabrics: ``python -m system_model peers``."""

from .platforms import PLATFORMS, Platform, platform
from .schemes import PEER_SCHEMES, PeerConfig, PeerResult, evaluate_peers

__all__ = ["PLATFORMS", "Platform", "platform", "PEER_SCHEMES", "PeerConfig", "PeerResult", "evaluate_peers"]
