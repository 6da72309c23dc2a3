"""WebGPU engine: device, shaders, strategies, GPU timing; no Qt, nothing runs at import."""
