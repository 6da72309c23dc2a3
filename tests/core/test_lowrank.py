"""lowrank's choice of k and the error it promises, against the float64 reference."""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.core.borders import Border
from blurapp.core.errors import StrategyError, UsageError
from blurapp.core.kernel import Kernel
from blurapp.core.lowrank import (
    DEFAULT_TOLERANCE,
    EXACT_RANK,
    MAX_TERMS,
    check_tolerance,
    low_rank,
    residual_l1,
    why_not,
)
from blurapp.core.reference import correlate_float
from blurapp.core.strategies import STRATEGIES

BORDERS = ("clamp", "zero", "constant=0.5", "reflect", "mirror", "wrap")


def random_kernel(side: int, seed: int) -> Kernel:
    w = np.random.default_rng(seed).random((side, side))
    return Kernel.from_weights(w / w.sum())


@pytest.mark.parametrize(
    ("spec", "k"),
    [("laplacian", 2), ("sharpen", 2), ("log:sigma=1.5", 3), ("unsharp:sigma=2", 2),
     ("dog:sigma=1,2", 2), ("disk:radius=4", 5), ("disk:radius=8", 7), ("gaussian:sigma=2", 1),
     ("identity", 1), ("matrix:3x3:0,0,0,0,0,0,0,0,0", 1)],
)  # fmt: skip
def test_small_ranks_are_used_whole(spec: str, k: int) -> None:
    kernel = Kernel.parse(spec)
    chosen = low_rank(kernel)
    assert chosen.k == k and chosen.exact and chosen.rank <= EXACT_RANK
    assert chosen.error < 1e-12  # exact to round-off
    approx = sum(np.outer(c, r) for c, r in zip(chosen.columns, chosen.rows, strict=True))
    np.testing.assert_allclose(approx, kernel.weights, rtol=0, atol=1e-14)


def test_beyond_the_exact_rank_the_fewest_pairs_within_the_tolerance() -> None:
    kernel = Kernel.parse("disk:radius=16.5")  # rank 11
    errors = residual_l1(kernel)
    for tol in (1e-2, 3e-2, DEFAULT_TOLERANCE, 1e-5):
        chosen = low_rank(kernel, tol)
        assert not chosen.exact and chosen.rank == 11
        assert chosen.error == errors[chosen.k] <= tol
        assert errors[chosen.k - 1] > tol  # one pair fewer would not do
    assert low_rank(kernel, 1e-2).k == 9 and low_rank(kernel).k == 10
    assert low_rank(kernel, 1e-2).describe() == "lowrank k=9 (tolerance 0.01), error ≤ 0.0098"


def test_the_error_is_the_l1_norm_of_the_residual_kernel() -> None:
    kernel = Kernel.parse("disk:radius=12")
    sep = kernel.separability
    for k in range(0, 12):
        direct = np.abs(kernel.weights - sep.approximation(k)).sum()
        assert residual_l1(kernel)[k] == pytest.approx(direct, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("tol", [1e-2, 3e-2])
def test_the_promise_holds_against_the_reference(border: str, tol: float) -> None:
    # The bound max|error| <= ||K - K_k||_1 · max|x| (x including the border constant) is
    # rigorous: check it in float64 on an image made to be nasty (±1 checkerboard noise).
    kernel = Kernel.parse("disk:radius=12.5")
    chosen = low_rank(kernel, tol)
    approx = Kernel.from_weights(
        sum(np.outer(c, r) for c, r in zip(chosen.columns, chosen.rows, strict=True))
    )
    rng = np.random.default_rng(7)
    x = np.sign(rng.standard_normal((40, 31, 1)))
    b = Border.parse(border)
    err = np.abs(correlate_float(x, approx, b) - correlate_float(x, kernel, b)).max()
    assert err <= chosen.error * max(1.0, abs(b.value)) + 1e-12
    assert err <= tol


def test_more_than_max_terms_is_refused_in_one_line() -> None:
    kernel = random_kernel(65, 65)  # rank 65, slowly decaying
    message = why_not(kernel, 1e-6)
    assert message is not None and "\n" not in message
    assert f"more than {MAX_TERMS} separable pairs" in message and "rank 65" in message
    with pytest.raises(StrategyError, match="larger --tolerance"):
        low_rank(kernel, 1e-6)
    assert STRATEGIES["lowrank"].why_not(kernel, 1e-6) == message
    assert STRATEGIES["lowrank"].why_not(kernel, 0.5) is None  # a loose tolerance: a few pairs


@pytest.mark.parametrize("bad", [0, -1e-3, float("nan"), float("inf"), "x", True])
def test_bad_tolerances_are_usage_errors(bad: object) -> None:
    with pytest.raises(UsageError, match="tolerance must be"):
        check_tolerance(bad)  # type: ignore[arg-type]
    assert check_tolerance(None) == DEFAULT_TOLERANCE == 0.5 / 255
