"""Cycle-accurate golden model of :class:`rtl.gemm_source.GemmTrafficSource` (pure Python).

Written from the component's docstring (the behaviour of reads, k-steps, the output buffer,
credits, the pass-through rules and ``done``), not from its code: :meth:`outputs` gives the
combinational outputs of a cycle from the state and the cycle's inputs, :meth:`step` the
state after the clock edge.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GemmSourceModel", "SourceInputs", "SourceOutputs"]

COUNTER_MASK = (1 << 32) - 1


@dataclass
class SourceInputs:
    run: int
    setup: dict               # tiles, remote_tiles, tiles_per_wave, read_beats_per_tile, step_cycles, outstanding_reads
    store_valid: int
    store_tracked: int
    remote_valid: int
    host_read_valid: int
    host_read_addr: int
    read_data_valid: int
    gemm_ready: int
    gemm_remote_ready: int
    gemm_read_ready: int


@dataclass
class SourceOutputs:
    gemm_valid: int
    store_ready: int
    gemm_remote_valid: int
    remote_ready: int
    gemm_read_valid: int
    gemm_read_addr: int | None     # None when not valid
    host_read_ready: int
    own_read: int                  # the offered read is the GEMM's own (for coverage)
    can_start: int
    release: int
    holding: int
    done: int


class GemmSourceModel:
    def __init__(self, *, addr_width: int, tile_beats_log2: int, tiles_width: int = 12):
        self.addr_mask = (1 << addr_width) - 1
        self.beats_log2 = tile_beats_log2
        self.reads_mask = (1 << (tiles_width + 8)) - 1
        self.reset()

    def reset(self) -> None:
        self.error = self.run_prev = self.launched = 0
        self.issued = self.consumed = self.arrived = 0
        self.wave_base = self.step_index = self.left = self.ending = 0
        self.local_credit = self.remote_credit = 0
        self.status = {"waves": 0, "operand_wait_cycles": 0, "store_wait_cycles": 0}

    @staticmethod
    def invalid(cfg: dict) -> bool:
        """The configurations the docstring calls invalid."""
        return (cfg["tiles"] == 0 or cfg["tiles_per_wave"] == 0 or cfg["read_beats_per_tile"] == 0
                or cfg["step_cycles"] == 0 or cfg["outstanding_reads"] < cfg["tiles_per_wave"])

    def _derived(self, i: SourceInputs) -> dict:
        cfg = i.setup
        active = bool(i.run and not self.error and not (not self.run_prev and self.invalid(cfg)))
        going = active or bool(self.launched and not self.error)     # reads go on through a pause
        total = cfg["tiles"] * cfg["read_beats_per_tile"]
        wave_tiles = min(cfg["tiles_per_wave"], max(0, cfg["tiles"] - self.wave_base))
        wave_remote = min(max(0, cfg["remote_tiles"] - self.wave_base), wave_tiles)
        window = (self.wave_base + wave_tiles) * cfg["read_beats_per_tile"]
        buffered_out = (self.issued - self.consumed) & self.reads_mask
        own = going and self.issued < total and self.issued < window and buffered_out < cfg["outstanding_reads"]
        host_pass = going and self.arrived == total and self.issued == total
        waves_left = active and self.wave_base < cfg["tiles"]
        idle_unit = waves_left and not self.ending and self.left == 0
        can_start = idle_unit and ((self.arrived - self.consumed) & self.reads_mask) >= wave_tiles
        holding = active and self.ending and self.left == 0
        drained = self.local_credit == 0 and self.remote_credit == 0
        done = bool(self.launched and not self.error and self.wave_base == cfg["tiles"] and drained)
        return dict(active=active, total=total, wave_tiles=wave_tiles, wave_remote=wave_remote, own=own,
                    host_pass=host_pass, idle_unit=idle_unit, can_start=can_start, holding=holding,
                    release=holding and drained, drained=drained, done=done)

    def outputs(self, i: SourceInputs) -> SourceOutputs:
        d = self._derived(i)
        local_ok = self.local_credit != 0 or not i.store_tracked or d["done"]
        remote_ok = self.remote_credit != 0 or d["done"]
        read_valid = d["own"] or (d["host_pass"] and i.host_read_valid)
        return SourceOutputs(
            gemm_valid=int(i.store_valid and local_ok), store_ready=int(i.gemm_ready and local_ok),
            gemm_remote_valid=int(i.remote_valid and remote_ok), remote_ready=int(i.gemm_remote_ready and remote_ok),
            gemm_read_valid=int(read_valid),
            gemm_read_addr=(self.issued & self.addr_mask if d["own"] else i.host_read_addr) if read_valid else None,
            host_read_ready=int(d["host_pass"] and i.gemm_read_ready), own_read=int(d["own"]),
            can_start=int(d["can_start"]), release=int(d["release"]), holding=int(d["holding"]), done=int(d["done"]))

    def step(self, i: SourceInputs) -> None:
        d = self._derived(i)
        cfg = i.setup
        out = self.outputs(i)
        st = self.status
        if i.run and not self.run_prev and self.invalid(cfg):
            self.error = 1
        if d["active"]:
            self.launched = 1
        self.run_prev = i.run
        if i.read_data_valid and self.arrived < self.issued:   # reads issued before this edge, paused or not
            self.arrived = (self.arrived + 1) & self.reads_mask
        if d["own"] and i.gemm_read_ready:
            self.issued = (self.issued + 1) & self.reads_mask
        if d["idle_unit"] and not d["can_start"]:
            st["operand_wait_cycles"] = (st["operand_wait_cycles"] + 1) & COUNTER_MASK
        if d["holding"] and not d["drained"]:
            st["store_wait_cycles"] = (st["store_wait_cycles"] + 1) & COUNTER_MASK
        if self.left:
            self.left -= 1
        if d["can_start"]:
            self.consumed = (self.consumed + d["wave_tiles"]) & self.reads_mask
            self.left = cfg["step_cycles"] - 1
            if self.step_index + 1 == cfg["read_beats_per_tile"]:
                self.step_index, self.ending = 0, 1
            else:
                self.step_index += 1
        local_used = i.store_valid and out.store_ready and self.local_credit != 0 and i.store_tracked
        remote_used = i.remote_valid and out.remote_ready and self.remote_credit != 0
        self.local_credit -= int(local_used)
        self.remote_credit -= int(remote_used)
        if d["release"]:
            self.local_credit += (d["wave_tiles"] - d["wave_remote"]) << self.beats_log2
            self.remote_credit += d["wave_remote"] << self.beats_log2
            self.wave_base += d["wave_tiles"]
            self.ending = 0
            st["waves"] = (st["waves"] + 1) & COUNTER_MASK
