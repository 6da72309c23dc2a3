"""Per-pass GPU timing: timestamp queries where the device has them, else a fenced wall clock.

Both the filter engine and the conv lab time their passes through :class:`PassTimer`, so the
two report figures measured the same way.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from blurapp.core.timing import Timer

__all__ = ["PassTimer", "timestamp_period_ns"]


def timestamp_period_ns(device: Any) -> float:
    """Nanoseconds per timestamp tick of ``device``'s queue (1 on lavapipe and most Vulkan)."""
    queue = device.queue
    getter = getattr(queue, "get_timestamp_period", None)
    try:
        if getter is not None:
            period = float(getter())
        else:
            # wgpu-py 0.32 does not wrap it; the native call is wgpu-native's own.
            from wgpu.backends.wgpu_native._ffi import lib

            period = float(lib.wgpuQueueGetTimestampPeriod(queue._internal))
    except Exception:  # an older or newer wgpu-native without the symbol: ticks are ns
        period = 1.0
    return period if period > 0 else 1.0


class PassTimer:
    """Times up to ``max_passes`` compute passes of one submission; reusable across runs.

    With timestamps, each pass writes a begin and an end tick (:meth:`writes`), and
    :meth:`resolve` copies them, in the same submission, into a mappable buffer that
    :meth:`read_ms` reads after the caller has waited for the work. Without them,
    :meth:`after_pass` submits each pass on its own and waits by mapping a 4-byte buffer
    copied after it (wgpu-py 0.32's ``on_submitted_work_done`` does not work with its
    wgpu-native), timing submit-and-wait with the wall clock.

    Arguments:
        device: the ``wgpu.GPUDevice``.
        max_passes: the most passes one submission will time.
        use_timestamps: whether the device has the ``timestamp-query`` feature.
    """

    def __init__(self, device: Any, max_passes: int, *, use_timestamps: bool) -> None:
        import wgpu

        usage = wgpu.BufferUsage
        self._device = device
        self._max = max_passes
        self.timer: Timer = "gpu" if use_timestamps else "wall"
        self._wall: list[float] = []
        self._count = 0
        if self.timer == "gpu":
            n = 2 * max_passes
            self._query_set = device.create_query_set(type="timestamp", count=n)
            self._resolve = device.create_buffer(
                size=n * 8, usage=usage.QUERY_RESOLVE | usage.COPY_SRC
            )
            self._read = device.create_buffer(size=n * 8, usage=usage.MAP_READ | usage.COPY_DST)
            self._period_ns = timestamp_period_ns(device)
        else:
            self._fence_src = device.create_buffer(size=4, usage=usage.COPY_SRC | usage.COPY_DST)
            self._fence_read = device.create_buffer(size=4, usage=usage.MAP_READ | usage.COPY_DST)

    def writes(self, index: int) -> dict[str, Any] | None:
        """The ``timestamp_writes`` of pass ``index`` (``None`` on the wall clock)."""
        if index >= self._max:
            raise ValueError(f"pass {index} is beyond the {self._max} this timer holds")
        self._count = max(self._count, index + 1)
        if self.timer != "gpu":
            return None
        return {
            "query_set": self._query_set,
            "beginning_of_pass_write_index": 2 * index,
            "end_of_pass_write_index": 2 * index + 1,
        }

    def after_pass(self, encoder: Any) -> Any:
        """Call after each pass's ``end()``; returns the encoder to record the next pass in.

        On the wall clock this submits the pass and waits for it, timing both.
        """
        if self.timer == "gpu":
            return encoder
        import wgpu

        encoder.copy_buffer_to_buffer(self._fence_src, 0, self._fence_read, 0, 4)
        start = time.perf_counter()
        self._device.queue.submit([encoder.finish()])
        self._fence_read.map_sync(wgpu.MapMode.READ)
        self._wall.append((time.perf_counter() - start) * 1e3)
        self._fence_read.unmap()
        return self._device.create_command_encoder()

    def resolve(self, encoder: Any) -> None:
        """Record the copy of this submission's timestamps (call once, after the last pass)."""
        if self.timer == "gpu" and self._count:
            n = 2 * self._count
            encoder.resolve_query_set(self._query_set, 0, n, self._resolve, 0)
            encoder.copy_buffer_to_buffer(self._resolve, 0, self._read, 0, n * 8)

    def read_ms(self) -> list[float]:
        """Milliseconds per pass, in order, once the submission is done; resets the timer."""
        count, self._count = self._count, 0
        if self.timer != "gpu":
            wall, self._wall = self._wall, []
            return wall
        if not count:
            return []
        import wgpu

        self._read.map_sync(wgpu.MapMode.READ)
        try:
            ticks = np.frombuffer(self._read.read_mapped(0, count * 16), dtype=np.uint64).copy()
        finally:
            self._read.unmap()
        pairs = ticks.astype(np.int64).reshape(count, 2)
        return [max(0.0, float(end - begin)) * self._period_ns * 1e-6 for begin, end in pairs]
