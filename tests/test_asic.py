"""`make asic` essentials that CI can afford: the pricing arithmetic, the committed table's
coverage and freshness, and one small block mapped again and counted independently."""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtl.flow import asic
from rtl.flow.asic import ASIC_SETS, DEFAULT_LIBRARY, NOT_SILICON, main, merge_rows, reproduction_drift
from rtl.flow.asic_cost import (
    CELL_PAIRS,
    GPU_SITES,
    NODES,
    SKY130_SRAM_MACROS,
    dense_sram_um2,
    node_area_um2,
    sram_macros_for,
)
from rtl.flow.asic_map import EXCLUDED_CELL_PREFIXES, map_area, prepare_library
from rtl.flow.asic_report import markdown
from rtl.flow.generate import BLOCKS, write_verilog
from rtl.flow.synth import verilog_sha1

RESULTS = Path(__file__).resolve().parents[1] / "sim_results"
ASIC_JSON = RESULTS / "asic.json"
ARBITER_NETLIST = RESULTS / "asic_arbiter_netlist.v"
ARBITER_CELLS = RESULTS / "asic_arbiter_cells.json"
LIBRARY = Path(os.environ.get("SKY130_LIB") or DEFAULT_LIBRARY)
needs_library = pytest.mark.skipif(not LIBRARY.exists(), reason=f"the SKY130 HD library is not at {LIBRARY} "
                                   "(SKY130_LIB=...; SkyWater PDK via volare or ciel)")


def _committed() -> dict:
    return json.loads(ASIC_JSON.read_text())


@given(depth=st.integers(1, 1 << 14), width=st.integers(1, 600))
def test_the_macros_chosen_hold_the_memory_in_the_least_area(depth, width):
    macro, count = sram_macros_for(depth, width)
    assert count * macro.bits >= depth * width
    assert count == math.ceil(width / macro.width_bits) * math.ceil(depth / macro.words)
    for other in SKY130_SRAM_MACROS:
        n = math.ceil(width / other.width_bits) * math.ceil(depth / other.words)
        assert macro.area_um2 * count <= other.area_um2 * n
    # The densest macro's bit area is a lower bound on any set of published macros.
    assert dense_sram_um2(depth * width) <= macro.area_um2 * count


@pytest.mark.parametrize(("depth", "width"), [(0, 8), (8, 0), (-1, 1)])
def test_a_memory_of_no_size_is_refused(depth, width):
    with pytest.raises(ValueError, match="depth and width must be at least 1"):
        sram_macros_for(depth, width)


@given(comb=st.floats(0, 1e8), ff=st.floats(0, 1e8), bits=st.integers(0, 1 << 24),
       node=st.sampled_from(sorted(NODES)))
def test_a_node_area_range_is_ordered_and_shrinks_from_sky130(comb, ff, bits, node):
    lo, mid, hi = node_area_um2(comb, ff, bits, NODES[node])
    assert 0 <= lo <= mid <= hi
    assert hi <= comb + ff + dense_sram_um2(bits) + 1e-6


@pytest.mark.parametrize(("args", "field"), [((-1.0, 0.0, 0), "combinational_um2"), ((0.0, -1.0, 0), "flip_flop_um2"),
                                            ((0.0, 0.0, -1), "memory_bits")])
def test_a_negative_area_is_refused(args, field):
    with pytest.raises(ValueError, match=f"{field} must be at least 0"):
        node_area_um2(*args, NODES["5nm"])


def test_the_committed_per_gpu_table_and_method_are_the_codes():
    result = _committed()
    slice_row = next(r for r in result["rows"] if r["label"] == asic.SLICE_LABEL)
    assert result["per_gpu"] == asic.per_gpu(slice_row), "asic.json's per-GPU table is stale: run `make asic`"
    assert result["method"] == asic._method(), "asic.json's method is stale: run `make asic`"


def test_the_ecp5_columns_are_make_synths():
    synth = {r["label"]: r for r in json.loads((RESULTS / "synth.json").read_text())["rows"]}
    for spec in ASIC_SETS:
        row = next(r for r in _committed()["rows"] if r["label"] == spec.label)
        other = synth.get(spec.ecp5_label)
        assert row["ecp5_comparison"] == asic.ecp5_comparison(spec, row, other), spec.label
        same = other is not None and other["verilog_sha1"] == row["verilog_sha1"]
        assert row.get("ecp5_fmax_MHz") == (other["fmax_MHz"] if same else None), spec.label


def test_every_gpu_site_counts_its_presets_channels():
    from system_model.describe.presets import preset
    for site in GPU_SITES:
        assert site.channels == preset(site.preset).gpu.hbm_channels, site.preset


def test_the_committed_table_covers_every_block_of_rtl():
    result = _committed()
    rows = {r["block"] for r in result["rows"]}
    assert rows | set(result["not_silicon"]) == set(BLOCKS)
    assert not rows & set(NOT_SILICON)
    assert [r["label"] for r in result["rows"]] == [s.label for s in ASIC_SETS]


