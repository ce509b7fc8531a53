"""A bench memory behind a fixed-latency read port (``rtl.ports.ReadPortSignature``)."""

from __future__ import annotations

import random
from collections import deque

__all__ = ["BenchMemory", "ReadPortResponder"]


class BenchMemory:
    """Word-addressed memory of ``2**addr_width`` random words, reproducible from ``rng``."""

    def __init__(self, rng: random.Random, *, addr_width: int, data_width: int):
        if addr_width > 16:
            raise ValueError(f"addr_width must be between 1 and 16 for a bench memory, not {addr_width}")
        self.data_width = data_width
        self.words = [rng.getrandbits(data_width) for _ in range(1 << addr_width)]
        self.mask = (1 << addr_width) - 1

    def __call__(self, addr: int) -> int:
        return self.words[addr & self.mask]


class ReadPortResponder:
    """Answers ``<prefix>__en/__addr`` with ``<prefix>__data`` exactly ``latency`` cycles later.

    In every cycle without a returning read it drives random bits, so a DUT that samples
    ``data`` at the wrong cycle reads garbage and fails its checks.
    """

    def __init__(self, dut, prefix: str, memory: BenchMemory, rng: random.Random, *, latency: int):
        self.en = getattr(dut, f"{prefix}__en")
        self.addr = getattr(dut, f"{prefix}__addr")
        self.data = getattr(dut, f"{prefix}__data")
        self.memory = memory
        self.rng = rng
        self.pipeline: deque[int | None] = deque([None] * latency, maxlen=latency)
        self.reads = 0

    def drive(self) -> None:
        """Right after the edge: put the read issued ``latency`` cycles ago on ``data``."""
        addr = self.pipeline[0]
        word = self.memory(addr) if addr is not None else self.rng.getrandbits(self.memory.data_width)
        self.data.value = word

    def sample(self) -> tuple[int, int | None]:
        """In the read-only phase: record this cycle's read, if any; return ``(en, addr)``."""
        en = int(self.en.value)
        addr = int(self.addr.value) if en else None
        self.pipeline.append(addr)  # maxlen drops the read answered in this cycle
        self.reads += en
        return en, addr
