"""Pack and unpack ``data.StructLayout`` payloads as the flat integers the Verilog ports carry.

Amaranth flattens a struct-typed port into one vector; the benches reuse the *public*
port layouts of the RTL components (their interface definition, not their internals).
"""

from __future__ import annotations

from amaranth.lib import data

__all__ = ["pack", "unpack"]


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
