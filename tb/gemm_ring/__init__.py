"""The T3 ring under a real staged GEMM: RTL scenarios for the system model's crosscheck."""
