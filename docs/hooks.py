"""MkDocs hooks: the reference pages generated from the code, and the results included from
``sim_results/`` rather than copied.

* ``<!-- include: sim_results/NAME.md -->`` on a line of its own is replaced by that file as
  it is committed (``make report``, ``make peers``, ``make bench`` ... write them), so a
  results page never disagrees with the results.
* The figures in ``sim_results/`` (PNG, SVG) are served under ``results/``.
* ``reference/cli.md``, ``reference/hardware-file.md``, ``reference/model-file.md`` and
  ``reference/outputs.md`` are written from the argparse parser, the description
  dataclasses (their docstrings, defaults and the bounds their checks enforce) and the
  output columns' table (``system_model.studies.columns``).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

INCLUDE = re.compile(r"^<!-- include: (sim_results/[\w.-]+\.md) -->$", re.MULTILINE)


def on_files(files, config):
    for path in sorted((REPO / "sim_results").glob("*")):
        if path.suffix in (".png", ".svg"):
            files.append(File.generated(config, f"results/{path.name}", abs_src_path=str(path)))
    for name, text in reference_pages().items():
        files.append(File.generated(config, f"reference/{name}", content=text))
    return files


def on_page_markdown(markdown, page, config, files):
    def include(match):
        path = REPO / match.group(1)
        if not path.is_file():
            raise FileNotFoundError(f"{page.file.src_uri}: includes {match.group(1)}, which does not exist")
        return demote(path.read_text())
    return INCLUDE.sub(include, markdown)


def demote(markdown: str) -> str:
    """An included file's headings one level down, under the page's own title."""
    out, fence = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fence = not fence
        out.append("#" + line if not fence and re.match(r"^#{1,5} ", line) else line)
    return "\n".join(out) + "\n"


# -- reference pages --------------------------------------------------------------------------

def reference_pages() -> dict[str, str]:
    return {"cli.md": cli_reference(), "hardware-file.md": hardware_reference(), "model-file.md": model_reference(),
            "outputs.md": outputs_reference(), "ports.md": ports_reference()}


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def cli_reference() -> str:
    from system_model.cli import _parser

    parser = _parser()
    lines = ["# `t3-model` command line", "",
             "Generated from the command's own parser (`system_model/cli.py`). `t3-model` is the same as "
             "`python -m system_model`; with no command it runs `report`. A bad option prints one line "
             "and exits 2 before any work is done.", ""]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    helps = {c.dest: c.help for c in sub._choices_actions}
    for name, command in sub.choices.items():
        lines += [f"## `t3-model {name}`", "", helps.get(name, "") + ".", ""]
        if command.description:
            lines += [command.description, ""]
        lines += ["| option | meaning | default |", "|---|---|---|"]
        for action in command._actions:
            if action.dest == "help":
                continue
            flags = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
            if action.choices and not isinstance(action.choices, dict):
                flags += " {" + ", ".join(map(str, action.choices)) + "}"
            default = "" if action.default in (None, False, [], argparse_suppress()) else f"`{action.default}`"
            text = (action.help or "").replace("%(default)s", str(action.default)).replace("%%", "%")
            lines.append(f"| {flags} | {_cell(text)} | {_cell(default)} |")
        lines.append("")
    return "\n".join(lines)


def argparse_suppress():
    import argparse
    return argparse.SUPPRESS


def _attributes(cls) -> dict[str, str]:
    """The numpydoc ``Attributes`` of a class docstring: name -> text."""
    doc = cls.__doc__ or ""
    out, name = {}, None
    in_attributes = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped == "Attributes":
            in_attributes = True
            continue
        if not in_attributes or stripped.startswith("---"):
            continue
        match = re.match(r"^    (\w+)(?:, \w+)* : ", line)
        if match:
            name = match.group(1)
            out[name] = ""
        elif name and stripped:
            out[name] = (out[name] + " " + stripped).strip()
    # A shared entry ("tile_m, tile_n : int") gives each name the same text.
    for line in doc.splitlines():
        match = re.match(r"^    (\w+(?:, \w+)+) : ", line)
        if match:
            names = match.group(1).split(", ")
            for other in names[1:]:
                out[other] = out[names[0]]
    return out


def _bounds(instance, field: str) -> str:
    """The bounds the class's own checks enforce, read from the errors they raise."""
    value = getattr(instance, field)
    if isinstance(value, str):                        # a choice: its message lists the allowed values
        try:
            dataclasses.replace(instance, **{field: "?"})
        except (ValueError, TypeError) as error:
            match = re.search(rf"{field} must be (.+?)(?:, not |$)", str(error))
            return match.group(1) if match else ""
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    found = []
    for probe in (-1e300, 1e300, -1, 0):
        try:
            dataclasses.replace(instance, **{field: type(value)(probe) if isinstance(value, int) else probe})
        except (ValueError, TypeError, OverflowError) as error:
            match = re.search(rf"{field} must be (.+?)(?:, not |$)", str(error))
            if match and match.group(1) not in found:
                found.append(match.group(1))
    return "; ".join(found)


