"""``sim_results/asic.md`` from ``asic.json`` (:mod:`rtl.flow.asic`)."""

from __future__ import annotations

__all__ = ["markdown"]


def _um2(x: float) -> str:
    return f"{x:,.0f}"


def _range(values: list[float], digits: int = 2) -> str:
    lo, mid, hi = values
    return f"{mid:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


def markdown(result: dict) -> str:
    rows, lib = result["rows"], result["library"]
    lines = [
        f"# What T3 costs in silicon (`{lib['library']}`, pre-layout)",
        "",
        f"Library: `{lib['library']}` (file `{lib['file']}`; nominal {lib['nominal_temperature_C']:g} C, "
        f"{lib['nominal_voltage_V']:g} V), less {len(lib['excluded_cells'])} low-power isolation and probe cells. "
        "Areas are the mapped cells' (`stat -liberty`), in um^2. The reducer's `bank` stands for the DRAM T3 "
        "updates and is never counted in area (in the clock it is 16 words of flip-flops). *Tables as SRAM*: "
        "every memory with a registered read port taken out as "
        "a macro; *logic* and *flip-flops* are then the rest (FIFOs and the trigger queue, read without a "
        "register, stay flip-flops; for the trigger queue an upper bound).",
        "",
        "| block | logic | flip-flops | cells | flip-flop count | SRAM-able tables (bits) | cells they save as SRAM "
        "| as published macros | at the densest macro's bit area | all as flip-flops | clock (MHz) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        clock = r.get("clock", {}).get("fmax_MHz")
        lines.append(
            f"| {r['label']} | {_um2(r['logic_um2'])} | {_um2(r['flip_flop_um2'])} | {r['tables_as_sram']['cells']:,} "
            f"| {r['tables_as_sram']['flip_flops']:,} | {r['sram_table_bits']:,} "
            f"| {_um2(r['cells_saved_by_sram_um2'])} "
            f"| {_um2(r['sram_macros_um2'])} | {_um2(r['sram_dense_um2'])} "
            f"| {_um2(r['tables_as_flip_flops']['area_um2'])} | {clock if clock else '—'} |")
    lines += ["", "Memories (the DRAM stand-in marked):", "",
              "| block | memory | words x bits | read | macros (published) | what it holds |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        for m in r["memories"]:
            read = "registered" if m["registered_read"] else "unregistered (stays flip-flops)"
            macros = (f"{m['sram_macro_count']} x {m['sram_macro']}" if m.get("sram_macro") else
                      ("the DRAM stand-in: not counted" if m["dram_stand_in"] else "—"))
            lines.append(f"| {r['label']} | `{m['memory']}` | {m['depth']} x {m['width']} | {read} | {macros} "
                         f"| {m['purpose']} |")
    timed = [r for r in rows if r.get("clock")]
    if timed:
        lines += ["", f"Clock: Debian yosys + berkeley-abc (`abc -D {result['abc_delay_ps']}`), OpenSTA; register "
                  "to register, ideal clock, no wires, memories as flip-flops (the reducer's bank at 16 words).",
                  "The tables are timed as flip-flop arrays (their wide read multiplexers), where an SRAM would "
                  "give a macro's clock-to-output instead. The ECP5 column is `make synth`'s (LFE5U-85F, placed and "
                  "routed) where it mapped the same Verilog.",
                  "", "| block | min period (ns) | Fmax (MHz) | ECP5 Fmax (MHz) | ratio | ECP5 row |",
                  "|---|---|---|---|---|---|"]
        for r in timed:
            ecp5 = r.get("ecp5_fmax_MHz")
            ratio = f"{r['clock']['fmax_MHz'] / ecp5:.1f}x" if ecp5 else "—"
            lines.append(f"| {r['label']} | {r['clock']['min_period_ns']} | {r['clock']['fmax_MHz']} | {ecp5 or '—'} "
                         f"| {ratio} | {r.get('ecp5_comparison', '—')} |")
    lines += ["", "Blocks of `rtl/` that are not silicon T3 adds:", ""]
    lines += [f"* `{b}`: {why}" for b, why in result["not_silicon"].items()]
    method = result["method"]
    lines += ["", "## Per GPU", "",
              "One T3 slice per memory channel (the preset's `hbm_channels`; the high end of each range doubles "
              "it for pseudo-channels). SKY130 area scaled to the node: logic by the SKY130/ASAP7 cell-area ratio "
              f"({_range(method['logic_7nm_per_sky130'], 1)}: the combinational cells' geometric mean, the lowest "
              f"and highest of all; flip-flop area centrally by the flip-flop's {method['flip_flop_7nm_per_sky130']}), "
              f"times {method['n5_per_n7_logic']} for a 5 nm-class node (TSMC N5 over N7); SRAM by the N5 bit cell "
              f"({method['n5_sram_bitcell_um2']} um^2, IEDM 2019; N7's {method['n7_sram_bitcell_um2']} um^2, IEDM "
              f"2016, for 7 nm-class) over an array efficiency of "
              f"{'-'.join(str(e) for e in method['sram_array_efficiency'])} (assumed), the high end with a two-port "
              f"cell of {method['two_port_cell_factor'][0]:g}x the 6T cell (assumed). Ranges: central (low-high).",
              "", "| preset | slices | node | slice (um^2), tables as SRAM | added (mm^2), tables as SRAM "
              "| added (mm^2), tables as flip-flops | share of the die, SRAM (%) "
              "| share of the die, flip-flops (%) | die |",
              "|---|---|---|---|---|---|---|---|---|"]
    for g in result["per_gpu"]:
        share = _range(g["added_percent_sram"], 3) if g.get("added_percent_sram") else "no published area"
        share_ff = _range(g["added_percent_flip_flops"], 3) if g.get("added_percent_flip_flops") else "—"
        die = f"{g['die']}: {g['die_mm2']:g} mm^2" if g["die_mm2"] else g["die"]
        lines.append(f"| {g['preset']} | {g['slices']}-{g['slices_with_pseudo_channels']} | {g['node']} "
                     f"| {_range(g['slice_um2_sram'], 0)} | {_range(g['added_mm2_sram'], 3)} "
                     f"| {_range(g['added_mm2_flip_flops'], 3)} | {share} | {share_ff} | {die} ({g['source']}) |")
    slice_row = next((r for r in rows if r["label"] == "T3 slice"), None)
    if slice_row and result["per_gpu"]:
        bits = slice_row["sram_table_bits"] + slice_row["flip_flop_table_bits"]
        lines += ["", f"The slice's tables hold {bits:,} bits ({bits / 8192:.1f} KB); the paper sizes about "
                  f"{method['paper_tracker_bits'] / 8192:.0f} KB per memory controller. That storage alone, as SRAM at "
                  "the same node: " + "; ".join(f"{g['preset']} {_range(g['paper_tracker_storage_mm2'], 3)} mm^2"
                                                for g in result["per_gpu"]) + ". Near-memory compute placed in the "
                  f"DRAM instead: {method['hbm_pim']}."]
    lines += ["", "| function | SKY130 cell | um^2 | ASAP7 cell | um^2 | ratio |", "|---|---|---|---|---|---|"]
    lines += [f"| {p['function']} | `{p['sky130']}` | {p['sky130_um2']} | `{p['asap7']}` | {p['asap7_um2']} "
              f"| {p['ratio']} |" for p in method["cell_pairs"]]
    lines += ["", "| SRAM macro (SKY130, OpenRAM) | words x bits | um^2 | um^2 per bit | source |",
              "|---|---|---|---|---|"]
    lines += [f"| `{m['name']}` | {m['words']} x {m['width_bits']} | {_um2(m['area_um2'])} | {m['um2_per_bit']} "
              f"| {m['source']} |" for m in method["sram_macros"]]
    return "\n".join(lines) + "\n"
