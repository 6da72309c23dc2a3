"""Transfer curves (blurapp.core.colour): each ICC curve type against its formula, inverses,
odd symmetry, sRGB taken exactly for sRGB, per-channel curves."""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.core.colour import (
    SRGB,
    ChannelCurves,
    TransferCurve,
    linear_to_srgb,
    srgb_to_linear,
)

X = np.linspace(0.0, 1.0, 2049)


def test_srgb_curve_is_the_iec_formula() -> None:
    expected = np.where(X <= 0.04045, X / 12.92, ((X + 0.055) / 1.055) ** 2.4)
    np.testing.assert_allclose(SRGB.to_linear(X), expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(SRGB.from_linear(SRGB.to_linear(X)), X, atol=1e-12)
    np.testing.assert_array_equal(SRGB.to_linear(X), srgb_to_linear(X))
    np.testing.assert_array_equal(SRGB.from_linear(X), linear_to_srgb(X))


@pytest.mark.parametrize(
    ("curve", "formula"),
    [
        (TransferCurve.gamma(563 / 256), lambda x: x ** (563 / 256)),  # Adobe RGB's 2.19921875
        (TransferCurve.gamma(1.8), lambda x: x**1.8),
        (
            TransferCurve.parametric(1, (2.0, 1.5, -0.5)),
            lambda x: np.where(x >= 1 / 3, np.maximum(1.5 * x - 0.5, 0) ** 2.0, 0.0),
        ),
        (
            TransferCurve.parametric(2, (2.0, 1.0, 0.0, 0.1)),
            lambda x: x**2.0 + 0.1,
        ),
        (
            # ProPhoto (ROMM RGB): 1.8 with a linear toe of slope 1/16 below 1/32
            TransferCurve.parametric(3, (1.8, 1.0, 0.0, 1 / 16, 1 / 32)),
            lambda x: np.where(x >= 1 / 32, x**1.8, x / 16),
        ),
        (
            TransferCurve.parametric(4, (2.2, 0.9, 0.1, 0.2, 0.05, 0.01, 0.005)),
            lambda x: np.where(x >= 0.05, (0.9 * x + 0.1) ** 2.2 + 0.01, 0.2 * x + 0.005),
        ),
    ],
)
def test_parametric_curves_follow_icc_formulas_and_invert(curve, formula) -> None:
    np.testing.assert_allclose(curve.to_linear(X), formula(X), atol=1e-12)
    lin = curve.to_linear(X)
    back = curve.from_linear(lin)
    if curve.function in (1, 2):  # flat below -b/a: only the rising part inverts
        keep = X >= 1 / 3 if curve.function == 1 else X > 0
        np.testing.assert_allclose(back[keep], X[keep], atol=1e-9)
    else:
        np.testing.assert_allclose(back, X, atol=1e-9)


def test_a_sampled_table_interpolates_and_inverts() -> None:
    table = np.linspace(0, 1, 1024) ** 2.4  # a camera profile's 1024-entry curv
    curve = TransferCurve.sampled(table)
    np.testing.assert_allclose(curve.to_linear(X), X**2.4, atol=2e-6)
    np.testing.assert_allclose(curve.from_linear(X**2.4), X, atol=1e-3)
    # Beyond 1 (a sharpened highlight) it goes on by the last slope, and back.
    over = np.array([1.05])
    assert curve.to_linear(over)[0] > 1.0
    np.testing.assert_allclose(curve.from_linear(curve.to_linear(over)), over, atol=1e-9)
    with pytest.raises(ValueError, match="non-decreasing"):
        TransferCurve.sampled([0.0, 0.6, 0.5, 1.0])


def test_curves_are_odd_symmetric_and_keep_the_dtype() -> None:
    signed = np.array([-0.5, -0.01, 0.0, 0.01, 0.5], np.float32)
    for curve in (
        SRGB,
        TransferCurve.gamma(2.2),
        TransferCurve.sampled(np.linspace(0, 1, 64) ** 2),
    ):
        lin = curve.to_linear(signed)
        assert lin.dtype == np.float32
        np.testing.assert_allclose(lin, -curve.to_linear(-signed), atol=0)
        np.testing.assert_allclose(curve.from_linear(lin), signed, atol=2e-6)


def test_srgb_as_a_profile_stores_it_is_taken_for_srgb() -> None:
    # s15Fixed16 parameters (what a v4 sRGB or Display P3 profile holds) and a 16-bit table.
    fixed = tuple(round(v * 65536) / 65536 for v in SRGB.params)
    assert TransferCurve.parametric(3, fixed).snapped() is SRGB
    table = np.round(srgb_to_linear(np.linspace(0, 1, 1024)) * 65535) / 65535
    assert TransferCurve.sampled(table).snapped() is SRGB
    assert TransferCurve.gamma(2.2).snapped() == TransferCurve.gamma(2.2)


def test_channel_curves_apply_each_channel_its_own_curve() -> None:
    curves = ChannelCurves((TransferCurve.gamma(2.0), TransferCurve.gamma(1.0), SRGB))
    rgb = np.random.default_rng(1).random((4, 5, 3))
    lin = curves.to_linear(rgb)
    np.testing.assert_allclose(lin[..., 0], rgb[..., 0] ** 2.0)
    np.testing.assert_allclose(lin[..., 1], rgb[..., 1])
    np.testing.assert_allclose(lin[..., 2], srgb_to_linear(rgb[..., 2]))
    np.testing.assert_allclose(curves.from_linear(lin), rgb, atol=1e-12)
    assert ChannelCurves().is_srgb and not curves.is_srgb
