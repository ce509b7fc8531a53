"""JEDEC timing of one HBM pseudo-channel, per standard: what the row-aware DRAM channel
(:mod:`system_model.engine.dram_banks`) schedules against.

A GPU's memory is many independent pseudo-channels (two per HBM channel). Each has bank
groups of banks, one row buffer per bank, and a data bus that moves one 32-byte burst per
``burst_cycles`` clock cycles. A 64-byte request is two bursts to consecutive columns of
one row. Every figure here is in memory clock cycles (``tCK_ns``), named as JEDEC names it,
and each preset says where its numbers come from:

* **HBM2** (2.0 Gb/s/pin): Ramulator 2's ``HBM2_2000Mbps`` timing preset and JESD235D
  secondary timings (``python/ramulator/dram/hbm2.py``), cross-checked against DRAMsim3's
  ``configs/HBM2_8Gb_x128.ini`` (the same CL, tRCD, tRP, tRAS, tRRD_S and tREFI; DRAMsim3
  has tFAW 30, tRRD_L 6 and tRFC 260 where Ramulator 2 has 15 ns, 4 ns and 350 ns).
* **HBM2e** (3.2 Gb/s/pin): no simulator ships an HBM2e preset; JESD235D's core timings in
  nanoseconds are those of HBM2 (the array is the same), so HBM2e is Ramulator 2's fastest
  HBM2 preset (``HBM2_2400Mbps``) in nanoseconds at the 3.2 Gb/s clock, rounded up to
  whole cycles. Column-to-column timings (tCCD, burst) stay in cycles.
* **HBM3** (6.4 Gb/s/pin): Ramulator 2's ``HBM3_6400Mbps`` preset, from JESD238 Table 4,
  and its tRFC for an 8 Gb channel (JESD238 Table 84). Not modelled: HBM3's tCCDR (column
  commands to the other stack ID) and tPPD (precharge to precharge), and its per-bank
  refresh: all four standards refresh all banks at once (REFab), the costlier choice.
* **HBM3e** (9.6 Gb/s/pin): JESD238's HBM3 core timings in nanoseconds at the 9.6 Gb/s
  clock (as HBM2e is derived from HBM2); the vendors' HBM3E datasheets publish rates, not
  timings.

The derived presets (HBM2e, HBM3e) are assumptions with their sensitivity stated in the
calibration table (:mod:`.calibration`): the bound they move is the random-access one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

__all__ = ["DramTiming", "DRAM_STANDARDS", "dram_timing"]


@dataclass(frozen=True)
class DramTiming:
    """One pseudo-channel of one HBM standard. Cycles are memory-clock cycles (``tCK_ns``)."""

    standard: str
    tCK_ns: float
    #: Data-bus cycles of one 32-byte burst.
    burst_cycles: int
    burst_bytes: int
    bank_groups: int
    banks_per_group: int
    row_bytes: int
    CL: int
    CWL: int
    #: ACT to read (JEDEC's tRCDRD).
    tRCD: int
    #: ACT to write (tRCDWR).
    tRCDWR: int
    tRP: int
    tRAS: int
    tRC: int
    tWR: int
    tRTP: int
    tCCD_S: int
    tCCD_L: int
    tRRD_S: int
    tRRD_L: int
    tFAW: int
    tWTR_S: int
    tWTR_L: int
    #: Read-to-write turnaround (any bank of the pseudo-channel).
    tRTW: int
    tRFC: int
    tREFI: int
    source: str = ""

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int" and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{f.name} must be a whole number of cycles >= 1, not {value!r}")
        if self.tRC < self.tRAS + self.tRP:
            raise ValueError(f"tRC must be >= tRAS + tRP ({self.tRAS + self.tRP}), not {self.tRC}")
        if self.row_bytes % (2 * self.burst_bytes):
            raise ValueError(f"row_bytes must be a multiple of a 64-byte request, not {self.row_bytes}")

    @property
    def banks(self) -> int:
        return self.bank_groups * self.banks_per_group

    @property
    def peak_bytes_per_cycle(self) -> float:
        """The data bus at full rate."""
        return self.burst_bytes / self.burst_cycles

    @property
    def peak_GBps(self) -> float:
        return self.peak_bytes_per_cycle / self.tCK_ns

    @property
    def row_requests(self) -> int:
        """64-byte requests in one row."""
        return self.row_bytes // (2 * self.burst_bytes)


def _cycles(ns: float, tCK_ns: float) -> int:
    return max(1, math.ceil(ns / tCK_ns - 1e-9))


def _scaled(base: DramTiming, *, standard: str, tCK_ns: float, source: str) -> DramTiming:
    """``base``'s core timings in nanoseconds at a faster clock; column-to-column and burst
    timings stay in cycles (they are set by the interface's prefetch, not the array)."""
    keep = {"burst_cycles", "burst_bytes", "bank_groups", "banks_per_group", "row_bytes", "tCCD_S", "tCCD_L"}
    values = {}
    for f in fields(base):
        if f.name in ("standard", "tCK_ns", "source") or f.name in keep:
            continue
        values[f.name] = _cycles(getattr(base, f.name) * base.tCK_ns, tCK_ns)
    values["tRC"] = max(values["tRC"], values["tRAS"] + values["tRP"])
    return DramTiming(standard=standard, tCK_ns=tCK_ns, source=source,
                      **{k: getattr(base, k) for k in keep}, **values)


_HBM2 = DramTiming(
    standard="HBM2", tCK_ns=1.0, burst_cycles=2, burst_bytes=32, bank_groups=4, banks_per_group=4,
    row_bytes=1024, CL=14, CWL=5, tRCD=14, tRCDWR=12, tRP=14, tRAS=34, tRC=48, tWR=16, tRTP=5, tCCD_S=2, tCCD_L=4,
    tRRD_S=4, tRRD_L=4, tFAW=15, tWTR_S=6, tWTR_L=8, tRTW=14 + 2 + 2 - 5, tRFC=350, tREFI=3900,
    source="Ramulator 2 HBM2_2000Mbps (python/ramulator/dram/hbm2.py; JESD235D): nCL/nRCD/nRP 14, nRAS 34, "
           "nRCDWR 12, nRC 48, nWR 16, nRTPL 5, nCWL 5, nCCDS/L 2/4, nWTRS/L 6/8, tRRD 4 ns, tFAW 15 ns "
           "('vendor-specific, typical'), tRFC 350 ns (8 Gb), tREFI 3.9 us, read-to-write nCL + nBL + 2 - nCWL; "
           "4 x 4 banks, 1 KB page per pseudo-channel, BL4 x 64 bit = 32 B. DRAMsim3's HBM2_8Gb_x128.ini agrees "
           "on CL, tRCD, tRP, tRAS, tRRD_S and tREFI, and differs on tFAW (30), tRRD_L (6), CWL (4) and tRFC "
           "(260): its 30-cycle tFAW halves the random-access bound; the paper study does not move with it "
           "(make dram-validation)")
_HBM2_2400 = DramTiming(
    standard="HBM2-2400", tCK_ns=0.833, burst_cycles=2, burst_bytes=32, bank_groups=4, banks_per_group=4,
    row_bytes=1024, CL=17, CWL=6, tRCD=17, tRCDWR=14, tRP=17, tRAS=40, tRC=57, tWR=19, tRTP=6, tCCD_S=2, tCCD_L=4,
    tRRD_S=5, tRRD_L=5, tFAW=19, tWTR_S=8, tWTR_L=10, tRTW=17 + 2 + 2 - 6, tRFC=421, tREFI=4682)
_HBM3 = DramTiming(
    standard="HBM3", tCK_ns=0.625, burst_cycles=2, burst_bytes=32, bank_groups=4, banks_per_group=4,
    row_bytes=1024, CL=20, CWL=10, tRCD=31, tRCDWR=15, tRP=26, tRAS=45, tRC=72, tWR=33, tRTP=9, tCCD_S=2, tCCD_L=4,
    tRRD_S=4, tRRD_L=5, tFAW=24, tWTR_S=7, tWTR_L=10, tRTW=20, tRFC=560, tREFI=6240,
    source="Ramulator 2 HBM3_6400Mbps (python/ramulator/dram/hbm3.py; JESD238 Table 4): nCL 20, nRCDRD 31, "
           "nRCDWR 15, nRP 26, nRAS 45, nRC 72, nWR 33, nRTP 9, nCWL 10, nCCDS/L 2/4, nRRDS/L 4/5, nFAW 24, "
           "nWTRS/L 7/10, nRTW 20, tRFC 350 ns for an 8 Gb channel (JESD238 Table 84), nREFI 6240; 4 x 4 banks per "
           "pseudo-channel, 1 KB page, BL8 x 32 bit = 32 B")

#: The standards a hardware file may name (``dram_standard``).
DRAM_STANDARDS: dict[str, DramTiming] = {
    "HBM2": _HBM2,
    "HBM2e": _scaled(_HBM2_2400, standard="HBM2e", tCK_ns=0.625,
                     source="derived: Ramulator 2 HBM2_2400Mbps core timings in ns (JESD235D; no HBM2e preset "
                            "exists) at 3.2 Gb/s (tCK 0.625 ns), rounded up; tCCD and bursts in cycles"),
    "HBM3": _HBM3,
    "HBM3e": _scaled(_HBM3, standard="HBM3e", tCK_ns=0.4167,
                     source="derived: JESD238 HBM3 core timings in ns (Ramulator 2 HBM3_6400Mbps) at 9.6 Gb/s "
                            "(tCK 0.4167 ns), rounded up; tCCD and bursts in cycles"),
}


def dram_timing(standard: str) -> DramTiming:
    """The pseudo-channel timing of ``standard`` (``HBM2``, ``HBM2e``, ``HBM3``, ``HBM3e``)."""
    try:
        return DRAM_STANDARDS[standard]
    except KeyError:
        raise ValueError(f"dram_standard must be one of {', '.join(DRAM_STANDARDS)}, not {standard!r}") from None
