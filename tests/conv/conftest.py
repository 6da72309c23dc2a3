"""Fixtures of the conv-layer tests: the runner on the session's GPU (see tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def conv_runner(gpu):
    """A ConvRunner on the adapter of the ``gpu`` fixture (skip, or fail in CI, without one)."""
    from blurapp.conv.engine import ConvRunner

    return ConvRunner(gpu)
