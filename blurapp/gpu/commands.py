"""Command recording for NdPasses.run through wgpu-native's C API, without wgpu-py's wrappers.

A 1 MP blurapp.ndimage call records a handful of commands: an encoder, a copy into the input
texture, a compute pass with one or two dispatches, the encoder's finish. wgpu-py builds a
descriptor struct (with an empty label string view) and a Python wrapper object for each of
them and releases the handles when the wrappers are collected; on the 2-vCPU test VM that was
0.61-0.69 ms of a ~5 ms call after a scipy call (the interpreter's caches cold), where the same
commands through wgpu-native's functions take 0.30-0.32 ms (0.23-0.29 without wgpu-py's error
capture: medians of 30, recording and submitting a 1001 x 1001 uniform filter's commands).

:class:`Encoder` is the part of ``GPUCommandEncoder`` and ``GPUComputePassEncoder`` that
NdPasses.run uses, with the same arguments, calling wgpu-native's functions through wgpu-py's
``libf`` (each call's validation errors raised as wgpu-py raises them) with NULL descriptors
(no label, no timestamps: wgpu-native's defaults), and releasing every handle it makes
itself, at once, also when a call raises (:meth:`Encoder.close`). The buffers, textures,
pipelines and bind groups stay wgpu-py's objects: it takes their handles (``_internal``).
"""

from __future__ import annotations

from typing import Any


def available(device: Any) -> bool:
    """Whether ``device`` is wgpu-py's wgpu-native device (the handles :class:`Encoder` needs)."""
    return hasattr(device, "_internal") and hasattr(device.queue, "_internal")


class CommandBuffer:
    """A finished command buffer's handle (``_internal``, as wgpu-py's has), released by
    :meth:`release` (after its submission)."""

    def __init__(self, handle: Any) -> None:
        self._internal = handle

    def release(self) -> None:
        from wgpu.backends.wgpu_native._api import libf

        if self._internal is not None:
            handle, self._internal = self._internal, None
            libf.wgpuCommandBufferRelease(handle)


class Encoder:
    """A command encoder on ``device`` (wgpu-py's wgpu-native GPUDevice): the recording calls
    NdPasses.run makes, as wgpu-py's encoder and compute pass take them. Use it as a context
    manager (or call :meth:`close`): its handles are released on the way out."""

    def __init__(self, device: Any) -> None:
        from wgpu.backends.wgpu_native._api import ffi, lib, libf

        self._ffi, self._lib, self._aspect_all = ffi, libf, lib.WGPUTextureAspect_All
        self._pass: Any = None
        self._handle = libf.wgpuDeviceCreateCommandEncoder(device._internal, ffi.NULL)

    def __enter__(self) -> Encoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the encoder's handles (a compute pass left open too); idempotent."""
        lib = self._lib
        if self._pass is not None:
            handle, self._pass = self._pass, None
            lib.wgpuComputePassEncoderRelease(handle)
        if self._handle is not None:
            handle, self._handle = self._handle, None
            lib.wgpuCommandEncoderRelease(handle)

    def copy_buffer_to_texture(
        self, source: dict[str, Any], destination: dict[str, Any], copy_size: tuple[int, ...]
    ) -> None:
        """As wgpu-py's: ``source`` a dict of buffer, offset, bytes_per_row, rows_per_image;
        ``destination`` of texture and origin (x, y, z); ``copy_size`` (width, height, depth)."""
        ffi = self._ffi
        bytes_per_row = int(source["bytes_per_row"])
        if bytes_per_row % 256:
            raise ValueError(f"bytes_per_row ({bytes_per_row}) must be a multiple of 256")
        width, height, depth = (*tuple(copy_size), 1, 1)[:3]
        src = ffi.new("WGPUTexelCopyBufferInfo *")
        src.layout.offset = int(source.get("offset", 0))
        src.layout.bytesPerRow = bytes_per_row
        src.layout.rowsPerImage = int(source.get("rows_per_image", height))
        src.buffer = source["buffer"]._internal
        dst = ffi.new("WGPUTexelCopyTextureInfo *")
        dst.texture = destination["texture"]._internal
        dst.mipLevel = int(destination.get("mip_level", 0))
        dst.origin.x, dst.origin.y, dst.origin.z = destination.get("origin", (0, 0, 0))
        dst.aspect = self._aspect_all
        size = ffi.new("WGPUExtent3D *")
        size.width, size.height, size.depthOrArrayLayers = width, height, depth
        self._lib.wgpuCommandEncoderCopyBufferToTexture(self._handle, src, dst, size)

    def copy_buffer_to_buffer(
        self, source: Any, source_offset: int, destination: Any, destination_offset: int, size: int
    ) -> None:
        self._lib.wgpuCommandEncoderCopyBufferToBuffer(
            self._handle, source._internal, source_offset, destination._internal,
            destination_offset, size,
        )  # fmt: skip

    def begin_compute_pass(self) -> Encoder:
        """Open a compute pass (no label, no timestamps); this object records it (one at a
        time, as WebGPU allows)."""
        if self._pass is not None:
            raise RuntimeError("a compute pass is already open on this encoder")
        self._pass = self._lib.wgpuCommandEncoderBeginComputePass(self._handle, self._ffi.NULL)
        return self

    def set_pipeline(self, pipeline: Any) -> None:
        self._lib.wgpuComputePassEncoderSetPipeline(self._pass, pipeline._internal)

    def set_bind_group(self, index: int, bind_group: Any) -> None:
        self._lib.wgpuComputePassEncoderSetBindGroup(
            self._pass, index, bind_group._internal, 0, self._ffi.NULL
        )

    def dispatch_workgroups(self, x: int, y: int = 1, z: int = 1) -> None:
        self._lib.wgpuComputePassEncoderDispatchWorkgroups(self._pass, x, y, z)

    def end(self) -> None:
        """End the open compute pass and release its handle."""
        handle, self._pass = self._pass, None
        try:
            self._lib.wgpuComputePassEncoderEnd(handle)
        finally:
            self._lib.wgpuComputePassEncoderRelease(handle)

    def finish(self) -> CommandBuffer:
        return CommandBuffer(self._lib.wgpuCommandEncoderFinish(self._handle, self._ffi.NULL))
