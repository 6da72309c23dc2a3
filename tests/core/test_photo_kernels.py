"""The photo families: bokeh (polygonal aperture), unsharp (rank 2) and dog, and their errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from blurapp.core.errors import KernelSpecError
from blurapp.core.kernel import Kernel
from blurapp.core.kernel_families import DOG_RATIO, gaussian_1d


def test_bokeh_is_a_normalised_antialiased_polygon() -> None:
    k = Kernel.parse("bokeh:radius=8")
    assert k.spec == "bokeh:radius=8" and k.shape == (17, 17)
    w = k.weights
    assert w.sum() == pytest.approx(1.0, abs=1e-15)
    assert (w >= 0).all()
    # Area coverage: the polygon's area is (N/2) R² sin(2π/N), each full pixel 1 / area.
    area = 6 / 2 * 8**2 * math.sin(2 * math.pi / 6)
    assert w.max() == pytest.approx(1 / area, rel=0.02)
    # Hexagon with a corner at +x: the corners' pixels are lit, the top edge is flat (at the
    # apothem R cos 30° = 6.93 the row 7 above the centre is mostly outside, row 6 inside).
    assert w[8, 16] > 0 and w[8, 0] > 0
    assert w[1, 8] < w[2, 8] == w[8, 8]
    assert w[0, 8] == 0.0
    # Symmetric under the hexagon's mirror lines through the centre row and column.
    np.testing.assert_array_equal(w, w[::-1, :])
    np.testing.assert_array_equal(w, w[:, ::-1])


def test_bokeh_rotation_and_blades() -> None:
    square = Kernel.parse("bokeh:radius=5,blades=4,rotation=45").weights
    # A square with corners at 45°: sides 2R cos 45° = 7.07 px, axis-aligned.
    assert (square > 0).sum() == 9 * 9 - 0  # 7.07 wide, centred: touches 9 columns and rows
    np.testing.assert_allclose(square, square.T, atol=1e-15)
    diamond = Kernel.parse("bokeh:radius=5,blades=4").weights  # corners on the axes
    assert diamond[5, 0] > 0 and diamond[0, 0] == 0
    # Rotating a pentagon by its own corner step (72°) changes nothing.
    a = Kernel.parse("bokeh:radius=6,blades=5,rotation=10").weights
    b = Kernel.parse("bokeh:radius=6,blades=5,rotation=82").weights
    np.testing.assert_allclose(a, b, atol=1e-12)
    # blades=0 is the round aperture: disk's weights.
    np.testing.assert_array_equal(
        Kernel.parse("bokeh:radius=4.5,blades=0").weights, Kernel.parse("disk:radius=4.5").weights
    )
    # Not separable: a hexagon of radius 8 has rank 6.
    assert Kernel.parse("bokeh:radius=8").separability.rank > 1


@pytest.mark.parametrize(("sigma", "amount"), [(1.0, 1.0), (2.0, 0.5), (0.3, 3.0)])
def test_unsharp_is_identity_plus_amount_times_detail(sigma: float, amount: float) -> None:
    k = Kernel.parse(f"unsharp:sigma={sigma},amount={amount}")
    r = int(4 * sigma + 0.5)
    g = np.outer(gaussian_1d(sigma, r), gaussian_1d(sigma, r))
    delta = np.zeros_like(g)
    delta[r, r] = 1.0
    np.testing.assert_allclose(k.weights, delta + amount * (delta - g), atol=1e-15)
    assert k.weights.sum() == pytest.approx(1.0, abs=1e-14)
    assert k.separability.rank == (2 if r > 0 else 1)


def test_unsharp_default_amount_is_one() -> None:
    assert Kernel.parse("unsharp:2") == Kernel.parse("unsharp:sigma=2,amount=1")
    assert Kernel.parse("unsharp:sigma=2,amount=0").weights[8, 8] == 1.0  # amount 0: identity


def test_dog_is_a_zero_sum_difference_of_gaussians() -> None:
    k = Kernel.parse("dog:sigma=1,2")
    assert k.spec == "dog:sigma=1,sigma2=2" and k.shape == (17, 17)
    g1, g2 = gaussian_1d(1.0, 8), gaussian_1d(2.0, 8)
    np.testing.assert_allclose(k.weights, np.outer(g1, g1) - np.outer(g2, g2), atol=1e-16)
    assert abs(k.weights.sum()) < 1e-15
    assert k.weights[8, 8] > 0 and k.weights[8, 0] < 0  # centre up, surround down
    assert k.separability.rank == 2
    default = Kernel.parse("dog:sigma=1.5")
    assert default == Kernel.parse(f"dog:sigma=1.5,sigma2={DOG_RATIO * 1.5}")
    assert default.shape == (2 * int(4 * 1.5 * DOG_RATIO + 0.5) + 1,) * 2
    assert Kernel.parse("dog:1,2") == k == Kernel.parse("dog:sigma=1,sigma2=2")


def test_log_and_friends_have_the_low_ranks_lowrank_relies_on() -> None:
    for spec in ("log:sigma=1.5", "log:sigma=3", "log:sigma=0.8"):
        assert Kernel.parse(spec).separability.rank <= 3, spec
    for spec in ("unsharp:sigma=2", "unsharp:sigma=5,amount=2", "dog:sigma=2,sigma2=3"):
        assert Kernel.parse(spec).separability.rank == 2, spec


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("bokeh", "bokeh needs radius"),
        ("bokeh:radius=0.2", "'0.2'"),
        ("bokeh:radius=4,blades=2", "blades must be 0 (round) or >= 3, got '2'"),
        ("bokeh:radius=4,blades=-1", "'-1'"),
        ("bokeh:radius=4,blades=six", "'six'"),
        ("bokeh:radius=4,rotation=nan", "'nan'"),
        ("bokeh:radius=300", "limit"),
        ("bokeh:radius=4,aperture=2", "unknown parameter 'aperture'"),
        ("unsharp", "unsharp needs sigma"),
        ("unsharp:sigma=0", "'0'"),
        ("unsharp:sigma=1,amount=-1", "amount must be >= 0, got '-1'"),
        ("unsharp:sigma=100", "limit"),
        ("dog", "dog needs sigma"),
        ("dog:sigma=-1", "'-1'"),
        ("dog:sigma=1,sigma2=0", "'0'"),
        ("dog:sigma=1,1", "two different sigmas"),
        ("dog:sigma=1,2,3", "unexpected value"),
        ("dog:sigma=0.05,sigma2=0.1", "radius 0"),
        ("dog:sigma=1,sigma2=80", "limit"),
    ],
)
def test_bad_photo_specs_raise_one_line_naming_the_problem(spec: str, named: str) -> None:
    with pytest.raises(KernelSpecError) as err:
        Kernel.parse(spec)
    message = str(err.value)
    assert named in message and "\n" not in message
