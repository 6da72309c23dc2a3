"""WGSL compute shaders, shipped as package data and loaded by blurapp.gpu.shaders."""
