"""The slice and ring trace replays in C++: the same golden model, compiled.

Why: the Python replays of the composed designs check 30k (slice) and 10k (ring) cycles/s,
3-30x slower than the Verilator harness that records them, so the ring got only 2x10^5
cycles per ``make test``. ``slice.hpp`` translates :class:`tb.slice.model.SliceModel` and the
block models it composes (and :class:`tb.link.model.LinkGoldenModel`) into C++, under the
same independence rule: written from the blocks' documented port behaviour, never from
``rtl/``. ``replay_slice.cpp`` and ``replay_ring.cpp`` replay a record as the Python
replays do: every output in every cycle, the same coverage bins, the same checks counted.

The Python replays stay the reference. ``tests/test_fast_replay.py`` replays short traces
through both and requires the same verdict, the same first mismatch on a corrupted record,
and the same coverage. Lane sums are proposed in C++ and every one is then checked against
numpy / ml_dtypes (:func:`tb.fp_add.golden.golden_add`), so numpy stays the authority on
floating point.

``TRACE_MODEL=python`` forces the reference replays; ``cxx`` (the default where ``g++``
is found) the compiled ones. Without ``g++`` the replays fall back to Python, saying so.
The library is built once per source change into ``sim_build/fast/``.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from tb.common.runner import REPO_ROOT

__all__ = ["TRACE_MODEL_ENV", "use_compiled", "library", "pointer", "FORMATS", "STATUS_FIELDS", "field_table",
           "port_table", "slice_params", "buffer", "check_lane_sums", "B_SUMS", "B_SNAPSHOTS", "B_FAIL"]

TRACE_MODEL_ENV = "TRACE_MODEL"
SOURCES = ("slice_model.hpp", "slice.hpp", "replay_io.hpp", "replay.cpp", "replay_slice.cpp", "replay_ring.cpp",
           "step.cpp")
B_SUMS, B_SNAPSHOTS, B_FAIL = range(3)

#: The status word's fields in the order of ``enum StatusField`` (slice.hpp).
STATUS_FIELDS = (
    "tracker.clearing", "tracker.err_unarmed_update", "tracker.err_unarmed_update_tile", "tracker.err_rearm",
    "tracker.err_rearm_tile", "tracker.err_zero_threshold", "tracker.err_zero_threshold_tile",
    "tracker.armed_entries", "tracker.local_updates", "tracker.remote_updates", "tracker.triggers",
    "table.err_unprogrammed", "table.err_unprogrammed_index", "table.err_bad_descriptor",
    "table.err_bad_descriptor_index", "table.triggers", "table.issued",
    "engine.err_overflow", "engine.busy", "engine.commands", "engine.beats", "reducer.stores", "reducer.updates",
    "arbiter.compute_grants", "arbiter.comm_grants", "arbiter.comm_wait", "arbiter.max_comm_wait",
    "ingress_beats", "egress_beats", "notifies",
)
#: Payload sub-fields in the order of ``enum FieldIndex`` (replay_io.hpp): (layout, field).
PAYLOAD_FIELDS = (
    ("gemm", "tile"), ("gemm", "addr"), ("gemm", "op"), ("gemm", "tracked"), ("gemm", "data"),
    ("packet", "dst_port"), ("packet", "dst_addr"), ("packet", "op"), ("packet", "last"), ("packet", "data"),
    ("arm", "tile"), ("arm", "threshold"), ("arm", "dma_cmd"),
    ("program", "index"), ("program", "desc.src_addr"), ("program", "desc.dst_addr"), ("program", "desc.beats"),
    ("program", "desc.dst_port"), ("program", "desc.op"),
    ("request", "addr"), ("request", "write"),
)
FORMATS = {"binary16": 0, "bfloat16": 1, "binary32": 2}

_library: ctypes.CDLL | None = None


def use_compiled() -> bool:
    """Whether the trace replays run compiled (``TRACE_MODEL``, default: where ``g++`` is)."""
    choice = os.environ.get(TRACE_MODEL_ENV, "").strip().lower()
    if choice not in ("", "cxx", "python"):
        raise ValueError(f"{TRACE_MODEL_ENV} must be 'cxx' or 'python', not {choice!r}")
    if choice == "python":
        return False
    if shutil.which("g++") is None:
        if choice == "cxx":
            raise RuntimeError(f"{TRACE_MODEL_ENV}=cxx but g++ is missing (make cxx installs it)")
        print("trace replay: g++ is missing, so the slice and ring replay in Python (slow; make cxx installs g++)")
        return False
    return True


def library() -> ctypes.CDLL:
    """The compiled replays, built into ``sim_build/fast/`` once per source change."""
    global _library
    if _library is None:
        _library = _load(_build())
    return _library


def _build() -> Path:
    import fcntl

    here = Path(__file__).parent
    text = b"".join((here / name).read_bytes() for name in SOURCES)
    flags = ["-O2", "-std=c++17", "-shared", "-fPIC"]
    digest = hashlib.sha256(text + " ".join(flags).encode()).hexdigest()[:16]
    folder = REPO_ROOT / "sim_build" / "fast"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"replay_{digest}.so"
    with open(folder / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            cpp = [str(here / name) for name in SOURCES if name.endswith(".cpp")]
            part = target.with_suffix(".part")
            run = subprocess.run(["g++", *flags, "-o", str(part), *cpp], capture_output=True, text=True)
            if run.returncode != 0:
                raise RuntimeError(f"g++ could not build the compiled trace replays:\n{run.stderr[-3000:]}")
            part.replace(target)
    return target


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    ptr = ctypes.c_void_p
    i64, i32 = ctypes.c_int64, ctypes.c_int32
    lib.fr_buffer_size.argtypes, lib.fr_buffer_size.restype = [ctypes.c_int], i64
    lib.fr_buffer_copy.argtypes, lib.fr_buffer_copy.restype = [ctypes.c_int, ptr], None
    lib.fr_lane_sums.argtypes, lib.fr_lane_sums.restype = [ctypes.c_int, i64, ptr, ptr, ptr], None
    lib.fr_slice_replay.argtypes = [ptr, i64, i64, ptr, ptr, ptr, ptr, ptr, ptr]
    lib.fr_slice_replay.restype = i64
    lib.fr_ring_replay.argtypes = [ptr, i64, i64, ptr, ptr, ptr, i32, ptr, i32, i32, ptr, ptr, ptr, ptr]
    lib.fr_ring_replay.restype = i64
    lib.fr_slice_new.argtypes, lib.fr_slice_new.restype = [ptr], ptr
    lib.fr_slice_free.argtypes, lib.fr_slice_free.restype = [ptr], None
    lib.fr_slice_reset.argtypes, lib.fr_slice_reset.restype = [ptr], None
    lib.fr_slice_sums.argtypes, lib.fr_slice_sums.restype = [ptr, ptr], i64
    lib.fr_slice_cycle.argtypes, lib.fr_slice_cycle.restype = [ptr, ptr, ptr], None
    return lib


def pointer(array: np.ndarray) -> int:
    return array.ctypes.data


def buffer(which: int) -> np.ndarray:
    """A buffer the last replay filled (sums, snapshots or the failure), as uint64."""
    lib = library()
    out = np.zeros(lib.fr_buffer_size(which), dtype=np.uint64)
    if out.size:
        lib.fr_buffer_copy(which, pointer(out))
    return out


def _fields(packer) -> dict[str, tuple[int, int]]:
    return {name: (offset, mask.bit_length()) for name, offset, mask in packer.fields}


def field_table(*, gemm, packet, arm, program, request, status) -> np.ndarray:
    """(offset, width) of every payload sub-field and status field, in the C++ order."""
    layouts = {"gemm": _fields(gemm), "packet": _fields(packet), "arm": _fields(arm), "program": _fields(program),
               "request": _fields(request)}
    for layout, fields in layouts.items():
        wanted = {name for lay, name in PAYLOAD_FIELDS if lay == layout}
        if set(fields) != wanted:
            raise ValueError(f"the {layout} layout's fields {sorted(fields)} are not the compiled model's "
                             f"{sorted(wanted)}: update tb/fast/replay_io.hpp and PAYLOAD_FIELDS")
    status_fields = _fields(status)
    if set(status_fields) != set(STATUS_FIELDS):
        raise ValueError(f"the status layout's fields {sorted(status_fields)} are not the compiled model's "
                         f"{sorted(STATUS_FIELDS)}: update tb/fast/slice.hpp and STATUS_FIELDS")
    rows = [layouts[layout][name] for layout, name in PAYLOAD_FIELDS] + [status_fields[n] for n in STATUS_FIELDS]
    if any(width > 64 for _, width in rows):
        raise ValueError("a field is wider than 64 bits: the compiled replays take beats of up to 64 bits")
    return np.array(rows, dtype=np.int32).reshape(-1)


def port_table(layout, names: list[str]) -> np.ndarray:
    """(word, shift, width) of every port in ``names`` in the record."""
    return np.array([layout.fields[n] for n in names], dtype=np.int32).reshape(-1)


def slice_params(*, nmc, depth: int, entries: int, tile_bits: int, trigger_depth: int, commands: int,
                 index_bits: int, max_beats: int, queue_depth: int, tile_beats_log2: int, compute_queue_depth: int,
                 wait_width: int, read_latency: int) -> np.ndarray:
    """The model's parameters in ``read_params`` order (replay_io.hpp)."""
    lane_width = nmc.beat_width // nmc.lanes
    if nmc.beat_width > 64:
        raise ValueError(f"beat_width = {nmc.beat_width}: the compiled replays take beats of up to 64 bits")
    if depth < 1 << nmc.addr_width:      # the model indexes its bank by any address a port can carry
        raise ValueError(f"depth = {depth}: the compiled replays need a word for every address "
                         f"(2**{nmc.addr_width})")
    return np.array([FORMATS[nmc.format.name], nmc.lanes, lane_width, depth, entries, max(entries, 1 << tile_bits),
                     trigger_depth, commands, max(commands, 1 << index_bits), max_beats, queue_depth, nmc.addr_width,
                     tile_beats_log2, compute_queue_depth, wait_width, nmc.adder_latency, read_latency],
                    dtype=np.int32)


def check_lane_sums(fmt: str, trace, log: np.ndarray | None = None) -> int:
    """Hold every lane sum the compiled model proposed (``log``: rows of a, b, sum; default:
    the last replay's) to numpy; return how many were checked."""
    from tb.fp_add.golden import golden_add, mismatches

    log = (buffer(B_SUMS) if log is None else np.asarray(log, dtype=np.uint64)).reshape(-1, 3)
    if not len(log):
        return 0
    expected = golden_add(fmt, log[:, 0], log[:, 1]).astype(np.uint64)
    bad = mismatches(fmt, log[:, 2], expected)
    if bad.size:
        a, b, got = (int(x) for x in log[bad[0]])
        trace.fail(-1, "the compiled model's lane sum", int(expected[bad[0]]), got,
                   f"{fmt} {a:#x} + {b:#x}: numpy's sum against the C++ proposal")
    return len(log)
