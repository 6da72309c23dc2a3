"""GPU engine fixtures (the shared ``gpu`` fixture is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def fresh_filter(gpu) -> Iterator[object]:
    """A GpuFilter of its own (empty caches, counted object creations) on the shared device."""
    from blurapp.gpu.engine import GpuFilter

    f = GpuFilter(gpu)
    yield f
    f.clear()
