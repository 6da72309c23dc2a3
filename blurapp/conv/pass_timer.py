"""Time a sequence of compute passes with GPU timestamp queries, or the wall clock without them."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

__all__ = ["PassTimer"]


class PassTimer:
    """Per-pass durations of one command submission.

    With ``timestamp-query`` each pass writes a begin and an end timestamp, in ticks of the
    queue's timestamp period; without it the caller submits the passes one by one and
    :meth:`wall_pass` times each submit-and-wait. (blurapp.gpu.engine keeps its timestamp
    buffers inside ``GpuFilter``; this is the conv lab's standalone equivalent.)

    Arguments:
        device: the ``wgpu.GPUDevice``.
        passes: how many passes will be timed.
        use_timestamps: whether the device has the ``timestamp-query`` feature.
    """

    def __init__(self, device: Any, passes: int, *, use_timestamps: bool) -> None:
        import wgpu

        self._device = device
        self._passes = passes
        self.timer = "gpu" if use_timestamps and passes > 0 else "wall"
        self._wall: list[float] = []
        self._query_set = None
        self._resolve = None
        if self.timer == "gpu":
            self._query_set = device.create_query_set(type="timestamp", count=2 * passes)
            self._resolve = device.create_buffer(
                size=16 * passes,
                usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC,
            )

    def writes(self, index: int) -> dict[str, Any] | None:
        """The ``timestamp_writes`` argument for pass ``index`` (``None`` on the wall clock)."""
        if self._query_set is None:
            return None
        return {
            "query_set": self._query_set,
            "beginning_of_pass_write_index": 2 * index,
            "end_of_pass_write_index": 2 * index + 1,
        }

    def resolve(self, encoder: Any) -> None:
        """Copy the timestamps into the readable buffer (call once, after the last pass)."""
        if self._query_set is not None:
            encoder.resolve_query_set(self._query_set, 0, 2 * self._passes, self._resolve, 0)

    def wall_pass(self, command_buffer: Any) -> None:
        """Submit one pass's commands and wait for them, timing it on the wall clock."""
        t0 = time.perf_counter()
        self._device.queue.submit([command_buffer])
        self._device.queue.on_submitted_work_done_async().sync_wait()
        self._wall.append((time.perf_counter() - t0) * 1e3)

    def read_ms(self) -> list[float]:
        """Milliseconds per pass, in order (after the submission finished)."""
        if self._query_set is None:
            return list(self._wall)
        raw = np.frombuffer(self._device.queue.read_buffer(self._resolve), dtype=np.uint64)
        ticks = raw.astype(np.int64).reshape(self._passes, 2)
        ns = _timestamp_period_ns(self._device)
        return [max(0.0, float(end - begin) * ns * 1e-6) for begin, end in ticks]


def _timestamp_period_ns(device: Any) -> float:
    """Nanoseconds per timestamp tick (1 on lavapipe and most Vulkan drivers)."""
    queue = device.queue
    getter = getattr(queue, "get_timestamp_period", None)
    try:
        if getter is not None:
            period = float(getter())
        else:
            # wgpu-py 0.32 does not wrap it; the native call is wgpu-native's own
            from wgpu.backends.wgpu_native._ffi import lib

            period = float(lib.wgpuQueueGetTimestampPeriod(queue._internal))
    except Exception:
        period = 1.0
    return period if period > 0 else 1.0
