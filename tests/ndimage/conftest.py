"""Fixtures and markers that scipy's own ndimage tests expect from scipy's conftest: the ``xp``
array namespace (numpy only: blurapp.ndimage takes numpy arrays) and scipy's test markers."""

from __future__ import annotations

import numpy as np
import pytest

_SCIPY_MARKERS = (
    "skip_xp_backends(backends, reason=None, np_only=False, cpu_only=False, eager_only=False, "
    "exceptions=None): scipy's array-API skips (no effect on numpy)",
    "xfail_xp_backends(backends, reason=None, np_only=False, cpu_only=False, eager_only=False, "
    "exceptions=None): scipy's array-API xfails (no effect on numpy)",
    "array_api_backends: scipy's marker for tests over array libraries",
    "thread_unsafe: scipy's marker for pytest-run-parallel",
    "parallel_threads_limit(n): scipy's marker for pytest-run-parallel",
    "iterations(n): scipy's marker for pytest-run-parallel",
    "xslow: scipy's very slow tests",
    "fail_slow: scipy's pytest-fail-slow marker",
)


def pytest_configure(config) -> None:
    for line in _SCIPY_MARKERS:
        config.addinivalue_line("markers", line)


@pytest.fixture
def xp():
    """scipy's array-namespace fixture, as numpy alone."""
    return np


@pytest.fixture
def num_parallel_threads():
    """scipy's fixture from pytest-run-parallel: one thread."""
    return 1


def pytest_collection_modifyitems(config, items) -> None:
    """scipy's suite (test_scipy_filters.py): deselect the cases of filters blurapp.ndimage does
    not offer (listed there with their reasons, or a parameter that is such a filter), and
    expect the listed deliberate differences to fail."""
    keep, drop = [], []
    for item in items:
        module = getattr(item, "module", None)
        table = getattr(module, "NOT_APPLICABLE", None)
        if table is None:
            keep.append(item)
            continue
        name = item.nodeid.split("::", 1)[1].split("[", 1)[0]
        params = getattr(getattr(item, "callspec", None), "params", {})
        if name in table or name.split("::", 1)[0] in table:
            drop.append(item)
        elif any(getattr(v, "_blurapp_not_ours", False) for v in params.values()):
            drop.append(item)
        else:
            if name in module.DIFFERENT:
                item.add_marker(pytest.mark.xfail(reason=module.DIFFERENT[name], strict=True))
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
