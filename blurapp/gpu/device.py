"""Create the one WebGPU adapter and device of the process, lazily, and describe them.

Nothing here touches the GPU at import time: ``blurapp --help`` and the core tests work on a
machine with no adapter. :func:`get_device` picks a hardware adapter when there is one, else
the software one (Mesa lavapipe), or the one ``BLURAPP_ADAPTER`` names (by index or name). It
changes nothing process-wide (environment, other libraries): the entry points do that, through
:func:`blurapp.process.prepare_process`, before they get here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from blurapp.core.errors import GpuUnavailableError
from blurapp.core.planner import DeviceLimits

__all__ = ["ADAPTER_ENV", "GpuContext", "get_device", "select_adapter"]

ADAPTER_ENV = "BLURAPP_ADAPTER"

NO_ADAPTER_MESSAGE = (
    "no WebGPU adapter found: install a GPU driver or Mesa's software one "
    "(apt install mesa-vulkan-drivers); --strategy cpu still works"
)

# Lower is better: hardware first; among equals, native APIs before OpenGL.
_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "CPU": 2}
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1}

# The limits the strategies depend on, requested at the adapter's own maximum
# (WebGPU hands out conservative defaults otherwise: 16 KiB workgroup memory, 256 invocations).
_WANTED_LIMITS = (
    "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x",
    "max-compute-workgroup-size-y",
    "max-texture-dimension-2d",
    "max-storage-buffer-binding-size",
    "max-buffer-size",
)
_WANTED_FEATURES = ("timestamp-query", "shader-f16")
# Storage buffers that map (wgpu's native feature), asked for only where the adapter's memory is
# the host's (software and integrated adapters): blurapp.gpu.ndpass then uploads into and reads
# back from its storage buffers without staging copies. On a discrete GPU it would be slow.
_UNIFIED_MEMORY_FEATURE = "mappable-primary-buffers"
# 64-bit integers in shaders, asked for only on software adapters (lavapipe has it):
# blurapp.gpu.ndpass then moves 32 bytes an access (vec4<u64>, bit patterns only) in its fused
# passes, where lavapipe's per-lane loop over each storage access costs per access, not per byte.
# Measured there (docs/PERFORMANCE.md, ninth session): 1080p uniform_filter 11.2 -> 9.6 ms, sobel
# 9.2 -> 7.3, 4K gaussian sigma=1 48.6 -> 38.5; equal bit for bit. Not measured on a hardware GPU.
# Subgroup operations, likewise: ndpass's interior strips and blocks then take the chunks of a
# window beyond their own from the next lanes of their subgroup (subgroupShuffleDown) instead of
# loading them (1080p uniform_filter 8.1 -> 7.2 ms, sobel 8.3 -> 6.8; equal bit for bit).
_SOFTWARE_FEATURES = ("shader-int64", "subgroup")


@dataclass
class GpuContext:
    """The process's adapter and device, with what the engine needs to know about them.

    Attributes:
        adapter: the ``wgpu.GPUAdapter``.
        device: the ``wgpu.GPUDevice`` created with the limits and features below.
        info: name, backend, type, driver, vendor (strings) and the adapter summary.
        limits: the device limits in the planner's terms.
        features: the device's feature names.
        has_timestamps: the device records GPU timestamps (``timestamp-query``).
        is_software: the adapter is a CPU implementation (lavapipe, llvmpipe, WARP).
    """

    adapter: Any
    device: Any
    info: dict[str, str]
    limits: DeviceLimits
    features: frozenset[str] = field(default_factory=frozenset)
    has_timestamps: bool = False
    is_software: bool = False

    @property
    def name(self) -> str:
        return self.info["name"]


_lock = threading.Lock()
_context: GpuContext | None = None


def adapter_info(adapter: Any) -> dict[str, str]:
    """The adapter's identity as plain strings (name, backend, type, driver, vendor, summary)."""
    info = adapter.info
    kind = str(info.get("adapter_type", "Unknown"))
    return {
        "name": str(info.get("device", "")) or "unnamed adapter",
        "backend": str(info.get("backend_type", "")),
        "type": {"DiscreteGPU": "discrete", "IntegratedGPU": "integrated", "CPU": "cpu"}.get(
            kind, kind.lower()
        ),
        "driver": str(info.get("description", "")),
        "vendor": str(info.get("vendor", "")),
        "summary": str(adapter.summary),
    }