@pytest.mark.parametrize("spec", ASIC_SETS, ids=lambda s: s.label)
def test_committed_asic_row_is_of_this_design(spec, tmp_path):
    """A change detector: the committed row must be of the Verilog the tree generates."""
    row = next(r for r in _committed()["rows"] if r["label"] == spec.label)
    assert row["params"] == spec.params
    text = write_verilog(spec.block, tmp_path / f"{spec.block}.v", **spec.params).read_text()
    assert row["verilog_sha1"] == verilog_sha1(text), f"{spec.label}: asic.json is stale, run `make asic`"


def test_each_row_adds_up():
    for r in _committed()["rows"]:
        as_sram, as_ff = r["tables_as_sram"], r["tables_as_flip_flops"]
        # Taking tables out as macros removes cells and flip-flops, never adds them; a block
        # without such tables maps the same both ways.
        assert r["cells_saved_by_sram_um2"] >= 0, r["label"]
        assert as_sram["flip_flops"] <= as_ff["flip_flops"] and as_sram["cells"] <= as_ff["cells"], r["label"]
        if r["sram_table_bits"] == 0:
            assert as_sram == as_ff, r["label"]
        else:
            # About one flip-flop per table bit went (the tables' own storage; yosys removes the
            # few bits it proves constant or never read, 34 of the tracker's 10,240).
            assert as_ff["flip_flops"] - as_sram["flip_flops"] >= 0.98 * r["sram_table_bits"], r["label"]
        # It took out exactly the registered tables (a black box per bit column) and the DRAM
        # stand-in (one per column and read port).
        tables = [m for m in r["memories"] if not m["dram_stand_in"]]
        assert as_sram["sram_columns_boxed"] == sum(m["width"] for m in tables if m["registered_read"]), r["label"]
        assert r["sram_table_bits"] == sum(m["depth"] * m["width"] for m in tables if m["registered_read"])
        bank = sum(m["width"] * m["read_ports"] for m in r["memories"] if m["dram_stand_in"])
        assert as_sram["dram_columns_boxed"] == r["tables_as_flip_flops"]["dram_columns_boxed"] == bank, r["label"]
        assert r["tables_as_flip_flops"]["sram_columns_boxed"] == 0, r["label"]


def _liberty_areas(text: str) -> tuple[dict[str, float], set[str]]:
    """Every cell's area, and the cells with a clock pin (``clock : true``), read straight
    from the Liberty text: another rule than the flow's (an ``ff`` or ``latch`` group), for
    the same cells."""
    areas, clocked = {}, set()
    for chunk in re.split(r'\n\s*cell\s*\(\s*"?', text)[1:]:
        name = re.match(r"[A-Za-z0-9_]+", chunk).group(0)
        areas[name] = float(re.search(r"\barea\s*:\s*([\d.]+)", chunk).group(1))
        if re.search(r"\bclock\s*:\s*\"?true", chunk):
            clocked.add(name)
    return areas, clocked


@pytest.fixture(scope="module")
def library_text() -> str:
    raw = LIBRARY.read_bytes()
    return (gzip.decompress(raw) if LIBRARY.suffix == ".gz" else raw).decode()


@needs_library
def test_the_arbiter_maps_as_committed_and_its_cells_add_up(tmp_path, library_text):
    """The flow on a small block: the same cells as the committed netlist, and the area and
    flip-flop count that the library's own cell areas give for them."""
    prepare_library(LIBRARY, tmp_path)
    spec = next(s for s in ASIC_SETS if s.block == "memory_arbiter")
    verilog = write_verilog(spec.block, tmp_path / f"{spec.block}.v", **spec.params)
    row = map_area(verilog.name, spec.block, tmp_path, sram=False)
    fresh = (tmp_path / f"{spec.block}_ff.v").read_text()

    def cells(netlist: str) -> Counter:
        return Counter(re.findall(r"^\s*(sky130_fd_sc_hd__\w+)\s", netlist, re.MULTILINE))

    assert cells(fresh) == cells(ARBITER_NETLIST.read_text()), "the flow maps the arbiter differently: `make asic`"
    areas, clocked = _liberty_areas(library_text)
    used = cells(fresh)
    assert not any(c.startswith(EXCLUDED_CELL_PREFIXES) for c in used)
    assert row["area_um2"] == pytest.approx(sum(areas[c] * n for c, n in used.items()), abs=0.1)
    assert row["flip_flops"] == sum(n for c, n in used.items() if c in clocked) > 0
    committed = next(r for r in _committed()["rows"] if r["label"] == spec.label)["tables_as_flip_flops"]
    assert row["area_um2"] == pytest.approx(committed["area_um2"], rel=0.01)
    assert row["flip_flops"] == committed["flip_flops"]


