# amaranth: UnusedElaboratable=no
"""Bounded liveness of the T3 slice, by bounded model checking with ``yosys-smtbmc`` and Yices.

The harness (:mod:`tb.formal.slice_liveness`) leaves every input of a small slice free
but legal and asserts that no request waits ``bound`` cycles at the queues the GEMM and
the reduce-scatter need. The BMC checks every trace of :data:`DEPTH` cycles from reset,
with the engine ``make formal`` uses (:mod:`tb.formal.engine`; ``make formal`` goes to 40
cycles). It replaced yosys ``sat -seq``, which answered the same questions 5 to 10 times
slower (49 s against 6 s for the slice at 24 cycles). Three runs:

* the slice as it is: no trace violates the bound (UNSAT);
* the first slice (:data:`tb.formal.variants.FIRST_SLICE`): a trace deadlocks (the
  tracker's full trigger queue holds the grant that the DMA read draining it needs);
* a deliberately false property on the same set-up: a trace reaches a DMA beat on
  egress, so the assumptions are not vacuous and the depth reaches the deadlock's cause.

This is bounded, not a proof for all time: a violation that needs more than
:data:`DEPTH` cycles from reset is not seen. The depth covers the reset sweep, filling
every queue of the tiny slice (two trigger slots, a one-deep command queue, a two-deep
compute queue) and then ``bound`` more cycles; the old deadlock is found at this depth.
The ring benches check the same property in simulation at full size.
"""

from __future__ import annotations

import importlib

import pytest

from rtl.t3_slice import T3Slice
from tb.formal.engine import Result, prove
from tb.formal.slice_liveness import SliceLivenessHarness
from tb.formal.variants import FIRST_SLICE, load_variant

#: Cycles from reset that every trace is checked over.
DEPTH = 24
#: The first slice's deadlock needs no more: a counterexample is found at 18 cycles.
FIRST_SLICE_DEPTH = 18
#: With a memory that may hold each offer for a cycle the bound doubles (23 cycles).
MEMORY_DEPTH = 26


def check(slice_class, tmp_path, *, false_property: bool = False, depth: int = DEPTH,
          max_memory_hold: int | None = None, unconstrained_limit: bool = False) -> Result:
    harness = SliceLivenessHarness(slice_class, false_property=false_property, max_memory_hold=max_memory_hold,
                                   unconstrained_limit=unconstrained_limit)
    assert harness.bound < depth, "the depth must reach past the bound, or the check cannot fail"
    return prove(harness, harness.ports(), tmp_path, mode="bmc", depth=depth)


def first_slice_class():
    return importlib.import_module(load_variant(FIRST_SLICE).__name__ + ".t3_slice").T3Slice


def test_slice_is_live_within_the_bound(tmp_path):
    result = check(T3Slice, tmp_path)
    assert result.proven, result.log[-4000:]


def test_slice_with_a_memory_beyond_is_live_within_the_bound(tmp_path):
    """A memory that may hold each offer for a cycle (a bank opening its row) stretches the
    bound, and nothing waits for ever: the grant is gated, not the issue."""
    result = check(T3Slice, tmp_path, max_memory_hold=1, depth=MEMORY_DEPTH)
    assert result.proven, result.log[-4000:]


def test_a_starvation_limit_within_the_memory_hold_starves_the_gemm(tmp_path):
    """Why the limit must exceed the hold (tb/formal/slice_liveness.py): at a limit of 1,
    communication takes the place of every compute offer the memory holds."""
    result = check(T3Slice, tmp_path, max_memory_hold=1, depth=MEMORY_DEPTH, unconstrained_limit=True)
    assert result.refuted, result.log[-4000:]


def test_slice_that_keeps_its_register_when_the_memory_holds_fails(tmp_path):
    """The bug the gating first had: the register kept an issued request while the memory
    held the next offer, and issued it again; the bounded check must see it."""
    from tb.formal.variants import Patch
    broken = load_variant((Patch("t3_slice.py", "with m.If(free if self._dram_ready else arbiter.grant.ready):",
                                 "with m.If(arbiter.grant.ready):"),))
    cls = importlib.import_module(broken.__name__ + ".t3_slice").T3Slice
    result = check(cls, tmp_path, max_memory_hold=1, depth=MEMORY_DEPTH)
    assert result.refuted, result.log[-4000:]


def test_first_slice_deadlocks(tmp_path):
    result = check(first_slice_class(), tmp_path, depth=FIRST_SLICE_DEPTH)
    assert result.refuted, result.log[-4000:]


def test_set_up_reaches_egress(tmp_path):
    result = check(T3Slice, tmp_path, false_property=True)
    assert result.refuted, result.log[-4000:]


def test_variant_patches_must_apply():
    from tb.formal.variants import Patch
    with pytest.raises(ValueError, match="must match exactly once"):
        load_variant((Patch("tracker.py", "this text is not in the tracker", ""),))
