"""FilterSpec: checked once, and a round trip through command-line options."""

from __future__ import annotations

import argparse

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blurapp.core.borders import Border
from blurapp.core.errors import StrategyError, UsageError
from blurapp.core.filterspec import DTYPES, FilterSpec, add_filter_arguments
from blurapp.core.kernel import Kernel
from blurapp.core.numbers import RANGE_MODES
from blurapp.core.strategies import STRATEGIES, names

KERNELS = ("gaussian:sigma=2", "box:7x3", "sobel:x", "laplacian", "matrix:3x1:1,2,3.5")


def test_defaults_are_the_command_lines() -> None:
    spec = FilterSpec.create("box:3")
    parser = argparse.ArgumentParser()
    add_filter_arguments(parser)
    assert FilterSpec.from_namespace(parser.parse_args(["--kernel", "box:3"])) == spec
    assert spec.border == Border.parse("clamp") and spec.strategy == "auto"
    assert (spec.alpha, spec.range_mode, spec.linear, spec.convolve) == (
        "premultiply", "clamp", False, False,
    )  # fmt: skip
    assert spec.dtype is None and spec.tile is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategy": "fastest"}, "unknown strategy 'fastest'"),
        ({"kernel": "laplacian", "strategy": "separable"}, "rank-1"),
        ({"strategy": "tiled", "tile": 12}, "tile size 12"),
        ({"range_mode": "wide"}, "range mode 'wide'"),
        ({"alpha": "sideways"}, "alpha mode 'sideways'"),
        ({"dtype": "int8"}, "pixel type 'int8'"),
        ({"border": "sideways"}, "sideways"),
        ({"kernel": "gaussian:sigma=-1"}, "sigma"),
        ({"channels": "rgbx"}, "letters of rgba"),
        ({"channels": ""}, "letters of rgba"),
        ({"channels": "rr"}, "each at most once"),
    ],
)
def test_every_bad_value_is_one_line_naming_it(kwargs: dict, message: str) -> None:
    kwargs = {"kernel": "box:3", **kwargs}
    with pytest.raises(UsageError, match=message) as err:
        FilterSpec.create(**kwargs)
    assert "\n" not in str(err.value)


def test_convolve_is_checked_on_the_flipped_kernel_and_kept_as_given() -> None:
    spec = FilterSpec.create("matrix:3x1:1,2,3", convolve=True)
    assert spec.kernel.spec == "matrix:3x1:1,2,3"
    np.testing.assert_array_equal(spec.effective_kernel.weights, [[3.0, 2.0, 1.0]])
    with pytest.raises(StrategyError):
        FilterSpec.create("emboss", strategy="transpose", convolve=True)


def test_tile_only_for_strategies_that_take_one() -> None:
    assert FilterSpec.create("box:3", strategy="tiled", tile=16).tile == 16
    assert FilterSpec.create("box:3", strategy="auto", tile=8).tile == 8
    assert FilterSpec.create("box:3", strategy="direct", tile=16).tile is None
    assert FilterSpec.create("box:3", strategy="tiled").replace(strategy="cpu").tile is None


def test_replace_checks_like_create() -> None:
    spec = FilterSpec.create("gaussian:sigma=2", "mirror", "separable")
    assert spec.replace(border="wrap").border == Border.parse("wrap")
    with pytest.raises(StrategyError, match="rank"):
        spec.replace(kernel="laplacian")
    assert spec.replace(kernel=Kernel.parse("box:3")).kernel == Kernel.parse("box:3")


@settings(max_examples=150, deadline=None)
@given(
    kernel=st.sampled_from(KERNELS),
    border=st.sampled_from(["clamp", "zero", "reflect", "mirror", "wrap", "constant=0.25"]),
    strategy=st.sampled_from(names()),
    tile=st.sampled_from([None, 8, 16, 32]),
    convolve=st.booleans(),
    range_mode=st.sampled_from(RANGE_MODES),
    alpha=st.sampled_from(["premultiply", "straight"]),
    linear=st.booleans(),
    dtype=st.sampled_from([None, *DTYPES]),
    tolerance=st.sampled_from([None, 1e-2, 0.5 / 255, 3.3e-4, 0.1 + 0.2]),
)
def test_argv_round_trip(**kwargs) -> None:
    try:
        spec = FilterSpec.create(**kwargs)
    except StrategyError:
        return  # a rank-1 strategy with a rank-2 kernel: refused, nothing to round-trip
    argv = spec.to_argv()
    assert FilterSpec.from_argv(argv) == spec
    assert FilterSpec.from_argv(FilterSpec.from_argv(argv).to_argv()).to_argv() == argv