@needs_library
def test_the_cell_pairs_and_the_committed_cell_table_quote_the_library(library_text):
    areas, clocked = _liberty_areas(library_text)
    for pair in CELL_PAIRS:
        assert areas[pair.sky130_cell] == pytest.approx(pair.sky130_um2, abs=1e-3), pair.sky130_cell
    for name, cell in json.loads(ARBITER_CELLS.read_text())["cells"].items():
        assert cell == {"area_um2": areas[name], "sequential": name in clocked}, name


def test_the_committed_arbiter_netlist_adds_up_to_its_row():
    """Without the library too: the committed netlist's cells, at the committed areas, are
    the committed row's area and flip-flops."""
    table = json.loads(ARBITER_CELLS.read_text())["cells"]
    used = Counter(re.findall(r"^\s*(sky130_fd_sc_hd__\w+)\s", ARBITER_NETLIST.read_text(), re.MULTILINE))
    assert set(used) == set(table)
    row = next(r for r in _committed()["rows"] if r["block"] == "memory_arbiter")["tables_as_flip_flops"]
    assert row["area_um2"] == pytest.approx(sum(table[c]["area_um2"] * n for c, n in used.items()), abs=0.1)
    assert row["flip_flops"] == sum(n for c, n in used.items() if table[c]["sequential"]) > 0
    assert row["cells"] == sum(used.values())


def test_merge_keeps_other_rows_in_table_order():
    first, last = ASIC_SETS[0].label, ASIC_SETS[-1].label
    old = [{"label": last, "x": 1}, {"label": first, "x": 2}, {"label": "gone", "x": 0}]
    assert merge_rows(old, [{"label": first, "x": 3}]) == [{"label": first, "x": 3}, {"label": last, "x": 1}]


@pytest.mark.parametrize(("argv", "message"), [
    (["--only", "no such block"], "--only 'no such block' matches none of: "),
    (["--only", "("], "--only is not a regular expression: "),
    (["--jobs", "0"], "--jobs must be at least 1, not 0"),
    (["--lib", "/no/such/sky130.lib"], "--lib /no/such/sky130.lib does not exist: get sky130_fd_sc_hd__tt_025C_1v80"),
    (["--lib", "/"], "--lib: / is not a readable Liberty file: "),
    (["--lib", __file__], "is not a Liberty file: no library(...) group in its first lines"),
])
def test_cli_rejects_bad_arguments_before_any_work(argv, message, tmp_path, capsys, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("work started before the arguments were checked")
    monkeypatch.setattr(asic, "prepare_library", no_work)
    monkeypatch.setattr(asic, "price_block", no_work)
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert not (tmp_path / "asic.json").exists()


def test_a_rerun_is_compared_with_the_committed_rows_of_the_same_design():
    def row(label, sha, area, clock=None):
        figures = {"area_um2": area, "sequential_area_um2": area / 2, "cells": 10, "flip_flops": 4}
        r = {"label": label, "verilog_sha1": sha, "tables_as_flip_flops": figures, "tables_as_sram": dict(figures)}
        return r | ({"clock": {"min_period_ns": clock}} if clock else {})
    old = [row("a", "1", 100.0, 5.0), row("b", "2", 100.0)]
    drift = reproduction_drift(old, [row("a", "1", 102.0, 5.0), row("b", "changed", 500.0), row("c", "3", 1.0)])
    # Only the unchanged design is compared; its areas moved 2%, its counts and clock not at all.
    assert {d[0] for d in drift} == {"a"}
    assert max(d[2] for d in drift) == pytest.approx(0.02)
    assert sorted(d[1] for d in drift if d[2] == 0) == sorted(
        ["tables_as_flip_flops.cells", "tables_as_flip_flops.flip_flops", "tables_as_sram.cells",
         "tables_as_sram.flip_flops", "clock.min_period_ns"])


def test_the_committed_markdown_is_the_committed_json_written_out():
    assert (RESULTS / "asic.md").read_text() == markdown(_committed()), "asic.md is stale: run `make asic`"


def test_the_readme_states_the_h100_overhead_that_asic_json_holds():
    h100 = next(g for g in _committed()["per_gpu"] if g["preset"] == "h100-sxm")
    readme = " ".join((RESULTS.parent / "README.md").read_text().split())
    sram, ff = h100["added_mm2_sram"], h100["added_mm2_flip_flops"]
    psram, pff = h100["added_percent_sram"], h100["added_percent_flip_flops"]
    assert (f"about {sram[1]:.2f} mm^2 with its tables as SRAM and {ff[1]:.2f} mm^2 with them as flip-flops "
            f"({min(sram[0], ff[0]):.2f}-{max(sram[2], ff[2]):.2f} over both)") in readme
    assert (f"{psram[1]:.2f}-{pff[1]:.2f}% of its {h100['die_mm2']:g} mm^2 die "
            f"({min(psram[0], pff[0]):.2f}-{max(psram[2], pff[2]):.2f}%)") in readme
