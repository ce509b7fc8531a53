"""``$readmemh`` files from Python values, shared by the fp adder's vector harness and the trace harness."""

from __future__ import annotations

import numpy as np

__all__ = ["hex_lines"]


def hex_lines(values, width: int) -> bytes:
    """One zero-padded hex line per value of up to ``width`` bits. Vectorised up to 64 bits (a
    million lines take a few tens of milliseconds, where ``np.savetxt`` takes seconds)."""
    digits = max(1, (width + 3) // 4)
    if width <= 64:
        values = np.asarray(values, dtype=np.uint64)
        shifts = np.arange(digits - 1, -1, -1, dtype=np.uint64) * np.uint64(4)
        nibbles = ((values[:, None] >> shifts) & np.uint64(15)).astype(np.intp)
        lines = np.empty((len(values), digits + 1), dtype=np.uint8)
        lines[:, :digits] = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles]
        lines[:, digits] = ord("\n")
        return lines.tobytes()
    return "".join(f"{int(v):0{digits}x}\n" for v in values).encode()
