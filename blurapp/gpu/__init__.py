"""WebGPU engine: device, shader loading, strategies and GPU timing. No Qt; nothing runs at import."""
