"""The memory arbiter's golden model: :mod:`system_model.engine.arbiter_policy`.

The spec-level model is kept in the performance model's package (the model grants DRAM by
it, and is installed without the benches); the benches import it under this name.
"""

from system_model.engine.arbiter_policy import COMM, COMPUTE, MCA, ROUND_ROBIN, MemoryArbiterModel

__all__ = ["MemoryArbiterModel", "MCA", "ROUND_ROBIN", "COMPUTE", "COMM"]
