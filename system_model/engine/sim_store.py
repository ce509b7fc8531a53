"""Simulated results kept on disk between runs and between processes, for the DRAM channels
(:mod:`.dram_cycle`'s representative waves, :mod:`.dram_rows`' interval mixes).

Both channels are deterministic functions of their key, and a study asks for the same keys
in many processes (a sweep's workers, the test suite's, the make targets one after another),
so what one process simulated is worth keeping. The file sits beside the results' cache
(:mod:`system_model.schemes.cache`): ``T3_MODEL_CACHE``'s folder if it is set, no file at all
if it is set empty, else the user's cache folder (``~/.cache/t3-model/`` on Linux). It is
tagged with a hash of the code the results depend on, so changed code never reads stale
results; saving merges with what other processes saved meanwhile (best effort: a read-only
home just runs without it).
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import platformdirs

__all__ = ["SimStore", "cache_path"]


def cache_path(filename: str) -> Path | None:
    """Where a store named ``filename`` lives (None: ``T3_MODEL_CACHE`` set empty)."""
    if os.environ.get("T3_MODEL_CACHE"):
        return Path(os.environ["T3_MODEL_CACHE"]).with_name(filename)
    if "T3_MODEL_CACHE" in os.environ:
        return None
    return Path(platformdirs.user_cache_dir("t3-model")) / filename


class SimStore:
    """``data``: key -> simulated result; ``sources``: the files whose text the results
    depend on (their hash tags the file)."""

    def __init__(self, filename: str, sources: tuple[Path, ...]):
        self.path = cache_path(filename)
        self.sources = sources
        self.data: dict = {}
        # The code as this process imported it: a save at the end of a long run tags its
        # results with the source that computed them, not with files edited meanwhile.
        self._version = self._hash()

    def _hash(self) -> str:
        digest = hashlib.sha256()
        for path in self.sources:
            digest.update(path.read_bytes())
        return digest.hexdigest()[:16]

    def version(self) -> str:
        return self._version

    def _read(self, path: Path) -> dict:
        try:
            version, stored = pickle.loads(path.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
            return {}
        return stored if version == self.version() and isinstance(stored, dict) else {}

    def load(self, path: Path | None = None) -> int:
        """Add the stored results written by the same code; returns how many were stored."""
        path = self.path if path is None else path
        if path is None:
            return 0
        stored = self._read(path)
        for key, value in stored.items():
            self.data.setdefault(key, value)
        return len(stored)

    def save(self, path: Path | None = None) -> int:
        """Store what is known now, merged with what is stored; returns how many entries."""
        path = self.path if path is None else path
        if path is None:
            return 0
        merged = {**self._read(path), **self.data}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")     # parallel processes each write their own
            tmp.write_bytes(pickle.dumps((self.version(), merged), protocol=pickle.HIGHEST_PROTOCOL))
            tmp.replace(path)
        except OSError:
            return 0
        return len(merged)
