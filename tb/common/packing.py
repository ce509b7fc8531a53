"""Pack and unpack ``data.StructLayout`` payloads as the flat integers the Verilog ports carry.

Amaranth flattens a struct-typed port into one vector; the benches reuse the *public*
port layouts of the RTL components (their interface definition, not their internals).
"""

from __future__ import annotations

from amaranth.lib import data

__all__ = ["pack", "unpack", "field_diff"]


def _is_struct(shape) -> bool:
    return isinstance(shape, data.StructLayout)


def pack(layout: data.StructLayout, fields: dict) -> int:
    """Return the integer whose bits hold ``fields`` at their offsets in ``layout``.

    Nested struct fields take nested dicts; missing fields are zero.
    """
    value = 0
    for name, field in layout:
        item = fields.get(name, 0)
        raw = pack(field.shape, item) if _is_struct(field.shape) and isinstance(item, dict) else int(item)
        width = field.width
        if not 0 <= raw < (1 << width):
            raise ValueError(f"{name} must fit in {width} bits, not {raw}")
        value |= raw << field.offset
    return value


def unpack(layout: data.StructLayout, value: int) -> dict:
    """Return the fields of ``layout`` held in the integer ``value`` (nested as dicts)."""
    fields = {}
    for name, field in layout:
        raw = (value >> field.offset) & ((1 << field.width) - 1)
        fields[name] = unpack(field.shape, raw) if _is_struct(field.shape) else raw
    return fields


def _flatten(fields: dict, prefix: str = "") -> dict:
    flat = {}
    for name, value in fields.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{name}."))
        else:
            flat[prefix + name] = value
    return flat


def field_diff(layout: data.StructLayout, got: int, expected: int) -> str:
    """Name the fields in which two packed values differ: ``"a.b: 1 != 2, c: 0 != 1"``."""
    g, e = _flatten(unpack(layout, got)), _flatten(unpack(layout, expected))
    return ", ".join(f"{k}: {g[k]} != {e[k]}" for k in g if g[k] != e[k])
