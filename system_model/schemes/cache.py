"""Results of evaluated sublayers, kept in memory and on disk, so that a re-run, a resumed or
extended sweep or a regenerated report does not evaluate a point twice.

The key is everything an evaluation reads: the configuration's ``repr`` (frozen dataclasses,
every field), the GEMM shape, the TP, the collective and the scheme. Only results without
recorded timelines are kept. :func:`save` writes them to the user's cache folder
(``platformdirs.user_cache_dir("t3-model")``: ``~/.cache/t3-model/results.pkl`` on Linux,
never inside the installed package or the repository), tagged with a hash of the model's
source, so that changed code never reads stale results; ``T3_MODEL_CACHE`` names another
file, and set empty turns the file off.

The file is read when a result is first looked up, not before: a command refused for a bad
option, or one that evaluates nothing, never reads it (a well-used file holds about 100,000
results, about a second to read). It is written only when this process has stored results
the file does not hold.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import platformdirs

__all__ = ["lookup", "store", "load", "loaded", "save", "clear", "CACHE_FILE"]

_ROOT = Path(__file__).resolve().parents[1]
CACHE_FILE = (Path(os.environ["T3_MODEL_CACHE"]) if os.environ.get("T3_MODEL_CACHE")
              else None if "T3_MODEL_CACHE" in os.environ
              else Path(platformdirs.user_cache_dir("t3-model")) / "results.pkl")
_RESULTS: dict = {}
#: The file this process read (None: none yet), how many results it held, and how many
#: results were stored since it was read or written.
_STATE: dict = {"path": None, "read": 0, "new": 0}


def _version() -> str:
    digest = hashlib.sha256()
    for folder in ("describe", "engine", "kernels", "schemes"):
        for path in sorted((_ROOT / folder).rglob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


#: The code's version as this process imported it: results computed by this process are tagged
#: with the source it runs, not with files edited on disk while it ran (a save at the end of a
#: long study would otherwise label old results as the new code's).
_VERSION = _version()


def key(cfg, shape, tp: int, collective: str, scheme: str) -> tuple:
    return (repr(cfg), shape.m, shape.n, shape.k, tp, collective, scheme)


def lookup(k: tuple):
    if _STATE["path"] is None and CACHE_FILE is not None:
        load()
    return _RESULTS.get(k)


def store(k: tuple, result) -> None:
    _RESULTS[k] = result
    _STATE["new"] += 1


def clear() -> None:
    _RESULTS.clear()


def _read(path: Path) -> dict:
    """The results in ``path`` stored by the same code (none if it is missing, unreadable or
    another version's)."""
    try:
        version, results = pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
        return {}
    return results if version == _VERSION and isinstance(results, dict) else {}


def load(path: Path | None = CACHE_FILE) -> int:
    """Load results stored by the same code (once per file and process); returns how many."""
    if path is None:
        return 0
    if _STATE["path"] == path:
        return _STATE["read"]
    results = _read(path)
    for k, v in results.items():
        _RESULTS.setdefault(k, v)
    _STATE["path"], _STATE["read"] = path, len(results)
    return len(results)


def loaded() -> int:
    """How many results the file held when this process read it (0: not read)."""
    return _STATE["read"]


def save(path: Path | None = CACHE_FILE) -> int:
    """Store the results so far, merged with what the file holds now (parallel processes,
    the workers of a sweep or of ``make test``, each add theirs; best effort: a read-only
    checkout runs without a cache); returns how many the file holds, 0 where there is none.
    A process that stored nothing new leaves the file as it is."""
    if path is None:
        return 0
    load(path)
    if not _STATE["new"]:
        return _STATE["read"]
    merged = {**_read(path), **_RESULTS}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")       # parallel workers each write their own
        tmp.write_bytes(pickle.dumps((_VERSION, merged), protocol=pickle.HIGHEST_PROTOCOL))
        tmp.replace(path)
    except OSError:
        return 0
    _STATE["read"], _STATE["new"] = len(merged), 0
    return len(merged)
