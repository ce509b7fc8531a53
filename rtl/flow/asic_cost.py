"""What silicon costs beyond the mapped cells: published SRAM macros, the scaling from SKY130
to the presets' nodes, and how many T3 slices a GPU needs (``make asic``'s arithmetic).

Nothing here runs a tool; :mod:`rtl.flow.asic` maps the blocks and prices them with this.
Every figure carries its source, and every scaling its range, because a 130 nm area says
little about a 5 nm die until the method and its uncertainty are stated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["SramMacro", "SKY130_SRAM_MACROS", "sram_macros_for", "dense_sram_um2", "CellPair", "CELL_PAIRS",
           "LOGIC_7NM_PER_SKY130", "FLIP_FLOP_7NM_PER_SKY130", "N5_PER_N7_LOGIC", "N7_SRAM_BITCELL_UM2",
           "N5_SRAM_BITCELL_UM2", "SRAM_ARRAY_EFFICIENCY", "TWO_PORT_CELL_FACTOR", "Node",
           "NODES", "GpuSite", "GPU_SITES", "node_area_um2", "PAPER_TRACKER_BITS", "HBM_PIM"]


@dataclass(frozen=True)
class SramMacro:
    """A published, laid-out SKY130 SRAM macro (OpenRAM, one read-write and one read port)."""

    name: str
    words: int
    width_bits: int
    #: The macro's outline (LEF ``SIZE``), in micrometres.
    outline_x_um: float
    outline_y_um: float
    source: str

    @property
    def area_um2(self) -> float:
        return self.outline_x_um * self.outline_y_um

    @property
    def bits(self) -> int:
        return self.words * self.width_bits

    @property
    def um2_per_bit(self) -> float:
        return self.area_um2 / self.bits


#: The OpenRAM SKY130 macros the SkyWater PDK ships (``sky130_sram_macros``), smallest first.
SKY130_SRAM_MACROS = (
    SramMacro("sky130_sram_1kbyte_1rw1r_32x256_8", 256, 32, 493.38, 400.22,
              "VLSIDA/sky130_sram_macros @0178860d21d6, sky130_sram_1kbyte_1rw1r_32x256_8.lef"),
    SramMacro("sky130_sram_2kbyte_1rw1r_32x512_8", 512, 32, 659.98, 398.18,
              "efabless/sky130_sram_macros_old @30b3ead1e94f, sky130_sram_2kbyte_1rw1r_32x512_8.lef"),
    SramMacro("sky130_sram_8kbyte_1rw1r_32x2048_8", 2048, 32, 1093.82, 720.5,
              "efabless/sky130_sram_macros_old @33994aa6a781, sky130_sram_8kbyte_1rw1r_32x2048_8.lef"),
)


def sram_macros_for(depth: int, width: int) -> tuple[SramMacro, int]:
    """The published macro, and how many of it, that hold ``depth`` words of ``width`` bits in
    the least area (macros side by side for width, stacked for depth)."""
    if depth < 1 or width < 1:
        raise ValueError(f"depth and width must be at least 1, not {depth} and {width}")
    return min(((m, math.ceil(width / m.width_bits) * math.ceil(depth / m.words)) for m in SKY130_SRAM_MACROS),
               key=lambda pair: pair[0].area_um2 * pair[1])


def dense_sram_um2(bits: int) -> float:
    """``bits`` at the densest published macro's area per bit: the area a macro compiled to
    the exact size would approach if its periphery shrank with it (a lower bound)."""
    return bits * min(m.um2_per_bit for m in SKY130_SRAM_MACROS)


@dataclass(frozen=True)
class CellPair:
    """One logic function in SKY130 HD and in ASAP7 (the 7 nm predictive PDK), drive 1."""

    function: str
    sky130_cell: str
    sky130_um2: float
    asap7_cell: str
    asap7_um2: float

    @property
    def ratio(self) -> float:
        return self.sky130_um2 / self.asap7_um2


#: SKY130 areas from ``sky130_fd_sc_hd__tt_025C_1v80`` (the flow's library; tests/test_asic.py
#: checks them against it); ASAP7 from the cells' LEF outlines, 0.27 um rows
#: (The-OpenROAD-Project/asap7sc7p5t_28 @f970bd3c3292, LEF/asap7sc7p5t_28_R_1x_220121a.lef, BSD-3).
CELL_PAIRS = (
    CellPair("D flip-flop", "sky130_fd_sc_hd__dfxtp_1", 20.0192, "DFFHQNx1_ASAP7_75t_R", 1.08 * 0.27),
    CellPair("2-input NAND", "sky130_fd_sc_hd__nand2_1", 3.7536, "NAND2xp5_ASAP7_75t_R", 0.216 * 0.27),
    CellPair("inverter", "sky130_fd_sc_hd__inv_1", 3.7536, "INVx1_ASAP7_75t_R", 0.162 * 0.27),
    CellPair("2-input XOR", "sky130_fd_sc_hd__xor2_1", 8.7584, "XOR2xp5_ASAP7_75t_R", 0.486 * 0.27),
    CellPair("full adder", "sky130_fd_sc_hd__fa_1", 20.0192, "FAx1_ASAP7_75t_R", 0.756 * 0.27),
)


def _geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


#: How many times smaller a SKY130 cell is at 7 nm: (lowest, geometric mean of the
#: combinational cells, highest) over :data:`CELL_PAIRS`. The spread is the method's
#: uncertainty for a design's mix of cells; the central figure scales combinational area by
#: the combinational cells' mean and flip-flop area by the flip-flop's own ratio
#: (:data:`FLIP_FLOP_7NM_PER_SKY130`), since flip-flops are most of a slice.
LOGIC_7NM_PER_SKY130 = (min(p.ratio for p in CELL_PAIRS),
                        _geomean(p.ratio for p in CELL_PAIRS if p.function != "D flip-flop"),
                        max(p.ratio for p in CELL_PAIRS))
FLIP_FLOP_7NM_PER_SKY130 = next(p.ratio for p in CELL_PAIRS if p.function == "D flip-flop")

#: TSMC's N5 logic density over N7's: 1.8x (TSMC, "5nm Technology",
#: tsmc.com/english/dedicatedFoundry/technology/logic/l_5nm). N4/4N/4NP are N5-family nodes
#: of about the same density.
N5_PER_N7_LOGIC = 1.8

#: High-density 6T SRAM bit cells: TSMC N7, 0.027 um^2 (Wu et al., IEDM 2016, "A 7nm CMOS
#: platform technology featuring 4th generation FinFET transistors with a 0.027um2 high
#: density 6-T SRAM cell"); N5, 0.021 um^2 (Yeap et al., IEDM 2019, "5nm CMOS production
#: technology platform ... densest 0.021um2 SRAM cells").
N7_SRAM_BITCELL_UM2 = 0.027
N5_SRAM_BITCELL_UM2 = 0.021
#: The share of a small macro that is bit cells (the rest decoders, sense amplifiers, I/O),
#: for the highest, central and lowest area: an assumption, not a cited figure; the tables
#: here are 256 words deep, where the periphery weighs most.
SRAM_ARRAY_EFFICIENCY = (0.35, 0.5, 0.7)
#: The tables read and write in the same cycle: at the high end a two-port cell taken as
#: twice the 6T cell (an assumption); the central and low ends keep the 6T cell (banking).
TWO_PORT_CELL_FACTOR = (2.0, 1.0, 1.0)


@dataclass(frozen=True)
class Node:
    """A process node's area relative to SKY130: divisors of a SKY130 logic area (lowest,
    central, highest) and micrometres squared per SRAM bit (highest, central, lowest), so that
    index 0 of both gives the largest area and index 2 the smallest."""

    name: str
    logic_divisor: tuple[float, float, float]
    #: The central divisor of a SKY130 flip-flop area.
    flip_flop_divisor: float
    sram_um2_per_bit: tuple[float, float, float]


def _node(name: str, density_over_n7: float, bitcell_um2: float) -> Node:
    lo, mid, hi = LOGIC_7NM_PER_SKY130
    return Node(name, (lo * density_over_n7, mid * density_over_n7, hi * density_over_n7),
                FLIP_FLOP_7NM_PER_SKY130 * density_over_n7,
                tuple(bitcell_um2 * f / e for f, e in zip(TWO_PORT_CELL_FACTOR, SRAM_ARRAY_EFFICIENCY, strict=True)))


#: N7-class (and N6, taken at N7's density: a larger, conservative area) and N5-class nodes.
NODES = {"7nm": _node("7nm", 1.0, N7_SRAM_BITCELL_UM2), "5nm": _node("5nm", N5_PER_N7_LOGIC, N5_SRAM_BITCELL_UM2)}


def node_area_um2(combinational_um2: float, flip_flop_um2: float, memory_bits: int,
                  node: Node) -> tuple[float, float, float]:
    """(low, central, high) area at ``node`` of SKY130 cells (combinational and flip-flop
    area) plus SRAM tables of ``memory_bits``."""
    for name, value in (("combinational_um2", combinational_um2), ("flip_flop_um2", flip_flop_um2),
                        ("memory_bits", memory_bits)):
        if value < 0:
            raise ValueError(f"{name} must be at least 0, not {value}")
    d, s = node.logic_divisor, node.sram_um2_per_bit
    cells = combinational_um2 + flip_flop_um2
    return (cells / d[2] + memory_bits * s[2],
            combinational_um2 / d[1] + flip_flop_um2 / node.flip_flop_divisor + memory_bits * s[1],
            cells / d[0] + memory_bits * s[0])


@dataclass(frozen=True)
class GpuSite:
    """Where T3's slices would sit on one preset's GPU, and the die they would be added to."""

    preset: str
    #: One slice per memory channel (the preset's ``hbm_channels``); with pseudo-channels run
    #: as independent channels, twice as many (JESD235/JESD238: two per channel).
    channels: int
    node: str
    die: str
    #: The die area the slices would be added to, in mm^2; ``None`` where no vendor figure
    #: is published (then only the added area is stated).
    die_mm2: float | None
    source: str


GPU_SITES = (
    GpuSite("t3-paper", 32, "7nm", "no die (a simulated GPU); compared with Vega 20 (MI50/MI60: 4 HBM2 stacks, "
            "1 TB/s, TSMC 7 nm)", 331.0, "AMD Radeon Instinct MI50/MI60 announcement (Nov 2018): 331 mm^2, 7 nm"),
    GpuSite("h100-sxm", 80, "5nm", "GH100 (TSMC 4N)", 814.0,
            "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 814 mm^2, TSMC 4N"),
    GpuSite("mi300x", 128, "7nm", "the four I/O dies (TSMC N6), which hold the HBM3 controllers", None,
            "AMD MI300X launch material (Dec 2023): memory controllers on the N6 I/O dies; no die area published"),
    GpuSite("b200", 128, "5nm", "two reticle-limited dies (TSMC 4NP)", None,
            "NVIDIA Blackwell architecture technical brief (2024): two reticle-limited dies; no area published"),
)


#: The storage the paper sizes per memory controller: about 19 KB for 256 tracker entries
#: (about 74 B per entry; Pati et al., ASPLOS 2024). Its entry presumably holds
#: addresses and identifiers that an index-addressed table (ours) does not need.
PAPER_TRACKER_BITS = 19 * 1024 * 8

#: Near-memory compute placed in the memory instead: Samsung's HBM-PIM (Kwon et al., ISSCC
#: 2021) puts a 16-lane fp16 SIMD unit at 300 MHz beside every two banks, and a die with
#: them holds half the capacity of one without (4 Gb instead of 8 Gb; Samsung's ISSCC 2021
#: presentation as reported by Tom's Hardware, 2021-02-17).
HBM_PIM = ("Samsung HBM-PIM (Kwon et al., ISSCC 2021): 16-lane fp16 units in the DRAM dies cost half of each "
           "such die's capacity (4 Gb instead of 8 Gb per die)")
