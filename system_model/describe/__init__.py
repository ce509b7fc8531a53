"""What is modelled: GPUs, fabrics, transports, GEMM kernels, Transformer models, T3's block
timing and the hardware and model description files (the first layer: it imports nothing
else of the model)."""
