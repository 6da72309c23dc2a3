"""scipy's own test_filters.py, run against blurapp.ndimage.

scipy's test module does ``from scipy import ndimage`` and reads ``ndimage.correlate`` and the
others also in its decorators (``parametrize`` lists, ``make_xp_test_case``), so ``ndimage``
must be ours while the module is imported, not only patched afterwards: the import below runs
with ``scipy.ndimage`` bound to a stand-in module holding blurapp.ndimage's functions (and,
for scipy's other filters, which blurapp does not offer, functions that raise), and scipy's
own module is put back right after. The tests are then collected from here.
"""

from __future__ import annotations

import importlib
import sys
import types

import scipy
import scipy.ndimage
import scipy.ndimage._filters
import scipy.ndimage.tests
from scipy._lib import _array_api

import blurapp.ndimage
from blurapp.ndimage import _filters, _support

SUITE = "scipy.ndimage.tests.test_filters"


def _not_ours(name: str):
    """A stand-in for a scipy.ndimage function outside blurapp.ndimage (rank, median, generic
    filters): collection needs the name; the tests that call it are NOT_APPLICABLE."""

    def missing(*args, **kwargs):
        raise NotImplementedError(f"ndimage.{name} is not part of blurapp.ndimage")

    missing.__name__ = missing.__qualname__ = name
    missing._blurapp_not_ours = True
    return missing


def _ours() -> types.ModuleType:
    module = types.ModuleType("ndimage", "blurapp.ndimage as scipy's tests see it")
    table = _array_api.xp_capabilities_table
    for name in scipy.ndimage.__all__:
        theirs = getattr(scipy.ndimage, name)
        mine = getattr(blurapp.ndimage, name) if name in blurapp.ndimage.__all__ else None
        mine = mine or _not_ours(name)
        setattr(module, name, mine)
        if theirs in table:  # make_xp_test_case(ndimage.f) reads scipy's capabilities of f
            table.setdefault(mine, table[theirs])
    module._ni_support = types.SimpleNamespace(_normalize_sequence=_support.normalize_sequence)
    return module


def _import_suite(ndimage: types.ModuleType) -> types.ModuleType:
    sys.modules.pop(SUITE, None)
    real = sys.modules["scipy.ndimage"]
    sys.modules["scipy.ndimage"] = ndimage
    scipy.ndimage = ndimage
    try:
        suite = importlib.import_module(SUITE)
    finally:
        sys.modules["scipy.ndimage"] = real
        scipy.ndimage = real
        sys.modules.pop(SUITE, None)  # nobody else gets this bound copy
    suite._gaussian_kernel1d = _filters._gaussian_kernel1d
    return suite


def ndimage_names() -> list[str]:
    return list(blurapp.ndimage.__all__)


suite = _import_suite(_ours())
assert all(getattr(suite.ndimage, n) is getattr(blurapp.ndimage, n) for n in ndimage_names())

for _name in dir(suite):
    if _name.startswith(("test_", "Test")):
        globals()[_name] = getattr(suite, _name)

# The tests of scipy's other filters, which blurapp.ndimage does not offer (issue 23 lists the
# linear filters); each one calls one of them. Parametrized tests are deselected by their
# parameters instead, where a parameter is such a filter (conftest.py).
_RANK = "tests rank_filter / median_filter / percentile_filter, not in blurapp.ndimage"
_MINMAX = "tests minimum_filter / maximum_filter (1-D or n-D), not in blurapp.ndimage"
_GENERIC = "tests generic_filter / generic_filter1d (Python callbacks), not in blurapp.ndimage"
_VECTORIZED = "tests vectorized_filter, not in blurapp.ndimage"
NOT_APPLICABLE: dict[str, str] = {
    **{f"TestNdimageFilters::test_rank{i:02d}": _RANK for i in range(1, 20)},
    "TestNdimageFilters::test_rank06_overlap": _RANK,
    **{f"TestNdimageFilters::test_minimum_filter{i:02d}": _MINMAX for i in range(1, 10)},
    "TestNdimageFilters::test_minimum_filter05_overlap": _MINMAX,
    **{f"TestNdimageFilters::test_maximum_filter{i:02d}": _MINMAX for i in range(1, 10)},
    "TestNdimageFilters::test_maximum_filter05_overlap": _MINMAX,
    "TestNdimageFilters::test_generic_filter01": _GENERIC,
    "TestNdimageFilters::test_generic_filter1d01": _GENERIC,
    "TestNdimageFilters::test_generic_filter_axes": _GENERIC,
    "TestThreading::test_median_filter": _RANK,
    "TestThreading::test_minmax_filter": _MINMAX,
    "TestVectorizedFilter": _VECTORIZED,
    "test_byte_order_median": _RANK,
    "test_footprint_all_zeros": _MINMAX,
    "test_gh_22250": _RANK,
    "test_gh_22333": _RANK,
    "test_gh_22586_crash_property": _RANK,
    "test_gh_23075": _RANK,
    "test_gh_23075_constant": _RANK,
    "test_median_filter_lim2": _RANK,
    "test_minmaximum_filter1d": _MINMAX,
    "test_rank_filter_noninteger_rank": _RANK,
    "test_size_footprint_both_set": _RANK,
    "test_ticket_701": _GENERIC,
    "test_valid_origins1": _GENERIC,
    "test_multiple_modes_sequentially": (
        "compares gaussian_filter1d, uniform_filter1d and maximum_filter1d chains; the last is "
        "not in blurapp.ndimage (tests/ndimage/test_filters.py's "
        "test_multiple_modes_equal_the_1d_passes_in_turn runs the linear part)"
    ),
}

# Where blurapp.ndimage differs from scipy on purpose (docs/NDIMAGE.md): these cases run and
# must fail (xfail, strict), so that the difference is known to hold.
DIFFERENT: dict[str, str] = {
    "test_gaussian_filter_float16": (
        "scipy raises RuntimeError for float16; blurapp.ndimage filters float16 in float32, "
        "as cupyx.scipy.ndimage does (tests/ndimage/test_filters.py checks the values)"
    ),
}
