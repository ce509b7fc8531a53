"""Load a variant of the ``rtl`` package with source patches applied (pure Python).

A variant is how the test suite keeps a known-bad design alive as a test without keeping
its code in ``rtl/``: the current sources are copied into a temporary package, each patch
replaces one exact snippet (it must occur exactly once, so a patch that no longer applies
fails loudly instead of testing the unpatched design), and the copy is imported under its
own name. The liveness check uses it to show that the first slice's coupling deadlocks.
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Patch", "load_variant", "FIRST_SLICE"]

RTL_DIR = Path(__file__).resolve().parents[2] / "rtl"


@dataclass(frozen=True)
class Patch:
    file: str   # relative to rtl/
    old: str
    new: str
    why: str = ""


def load_variant(patches: tuple[Patch, ...]):
    """Return the ``rtl`` package with ``patches`` applied, imported as a fresh package."""
    key = hashlib.sha1(repr(patches).encode()).hexdigest()[:10]
    name = f"rtl_variant_{key}"
    if name in sys.modules:
        return sys.modules[name]
    root = Path(tempfile.mkdtemp(prefix="rtl-variant-"))
    shutil.copytree(RTL_DIR, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for patch in patches:
        path = root / name / patch.file
        text = path.read_text()
        count = text.count(patch.old)
        if count != 1:
            raise ValueError(f"patch of {patch.file} must match exactly once, matched {count} times: {patch.old!r}")
        path.write_text(text.replace(patch.old, patch.new))
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(root))


#: The slice as first built (commit b39baee), re-created on today's sources: the tracker
#: back-pressures every update while its trigger queue is full (no reservation at arm), the
#: arbiter's starvation counter advances only while ``grant.ready`` is high, and the mux
#: re-chooses in every cycle. Together: the deadlock of issue 11.
FIRST_SLICE = (
    Patch("tracker.py", "self.arm.ready.eq(~clearing & Mux(arm_ok, room_2, room_1)),",
          "self.arm.ready.eq(~clearing),", "no trigger-slot reservation at arm"),
    Patch("tracker.py", "self.update.ready.eq(~clearing),",
          "self.update.ready.eq(~clearing & (queue_level + s1_valid + s2_valid < depth)),",
          "updates back-pressured on a full trigger queue"),
    Patch("arbiter.py", "with m.Elif(self.comm.valid & (wait != (1 << self._wait_width) - 1)):",
          "with m.Elif(self.comm.valid & self.grant.ready & (wait != (1 << self._wait_width) - 1)):",
          "wait counted only while the bank accepts"),
    Patch("stream_mux.py", "pick_b = Mux(held, held_b, fresh_b)", "pick_b = fresh_b",
          "mux re-chooses while an offer waits"),
)
