"""Amaranth 0.5 RTL of the T3 memory-controller blocks.

Each block is one :class:`amaranth.lib.wiring.Component` in its own module. Every block
documents its latency and throughput in its docstring and exposes them as read-only
properties, which the benches check and the system model reads.
"""
