"""Shared fixtures. GPU tests use the ``gpu`` fixture: without an adapter they skip, or fail
when BLURAPP_REQUIRE_GPU=1 (as in CI), so a missing driver can never turn CI green."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def gpu() -> object:
    """The process's GPU context (lavapipe counts); skip, or fail under BLURAPP_REQUIRE_GPU=1."""
    from blurapp.core.errors import GpuUnavailableError
    from blurapp.gpu.device import get_device

    try:
        ctx = get_device()
    except GpuUnavailableError as err:
        if os.environ.get("BLURAPP_REQUIRE_GPU") == "1":
            pytest.fail(f"BLURAPP_REQUIRE_GPU=1 but no adapter: {err}")
        pytest.skip(f"no WebGPU adapter: {err}")
    assert ctx.info.get("device") or ctx.info.get("name"), "adapter has no name"
    return ctx
