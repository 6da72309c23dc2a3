"""Shared fixtures. GPU tests use the ``gpu`` fixture: without an adapter they skip, or fail
when BLURAPP_REQUIRE_GPU=1 (as in CI), so a missing driver can never turn CI green."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# No calibration of the adapter behind the tests' back (blurapp.gpu.calibration): plans use the
# built-in cost table, whatever the developer's cache holds; the calibration tests switch it on.
os.environ["BLURAPP_CALIBRATION"] = "off"

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


def _blurapp_on_a_tty(*args: object, env: dict[str, str] | None = None) -> tuple[str, int]:
    """Run ``python -m blurapp ARGS`` with standard output on a pseudo-terminal; returns what
    it drew there and its exit code."""
    import pty
    import subprocess
    import sys

    primary, secondary = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "blurapp", *map(str, args)], stdout=secondary,
        stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
    ) as p:  # fmt: skip
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = p.wait(timeout=120)
    os.close(primary)
    return b"".join(chunks).decode(), code


@pytest.fixture
def on_a_tty():
    """:func:`_blurapp_on_a_tty`: blurapp with its standard output on a terminal."""
    return _blurapp_on_a_tty