def select_adapter(adapters: Sequence[Any], wanted: str | None = None) -> Any:
    """Pick the adapter to use.

    Arguments:
        adapters: the adapters wgpu enumerated (``.info`` and ``.summary`` are used).
        wanted: the value of ``BLURAPP_ADAPTER``: an index into ``adapters`` (``"0"``,
            ``"1"``, ... in wgpu's enumeration order, as ``blurapp info`` lists them: how a
            Dask worker is given its own GPU, since Vulkan ignores CUDA_VISIBLE_DEVICES), or a
            case-insensitive substring of the adapter's name, backend, driver or vendor;
            ``None`` or empty picks the best one.

    Returns:
        The adapter at that index; else a discrete GPU, else an integrated one, else a software
        adapter (native backends before OpenGL), among those matching ``wanted``.

    Raises:
        GpuUnavailableError: no adapter at all, an index out of range, or none matching
            ``wanted`` (the message names the adapters found).
    """
    if not adapters:
        raise GpuUnavailableError(NO_ADAPTER_MESSAGE)
    candidates = list(adapters)
    if wanted and wanted.strip().isdigit():
        index = int(wanted.strip())
        if index >= len(candidates):
            found = "; ".join(f"{i}: {adapter_info(a)['summary']}" for i, a in enumerate(adapters))
            raise GpuUnavailableError(
                f"{ADAPTER_ENV}={wanted!r}: there is no adapter {index} (found: {found})"
            )
        return candidates[index]
    if wanted:
        needle = wanted.strip().lower()
        candidates = [
            a
            for a in adapters
            if any(
                needle in adapter_info(a)[key].lower()
                for key in ("name", "backend", "driver", "vendor", "summary")
            )
        ]
        if not candidates:
            found = "; ".join(adapter_info(a)["summary"] for a in adapters)
            raise GpuUnavailableError(
                f"{ADAPTER_ENV}={wanted!r} matches no adapter (found: {found})"
            )

    def rank(indexed: tuple[int, Any]) -> tuple[int, int, int]:
        i, a = indexed
        info = a.info
        return (
            _TYPE_RANK.get(str(info.get("adapter_type", "")), 3),
            _BACKEND_RANK.get(str(info.get("backend_type", "")), 2),
            i,
        )

    return min(enumerate(candidates), key=rank)[1]


def _create_context() -> GpuContext:
    try:
        import wgpu

        adapters = wgpu.gpu.enumerate_adapters_sync()
    except GpuUnavailableError:
        raise
    except Exception as exc:  # the native library missing or failing to load
        raise GpuUnavailableError(f"{NO_ADAPTER_MESSAGE} ({type(exc).__name__}: {exc})") from exc
    adapter = select_adapter(adapters, os.environ.get(ADAPTER_ENV))
    info = adapter_info(adapter)
    limits = {k: adapter.limits[k] for k in _WANTED_LIMITS if k in adapter.limits}
    features = [f for f in _WANTED_FEATURES if f in adapter.features]
    if info["type"] in ("cpu", "integrated") and _UNIFIED_MEMORY_FEATURE in adapter.features:
        features.append(_UNIFIED_MEMORY_FEATURE)
    if info["type"] == "cpu":
        features += [f for f in _SOFTWARE_FEATURES if f in adapter.features and f not in features]
    try:
        device = adapter.request_device_sync(
            label="blurapp", required_features=features, required_limits=limits
        )
    except Exception as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GpuUnavailableError(
            f"could not create a WebGPU device on {info['summary']}: {message}"
        ) from exc
    is_software = info["type"] == "cpu"
    dev_limits = device.limits
    return GpuContext(
        adapter=adapter,
        device=device,
        info=info,
        limits=DeviceLimits(
            workgroup_storage=int(dev_limits["max-compute-workgroup-storage-size"]),
            # A square T×T workgroup needs T*T invocations and T along both x and y.
            max_invocations=int(
                min(
                    dev_limits["max-compute-invocations-per-workgroup"],
                    dev_limits["max-compute-workgroup-size-x"] ** 2,
                    dev_limits["max-compute-workgroup-size-y"] ** 2,
                )
            ),
            max_texture_side=int(dev_limits["max-texture-dimension-2d"]),
            max_storage_binding=int(dev_limits["max-storage-buffer-binding-size"]),
            name=info["name"],
            is_software=is_software,
        ),
        features=frozenset(device.features),
        has_timestamps="timestamp-query" in device.features,
        is_software=is_software,
    )


def get_device() -> GpuContext:
    """The process's GPU context, created on first use and cached.

    Returns:
        The :class:`GpuContext`.

    Raises:
        GpuUnavailableError: no usable adapter (one line saying what is missing). The failure
            is not cached: a later call tries again.
    """
    global _context
    with _lock:
        if _context is None:
            _context = _create_context()
        return _context


def list_adapters() -> list[dict[str, str]]:
    """Every adapter wgpu can see, as :func:`adapter_info` dicts (empty when none or no wgpu)."""
    try:
        import wgpu

        return [adapter_info(a) for a in wgpu.gpu.enumerate_adapters_sync()]
    except Exception:
        return []
