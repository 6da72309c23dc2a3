"""Pure numpy core: kernels and their spec grammar, separability, border modes, the float64
reference filter, number conversion, image I/O and the strategy planner. No Qt, no wgpu."""
