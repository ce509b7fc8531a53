"""Trace-driven lock-step verification: stimulus up front, a Verilog harness records every port
on every cycle, and the golden model replays the record (no Python in the simulation loop)."""
