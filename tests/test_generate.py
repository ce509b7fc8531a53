"""Verilog generation (`make verilog`): every block converts and Icarus compiles it."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter

import pytest

from rtl.flow import generate
from rtl.flow.generate import (
    BLOCKS,
    VERILOG_CACHE_ENV,
    block_verilog,
    build_component,
    component_verilog,
    main,
    sources_digest,
    to_verilog,
    write_verilog,
)


@pytest.mark.parametrize("block", list(BLOCKS))
def test_every_block_converts_and_compiles(block, tmp_path, monkeypatch):
    monkeypatch.setenv(VERILOG_CACHE_ENV, "")  # a real conversion, never one read back
    path = write_verilog(block, tmp_path / f"{block}.v")
    text = path.read_text()
    assert f"module {block}(" in text
    if shutil.which("iverilog") is None:
        pytest.fail("iverilog is not installed: run `make test`, which installs it")
    subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "a.vvp"), str(path)], check=True)


def test_a_ring_holds_one_slice_module_that_every_gpu_instantiates():
    """The ring's Verilog (rtl.flow.compose) against Amaranth's conversion of the whole ring:
    the same top-level ports, one slice module instead of three, instantiated as slice0..2,
    and the flat ring's three slices power up with the one slice's words (what lets them
    share a module). ``gemm_ring`` and the row harness compose the same way; their benches
    compile and run the result."""
    block = "t3_ring"
    params = {"gpus": 3, "beat_width": 64, "tile_beats_log2": 2, "max_beats": 16, "depth": 64, "entries": 16,
              "commands": 16, "power_up_seed": 5}
    composed = block_verilog(block, **params)
    flat = component_verilog(build_component(block, **params), block)

    def ports(text, module=block):   # a module header's port names (yosys wraps long headers)
        header = re.search(rf"^module {module}\((.*?)\);", text, re.MULTILINE | re.DOTALL)[1]
        return sorted(name.strip() for name in header.split(","))

    def power_up(text):   # the bank's and the tracker's counts' initial words, as written
        return Counter(re.findall(r"^ *(?:bank|count_mem)\[\d+\] = \d+'h[0-9a-f]+;$", text, re.MULTILINE))

    assert ports(composed) == ports(flat)
    assert composed.count(f"\nmodule {block}_slice(") == 1 and f"module {block}_slice(" not in flat
    assert re.findall(rf"^ *{block}_slice (\S+) \(", composed, re.MULTILINE) == ["slice0", "slice1", "slice2"]
    # Every instance connects exactly the slice module's ports.
    slice_ports = ports(composed, f"{block}_slice")
    instances = re.findall(rf"^ *{block}_slice \S+ \((.*?)\n *\);", composed, re.MULTILINE | re.DOTALL)
    assert len(instances) == 3
    for pins in instances:
        assert sorted(re.findall(r"^\s*\.(\S+)\(", pins, re.MULTILINE)) == slice_ports
    assert len(composed) < len(flat) / 2
    words = power_up(composed)
    assert words and power_up(flat) == Counter({line: 3 * n for line, n in words.items()})


def test_write_verilog_keeps_mtime_when_unchanged(tmp_path):
    path = write_verilog("tracker_table", tmp_path / "t.v", entries=4)
    stamp = path.stat().st_mtime_ns
    write_verilog("tracker_table", path, entries=4)
    assert path.stat().st_mtime_ns == stamp
    write_verilog("tracker_table", path, entries=8)
    assert "module tracker_table(" in path.read_text()


def test_conversion_cache_reads_back_only_the_same_block_and_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv(VERILOG_CACHE_ENV, str(tmp_path))
    first = to_verilog("tracker_table", entries=4)
    [kept] = tmp_path.iterdir()
    assert kept.read_text() == first
    # What is read back is the kept file (marked here), not a fresh conversion.
    kept.write_text(first + "// read back\n")
    assert to_verilog("tracker_table", entries=4).endswith("// read back\n")
    assert to_verilog("tracker_table", simulation=True, entries=4).count("// read back") == 1
    # Other parameters, another block, or no cache: a conversion of its own.
    assert "read back" not in to_verilog("tracker_table", entries=8)
    assert "read back" not in to_verilog("stream_mux")
    assert len(list(tmp_path.iterdir())) == 3
    monkeypatch.setenv(VERILOG_CACHE_ENV, "")
    assert to_verilog("tracker_table", entries=4) == first


def test_conversion_key_follows_the_sources_this_process_loaded(tmp_path, monkeypatch):
    # The digest changes with any edit of any RTL source, a moved one included.
    copy = tmp_path / "rtl"
    shutil.copytree(generate._RTL_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert sources_digest(copy) == sources_digest(generate._RTL_ROOT)
    source = copy / "stream_mux.py"
    source.write_text(source.read_text().replace("a__valid", "a__valid ", 1) + "\n")
    edited = sources_digest(copy)
    assert edited != sources_digest(generate._RTL_ROOT)
    source.rename(copy / "flow" / "stream_mux.py")
    assert sources_digest(copy) not in (edited, sources_digest(generate._RTL_ROOT))
    # The key is the loaded RTL's: sources changed on disk after the import (a save during a
    # test run) neither change it nor get an old design filed under their name.
    key = generate._conversion_key("stream_mux", {})
    monkeypatch.setattr(generate, "_RTL_ROOT", copy)
    assert generate._conversion_key("stream_mux", {}) == key
    # ... while other loaded sources, another converter or another version do change it.
    monkeypatch.setattr(generate, "_LOADED_RTL_DIGEST", edited)
    assert generate._conversion_key("stream_mux", {}) != key
    monkeypatch.undo()
    monkeypatch.setenv("AMARANTH_USE_YOSYS", "another-yosys")
    assert generate._conversion_key("stream_mux", {}) != key
    monkeypatch.delenv("AMARANTH_USE_YOSYS")
    monkeypatch.setattr(generate, "_CONVERTER_VERSIONS", "amaranth 0.0")
    assert generate._conversion_key("stream_mux", {}) != key


def test_parameters_that_are_not_plain_json_are_converted_and_not_kept(tmp_path, monkeypatch):
    from amaranth.lib import data

    # A layout's repr would not describe a layout class's fields: no key, so nothing kept.
    monkeypatch.setenv(VERILOG_CACHE_ENV, str(tmp_path))
    assert "[4:0] a__payload" in to_verilog("stream_mux", payload_shape=data.StructLayout({"tag": 4, "ok": 1}))
    assert list(tmp_path.iterdir()) == []


def test_cli_writes_the_blocks_named(tmp_path, capsys):
    """The CLI's file handling (every block's conversion: test_every_block_converts_and_compiles;
    all of them through the CLI: make verilog)."""
    assert main(["--out", str(tmp_path), "stream_mux", "link_model"]) == 0
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        "link_model.ports.json", "link_model.ports.md", "link_model.v",
        "stream_mux.ports.json", "stream_mux.ports.md", "stream_mux.v"]
    assert "wrote" in capsys.readouterr().out


def test_cli_unknown_block(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "nonsense"]) == 2
    assert "unknown block 'nonsense'" in capsys.readouterr().err


def test_build_component_rejects_unknown_block():
    from rtl.flow.generate import build_component

    with pytest.raises(ValueError, match=r"^block must be one of .*tracker_table.*, not 'x'$"):
        build_component("x")


def test_a_configuration_file_sets_the_sizes_and_writes_a_port_map(tmp_path):
    """`make verilog CONFIG=file`: the module at the asked sizes, its parameters in the header,
    and a port map whose widths are the Verilog's own port widths."""
    import json
    import re

    config = tmp_path / "mine.toml"
    config.write_text("[stream_mux]\npayload_shape = 40\n\n[tracker_table]\nentries = 32\ncount_width = 6\n")
    assert main(["--out", str(tmp_path), "--config", str(config), "stream_mux", "tracker_table"]) == 0
    for block, params in (("stream_mux", {"payload_shape": 40}), ("tracker_table", {"entries": 32, "count_width": 6})):
        text = (tmp_path / f"{block}.v").read_text()
        for key, value in params.items():
            assert f"//   {key} = {value!r}" in text
        declared = {m.group(3): int(m.group(2) or 0) + 1
                    for m in re.finditer(r"^\s*(input|output)\s+(?:wire\s+|reg\s+)?(?:\[(\d+):0\]\s+)?\\?(\S+?)\s*;",
                                         text, re.M)}
        ports = json.loads((tmp_path / f"{block}.ports.json").read_text())["ports"]
        assert ports and all(declared[p["verilog"]] == p["width"] for p in ports), (block, declared)
        for port in ports:                   # fields tile the bus: no gap, no overlap
            if port["fields"]:
                bits = sorted((f["lsb"], f["msb"]) for f in port["fields"])
                assert bits[0][0] == 0 and bits[-1][1] == port["width"] - 1
                assert all(b[0] == a[1] + 1 for a, b in zip(bits, bits[1:], strict=False))
    assert "payload_shape=40" not in (tmp_path / "stream_mux.v").read_text().splitlines()[0]


def test_a_bad_configuration_is_refused_before_anything_is_written(tmp_path, capsys):
    config = tmp_path / "bad.toml"
    config.write_text("[tracker_table]\nentries = 3\n")
    assert main(["--out", str(tmp_path / "out"), "--config", str(config)]) == 2
    assert "bad.toml: [tracker_table] entries" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    config.write_text("[no_such_block]\n")
    assert main(["--out", str(tmp_path / "out"), "--config", str(config)]) == 2
    assert "is not a block" in capsys.readouterr().err


def test_the_paper_configuration_builds():
    from rtl.flow.generate import PAPER_CONFIG, read_config

    config = read_config(PAPER_CONFIG)
    assert config["tracker_table"]["entries"] == 256 and config["t3_slice"]["beat_width"] == 256
    assert config["fp_adder"]["latency"] == 5
