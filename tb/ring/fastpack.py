"""Fast packing of flat ``data.StructLayout`` payloads for the ring bench's hot loop.

:func:`tb.common.packing.pack` walks the Amaranth layout on every call, which costs more
than the simulator's cycle at ring scale. :class:`FlatLayout` reads the same public
layout once (field names, offsets, widths, nested structs) and then packs and unpacks
with shifts. :class:`RawLayout` lets a :class:`~tb.common.streams.StreamSource` drive an
item packed in advance: the item carries its payload word under ``"raw"`` (its other keys
are the fields, for the bench).
"""

from __future__ import annotations

from collections import namedtuple

from amaranth.lib import data

__all__ = ["FlatLayout", "RawLayout"]

_Field = namedtuple("_Field", "shape width offset")


class FlatLayout:
    def __init__(self, layout: data.StructLayout):
        self.width = data.Layout.cast(layout).size
        self.fields = []
        for name, field in layout:
            nested = FlatLayout(field.shape) if isinstance(field.shape, data.StructLayout) else None
            self.fields.append((name, field.offset, field.width, (1 << field.width) - 1, nested))

    def pack(self, values: dict) -> int:
        word = 0
        for name, offset, width, mask, nested in self.fields:
            item = values.get(name, 0)
            raw = nested.pack(item) if nested is not None and isinstance(item, dict) else int(item)
            if raw & ~mask:
                raise ValueError(f"{name} must fit in {width} bits, not {raw}")
            word |= raw << offset
        return word

    def unpack(self, word: int) -> dict:
        out = {}
        for name, offset, _width, mask, nested in self.fields:
            raw = (word >> offset) & mask
            out[name] = nested.unpack(raw) if nested is not None else raw
        return out

    def raw(self, values: dict) -> dict:
        """``values`` with its packed word under ``"raw"``, for a source built on :meth:`as_raw`."""
        return {**values, "raw": self.pack(values)}

    def as_raw(self) -> RawLayout:
        return RawLayout(self.width)


class RawLayout:
    """Looks like a one-field struct layout ``{"raw": width}`` to :func:`tb.common.packing.pack`."""

    def __init__(self, width: int):
        self._fields = [("raw", _Field(None, width, 0))]

    def __iter__(self):
        return iter(self._fields)
