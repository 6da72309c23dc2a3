"""Shared fixtures. GPU tests use the ``gpu`` fixture: without an adapter they skip, or fail
when BLURAPP_REQUIRE_GPU=1 (as in CI), so a missing driver can never turn CI green."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

_ADAPTERS: set[str] = set()


@pytest.fixture(scope="session")
def gpu(record_testsuite_property) -> object:
    """The process's GpuContext; skips without an adapter, fails when BLURAPP_REQUIRE_GPU=1.

    The adapter's name is recorded (JUnit property ``gpu_adapter`` and the terminal summary)
    and asserted non-empty, so that a silent no-op cannot pass for a GPU run.
    """
    from blurapp.core.errors import GpuUnavailableError
    from blurapp.gpu.device import get_device

    try:
        ctx = get_device()
    except GpuUnavailableError as err:
        if os.environ.get("BLURAPP_REQUIRE_GPU") == "1":
            pytest.fail(f"BLURAPP_REQUIRE_GPU=1 but no WebGPU adapter: {err}")
        pytest.skip(f"no WebGPU adapter: {err}")
    name = ctx.info["name"]
    assert name.strip(), "the adapter has no name"
    record_testsuite_property("gpu_adapter", f"{name} ({ctx.info['backend']})")
    _ADAPTERS.add(f"{name} via {ctx.info['backend']}")
    return ctx


def pytest_terminal_summary(terminalreporter) -> None:
    if _ADAPTERS:
        terminalreporter.write_line(f"GPU tests ran on: {', '.join(sorted(_ADAPTERS))}")
