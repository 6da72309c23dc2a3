"""Convolution-layer lab: Conv2D on the GPU as direct, im2col + GEMM and implicit GEMM.

The public entry points are :func:`blurapp.conv.engine.conv2d` (run a layer),
:func:`blurapp.conv.reference.conv2d_reference` (the float64 oracle),
:func:`blurapp.conv.tile_budget.plan_tile` (a tile's storage budget) and
:func:`blurapp.conv.layout.window_runs` (NCHW/NHWC run counts). Importing them touches no GPU.
"""
