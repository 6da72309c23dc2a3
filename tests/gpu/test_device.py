"""Adapter choice, the lazily created device, and the ``blurapp info`` report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from blurapp.core.errors import GpuUnavailableError
from blurapp.gpu.device import ADAPTER_ENV, NO_ADAPTER_MESSAGE, get_device, select_adapter
from blurapp.gpu.info import adapter_report, format_report


class FakeAdapter:
    def __init__(self, device: str, kind: str, backend: str) -> None:
        self.info = {
            "device": device,
            "adapter_type": kind,
            "backend_type": backend,
            "description": "",
            "vendor": "",
        }
        self.summary = f"{device} ({kind}) via {backend}"


LAVAPIPE_GL = FakeAdapter("llvmpipe", "CPU", "OpenGL")
LAVAPIPE_VK = FakeAdapter("llvmpipe", "CPU", "Vulkan")
INTEGRATED = FakeAdapter("Intel UHD 770", "IntegratedGPU", "Vulkan")
DISCRETE = FakeAdapter("NVIDIA RTX 4070", "DiscreteGPU", "Vulkan")


def test_hardware_first_then_native_software() -> None:
    assert select_adapter([LAVAPIPE_GL, LAVAPIPE_VK, INTEGRATED, DISCRETE]) is DISCRETE
    assert select_adapter([LAVAPIPE_GL, INTEGRATED, LAVAPIPE_VK]) is INTEGRATED
    assert select_adapter([LAVAPIPE_GL, LAVAPIPE_VK]) is LAVAPIPE_VK


def test_env_substring_picks_by_name_or_backend() -> None:
    adapters = [LAVAPIPE_VK, LAVAPIPE_GL, DISCRETE]
    assert select_adapter(adapters, "opengl") is LAVAPIPE_GL
    assert select_adapter(adapters, "LLVMpipe") is LAVAPIPE_VK
    assert select_adapter(adapters, "rtx") is DISCRETE


def test_env_index_picks_by_position() -> None:
    # How a Dask worker is given its own GPU: the index in wgpu's enumeration order.
    adapters = [LAVAPIPE_VK, DISCRETE, INTEGRATED]
    assert select_adapter(adapters, "0") is LAVAPIPE_VK
    assert select_adapter(adapters, " 2 ") is INTEGRATED
    with pytest.raises(GpuUnavailableError) as err:
        select_adapter(adapters, "3")
    message = str(err.value)
    assert "\n" not in message and ADAPTER_ENV in message and "no adapter 3" in message
    assert "1: NVIDIA RTX 4070" in message  # names what there is


def test_no_adapter_is_one_line() -> None:
    with pytest.raises(GpuUnavailableError) as err:
        select_adapter([])
    assert str(err.value) == NO_ADAPTER_MESSAGE
    assert "\n" not in str(err.value) and "mesa-vulkan-drivers" in str(err.value)
    with pytest.raises(GpuUnavailableError) as err:
        select_adapter([LAVAPIPE_VK], "metal")
    assert "\n" not in str(err.value)
    assert ADAPTER_ENV in str(err.value) and "'metal'" in str(err.value)


def test_importing_the_gpu_package_touches_no_gpu() -> None:
    code = (
        "import sys, blurapp.gpu.engine, blurapp.gpu.info, blurapp.gpu.strategies, "
        "blurapp.gpu.shaders, blurapp.gpu.device as d\n"
        "assert d._context is None\n"
        "assert 'wgpu' not in sys.modules, 'wgpu imported at import time'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.gpu
def test_device_is_created_once(gpu) -> None:
    assert get_device() is gpu is get_device()
    assert gpu.info["name"]
    assert gpu.info["type"] in {"discrete", "integrated", "cpu", "unknown"}
    assert gpu.is_software == (gpu.info["type"] == "cpu")
    limits = gpu.device.limits
    # The engine asks for the adapter's limits, not WebGPU's defaults.
    adapter_limits = gpu.adapter.limits
    for name in ("max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup"):
        assert limits[name] == adapter_limits[name]
    assert gpu.limits.workgroup_storage == limits["max-compute-workgroup-storage-size"]
    assert gpu.limits.max_texture_side == limits["max-texture-dimension-2d"]
    assert gpu.has_timestamps == ("timestamp-query" in gpu.adapter.features)


@pytest.mark.gpu
def test_real_adapters_by_name(gpu) -> None:
    import wgpu

    adapters = wgpu.gpu.enumerate_adapters_sync()
    assert select_adapter(adapters, gpu.info["backend"]).info["backend_type"] == gpu.info["backend"]
    with pytest.raises(GpuUnavailableError, match="matches no adapter"):
        select_adapter(adapters, "no-such-adapter-anywhere")


@pytest.mark.gpu
def test_adapter_report(gpu) -> None:
    report = adapter_report()
    json.dumps(report)  # what `blurapp info --json` prints
    assert report["name"] == gpu.info["name"]
    assert report["backend"] and report["type"] == gpu.info["type"]
    assert set(report["limits"]) == {
        "workgroup_storage",
        "invocations_per_workgroup",
        "max_texture_side",
        "max_storage_binding",
    }
    assert report["limits"]["workgroup_storage"] == gpu.limits.workgroup_storage
    assert set(report["features"]) == {"timestamp-query", "shader-f16", "subgroups"}
    assert all(isinstance(v, bool) for v in report["features"].values())
    assert report["features"]["timestamp-query"] == gpu.has_timestamps
    text = format_report(report)
    lines = text.splitlines()
    assert lines[0].startswith("name") and gpu.info["name"] in lines[0]
    # Values line up in one column.
    starts = {
        line.index(v)
        for line, v in zip(lines[:2], [report["name"], report["backend"]], strict=True)
    }
    assert len(starts) == 1


def test_format_report_aligns_nested_values() -> None:
    text = format_report(
        {"name": "x", "limits": {"workgroup_storage": 32768}, "features": {"f": True}}
    )
    column = len("  workgroup_storage") + 2
    assert text.splitlines() == [
        "name".ljust(column) + "x",
        "limits",
        "  workgroup_storage".ljust(column) + "32,768",
        "features",
        "  f".ljust(column) + "yes",
    ]


@pytest.mark.gpu
def test_no_runtime_dir_noise_on_stderr(gpu) -> None:
    """Without XDG_RUNTIME_DIR, libwayland used to print its complaint several times."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp", "info"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "XDG_RUNTIME_DIR" not in proc.stderr


@pytest.mark.gpu
def test_library_use_changes_nothing_process_wide(gpu) -> None:
    """get_device() and filter_image() alone: no environment variable set, cffi not patched
    (the entry points do that, through blurapp.process.prepare_process)."""
    import os

    code = (
        "import os, numpy as np, blurapp\n"
        "from cffi import cparser\n"
        "from blurapp.gpu import cffi_speedup\n"
        "from blurapp.gpu.device import get_device\n"
        "env, parse = dict(os.environ), cparser.Parser._parse\n"
        "get_device()\n"
        "out = blurapp.filter_image(np.ones((4, 5), np.float32), 'box:3', strategy='direct')\n"
        "assert out.image.shape == (4, 5)\n"
        "assert dict(os.environ) == env, set(os.environ.items()) ^ set(env.items())\n"
        "assert cparser.Parser._parse is parse and not cffi_speedup.installed()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
