"""Seeds for randomised tests: taken from ``SEED=`` and printed, so any run replays.

The base seed comes from the ``SEED`` environment variable, or is drawn once per process.
Each test derives its own seed from the base seed and its name, so replaying one test with
``SEED=<base> pytest -k <name>`` gives the same stimulus as in the full run.
"""

from __future__ import annotations

import functools
import os
import random
import zlib

__all__ = ["base_seed", "derive_seed"]


@functools.cache
def base_seed() -> int:
    """The session's base seed: ``$SEED`` if set, else a fresh random one."""
    text = os.environ.get("SEED")
    if text is None or text == "":
        return random.SystemRandom().randrange(1, 2**31)
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"SEED must be an integer, not {text!r}") from None


def derive_seed(*names: object, base: int | None = None) -> int:
    """A stable 31-bit seed for the test identified by ``names``."""
    base = base_seed() if base is None else base
    key = ":".join([str(base), *map(str, names)]).encode()
    return zlib.crc32(key) & 0x7FFF_FFFF or 1