def _plain(text: str) -> str:
    """Docstring markup as plain text (``:data:`X``` -> X, ````x```` -> `x`)."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _field_table(cls, instance) -> list[str]:
    described = {k: _plain(v) for k, v in _attributes(cls).items()}
    lines = ["| field | meaning | default | checked |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        default = "required" if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING \
            else f"`{f.default!r}`" if f.default is not dataclasses.MISSING else "(a list)"
        lines.append(f"| `{f.name}` | {_cell(described.get(f.name, ''))} | {default} | "
                     f"{_cell(_bounds(instance, f.name))} |")
    return lines


def hardware_reference() -> str:
    from system_model.describe.fabric import FabricConfig
    from system_model.describe.files import RENAMED
    from system_model.describe.hardware import GpuConfig
    from system_model.describe.kernels import GemmKernelConfig
    from system_model.describe.presets import DESCRIPTIONS
    from system_model.describe.transport import TransportConfig

    h = DESCRIPTIONS["h100-sxm"]
    lines = ["# Hardware file (TOML)", "",
             "Generated from the description classes: each field's meaning from the class's docstring, its default, "
             "and the bounds its own check enforces (read from the error it raises). Start from a preset: "
             "`t3-model show-preset h100-sxm > my_gpu.toml`, give it its own `name`, edit it, and pass "
             "`--hardware-file my_gpu.toml`. The same names are the sweep's axes (`--axis NAME=...`), with the "
             "same meaning (tested: `tests/test_field_meaning.py`). An unknown key, a missing one or a value out "
             "of bounds is refused in one line naming the file, the field and the bound.", "",
             "Top-level keys: `name` (results are named after it), `description`, `t3_blocks` (may the T3 "
             "schemes run; `report`, `sweep` and `sensitivity` refuse a file with `false`), then the tables "
             "below and `[sources]` (a source for each figure).", ""]
    if RENAMED:
        lines += ["Renamed fields (the old name is refused with the new one): "
                  + "; ".join(f"`{old}` is now `{new}` ({why})" for old, (new, why) in RENAMED.items()) + ".", ""]
    for title, cls, instance in (("[gpu]", GpuConfig, h.gpu), ("[fabric]", FabricConfig, h.fabric),
                                 ("[transport]", TransportConfig, h.transport),
                                 ("[[kernels]] (one table per GEMM kernel of the library)", GemmKernelConfig,
                                  h.kernels[0])):
        lines += [f"## {title}", "", (cls.__doc__ or "").strip().splitlines()[0], ""]
        lines += _field_table(cls, instance) + [""]
    return "\n".join(lines)


def model_reference() -> str:
    from system_model.describe import files

    doc = files.__doc__ or ""
    lines = ["# Model file (TOML)", "",
             "Generated from `system_model/describe/files.py`: a Transformer model for `--model-file`. "
             "Mixture-of-experts layers cannot be described (the model has one dense MLP per layer; a "
             "grouped-query attention is `kv_heads` below `heads`).", "", "```text", doc.strip(), "```", ""]
    return "\n".join(lines)


def outputs_reference() -> str:
    from system_model.studies.columns import COLUMNS, PATTERNS

    lines = ["# Output columns", "",
             "Generated from `system_model/studies/columns.py`, which a test holds to every column the "
             "commands write. Times are microseconds, traffic megabytes (10^6 bytes), speedups are over the "
             "sequential scheme (>1 is faster).", ""]
    for table, columns in COLUMNS.items():
        lines += [f"## `{table}`", "", "| column | meaning |", "|---|---|"]
        lines += [f"| `{name}` | {_cell(text)} |" for name, text in columns.items()]
        for pattern, text in PATTERNS.get(table, {}).items():
            lines.append(f"| `{pattern}` | {_cell(text)} |")
        lines.append("")
    return "\n".join(lines)


def ports_reference() -> str:
    """Every generatable block's ports, from its Amaranth signature; stream payloads laid out
    field by field (bit offsets from the Amaranth layouts, as the flat Verilog buses carry them)."""
    from rtl.flow.field_map import block_ports
    from rtl.flow.generate import PAPER_CONFIG, read_config

    lines = ["# Ports and payloads", "",
             "Generated from each block's Amaranth signature at the paper's sizes (`rtl/flow/paper.toml`), the "
             "modules `make verilog` writes; `make verilog CONFIG=file` writes other sizes with the same map "
             "beside each module (`build/verilog/<block>.ports.json` and `.md`). In the Verilog a stream is "
             "`<name>__valid`, `<name>__ready` and `<name>__payload`, and a structured payload is one flat bus "
             "whose bits are laid out as the table says (bit 0 first).", ""]
    for block in block_ports(overrides=read_config(PAPER_CONFIG)):
        params = ", ".join(f"`{k}={v!r}`" for k, v in block["params"].items()) or "its defaults"
        lines += [f"## `{block['name']}`", "", f"Parameters: {params}.", "",
                  "| port | direction | width | fields (bits) |", "|---|---|---|---|"]
        for port in block["ports"]:
            fields = "; ".join(f"`{f['name']}` [{f['msb']}:{f['lsb']}]" for f in port["fields"])
            lines.append(f"| `{port['verilog']}` | {port['direction']} | {port['width']} | {fields} |")
        lines.append("")
    return "\n".join(lines)