def test_grid_kernels_round_trip_bit_for_bit() -> None:
    weights = np.random.default_rng(0).normal(size=(4, 5))
    spec = FilterSpec.create(Kernel.from_weights(weights), strategy="tiled", tile=32)
    back = FilterSpec.from_argv(spec.to_argv())
    assert back == spec and np.array_equal(back.kernel.weights, weights)


def test_from_argv_refuses_what_is_not_a_filter_option() -> None:
    with pytest.raises(UsageError, match="bad filter options"):
        FilterSpec.from_argv(["--kernel", "box:3", "--overwrite"])
    with pytest.raises(UsageError, match="bad filter options"):
        FilterSpec.from_argv(["--border", "wrap"])  # no kernel


def test_help_lists_the_registries() -> None:
    parser = argparse.ArgumentParser()
    add_filter_arguments(parser)
    text = " ".join(parser.format_help().split())
    assert ", ".join(STRATEGIES) in text
    assert ", ".join(RANGE_MODES) in text


def test_tolerance_only_for_strategies_that_take_one() -> None:
    spec = FilterSpec.create("disk:radius=8", strategy="lowrank", tolerance=1e-2)
    assert spec.tolerance == 1e-2
    assert spec.to_argv()[-2:] == ["--tolerance", "0.01"]
    assert FilterSpec.create("disk:radius=8", strategy="auto", tolerance=1e-2).tolerance == 1e-2
    # The default is stored as None (no option in the command line); direct ignores it.
    assert (
        FilterSpec.create("disk:radius=8", strategy="lowrank", tolerance=0.5 / 255).tolerance
        is None
    )
    assert FilterSpec.create("disk:radius=8", strategy="direct", tolerance=1e-2).tolerance is None
    assert spec.replace(strategy="tiled").tolerance is None


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_tolerances_are_one_line(bad: float) -> None:
    with pytest.raises(UsageError, match="tolerance must be a finite number > 0"):
        FilterSpec.create("disk:radius=8", strategy="lowrank", tolerance=bad)
    with pytest.raises(UsageError, match="--tolerance"):
        FilterSpec.from_argv(["--kernel", "box:3", "--tolerance", str(bad)])
    with pytest.raises(UsageError, match="--tolerance"):
        FilterSpec.from_argv(["--kernel", "box:3", "--tolerance", "lots"])


def test_lowrank_beyond_its_pairs_is_refused_where_the_spec_enters() -> None:
    w = np.random.default_rng(3).random((49, 49))
    w /= w.sum()
    with pytest.raises(StrategyError, match="more than 32 separable pairs"):
        FilterSpec.create(Kernel.from_weights(w), strategy="lowrank", tolerance=1e-9)
    FilterSpec.create(Kernel.from_weights(w), strategy="lowrank", tolerance=0.5)  # a few do


def test_channels_are_canonical_and_all_of_them_is_none() -> None:
    assert FilterSpec.create("box:3", channels="BAR").channels == "rba"
    assert FilterSpec.create("box:3", channels="abgr").channels is None
    spec = FilterSpec.create("box:3", channels="rgb")
    assert [spec.filters_channel(c, 4) for c in range(4)] == [True, True, True, False]
    assert [spec.filters_channel(c, 2) for c in range(2)] == [True, False]  # grey + alpha
    only_a = FilterSpec.create("box:3", channels="a")
    assert [only_a.filters_channel(c, 1) for c in range(1)] == [False]


def test_the_api_options_are_the_keywords_of_create() -> None:
    """FilterSpec.of: the Python API's keywords are create's, checked; a whole spec alone."""
    spec = FilterSpec.of("box:3", border="wrap", channels="rgb", tolerance=0.01)
    assert spec == FilterSpec.create("box:3", "wrap", channels="rgb", tolerance=0.01)
    assert FilterSpec.of(spec) is spec
    with pytest.raises(UsageError, match="not both"):
        FilterSpec.of(spec, border="wrap")
    with pytest.raises(UsageError, match="unknown filter option 'sigma'; the options are border"):
        FilterSpec.of("box:3", sigma=2)
