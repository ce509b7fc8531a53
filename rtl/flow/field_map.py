"""Port and payload field maps of the generated Verilog, from the Amaranth signatures.

The Verilog that ``make verilog`` writes flattens each port's path with ``__``
(``gemm__payload``) and each structured payload into one bus. This module lists, for a
block built with given parameters, every port with its Verilog name, direction and width,
and for a payload with an Amaranth layout, every field's bit range in that bus, so that an
integrator of another flow can connect a block without reading its Python. ``make verilog``
writes it beside each module (``<block>.ports.json`` and ``.md``) and the docs' port
reference is generated from it.
"""

from __future__ import annotations

from amaranth.hdl import Shape
from amaranth.lib import data, wiring

__all__ = ["ports", "block_ports", "ports_markdown"]


def _fields(shape, prefix: str = "", base: int = 0) -> list[dict]:
    """A layout's leaf fields with their bit range in the flat bus (nested layouts flattened
    with '.')."""
    if not isinstance(shape, data.Layout):
        return []
    out = []
    for name, field in shape:
        path = f"{prefix}{name}"
        offset = base + field.offset
        inner = field.shape if isinstance(field.shape, data.Layout) else None
        if inner is not None and not isinstance(inner, data.ArrayLayout):
            out += _fields(inner, f"{path}.", offset)
        else:
            out.append({"name": path, "lsb": offset, "msb": offset + field.width - 1, "width": field.width})
    return out


def ports(component: wiring.Component) -> list[dict]:
    """Every port of ``component``: Verilog name, direction, width, and payload fields."""
    out = []
    for path, member, _value in component.signature.flatten(component):
        shape = member.shape
        width = Shape.cast(shape).width
        out.append({"verilog": "__".join(str(p) for p in path),
                    "direction": "input" if member.flow == wiring.In else "output",
                    "width": width, "fields": _fields(shape)})
    return out


def block_ports(names: list[str] | None = None, overrides: dict | None = None) -> list[dict]:
    """Ports of the registered blocks (all, or ``names``), at their defaults updated by
    ``overrides`` (block name -> parameters)."""
    from .generate import BLOCKS, build_component

    out = []
    for name in names or list(BLOCKS):
        block = BLOCKS[name]
        asked = (overrides or {}).get(name, {})
        params = {**block.defaults, **asked}
        # The block's description names its default sizes; other sizes are the parameters'.
        doc = block.doc if not asked else f"{name} at the parameters below"
        out.append({"name": name, "doc": doc, "params": params,
                    "ports": ports(build_component(name, **params))})
    return out


def ports_markdown(block: dict) -> str:
    lines = [f"# `{block['name']}` ports", "", block["doc"] + ".", "",
             "Parameters: " + (", ".join(f"`{k}={v!r}`" for k, v in block["params"].items()) or "the defaults"), "",
             "| port | direction | width | fields (bits) |", "|---|---|---|---|"]
    for port in block["ports"]:
        fields = "; ".join(f"`{f['name']}` [{f['msb']}:{f['lsb']}]" for f in port["fields"])
        lines.append(f"| `{port['verilog']}` | {port['direction']} | {port['width']} | {fields} |")
    return "\n".join(lines) + "\n"
