"""Bench of the GEMM traffic source (rtl/gemm_source.py)."""
