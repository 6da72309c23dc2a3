"""Convolution-layer lab: multi-channel Conv2D on the GPU as direct, im2col + GEMM and implicit GEMM."""
