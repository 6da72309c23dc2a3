"""Weights and border values that float32 cannot hold are refused up front (exit 2), and
``--convolve`` is ``scipy.ndimage.convolve``, even-sized kernels included (DESIGN.md "Numbers",
"Kernels"; issue 18)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from blurapp.core.borders import Border
from blurapp.core.errors import BorderError, KernelSpecError, UsageError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate


@pytest.mark.parametrize(
    "spec",
    ["matrix:1x1:1e39", "matrix:3x1:1,4e38,1", "matrix:1x1:-1e300", "matrix:1x1:1e300"],
)
def test_weights_beyond_float32_are_refused(spec: str) -> None:
    with pytest.raises(KernelSpecError, match="beyond float32's range"):
        Kernel.parse(spec)
    with pytest.raises(UsageError):
        FilterSpec.create(spec, strategy="separable")


def test_the_largest_float32_weight_is_accepted() -> None:
    top = float(np.finfo(np.float32).max)
    assert Kernel.from_weights([[top]]).weights[0, 0] == top


@pytest.mark.parametrize("text", ["constant=1e300", "constant=-4e38", "constant=1e39"])
def test_border_values_beyond_float32_are_refused(text: str) -> None:
    with pytest.raises(BorderError, match="beyond float32's range") as info:
        Border.parse(text)
    assert info.value.exit_code == 2
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kshape", [(1, 4), (2, 3), (4, 4), (3, 3), (2, 2), (5, 2)])
@pytest.mark.parametrize("border", ["clamp", "zero", "reflect", "mirror", "wrap"])
def test_convolve_is_scipy_convolve(kshape: tuple[int, int], border: str) -> None:
    mode = {"clamp": "nearest", "zero": "constant", "wrap": "grid-wrap"}.get(border, border)
    rng = np.random.default_rng(11)
    image = rng.random((9, 10))
    weights = rng.standard_normal(kshape)
    want = ndimage.convolve(image, weights, mode=mode)
    got = correlate(image, Kernel.from_weights(weights), border, convolve=True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    spec = FilterSpec.create(Kernel.from_weights(weights), border, "cpu", convolve=True)
    np.testing.assert_allclose(correlate(image, spec.effective_kernel, border), want, atol=1e-12)


def test_a_symmetric_even_kernel_still_moves_its_anchor() -> None:
    # box:4 is its own rotation, but convolving with it is not correlating with it.
    image = np.random.default_rng(2).random((6, 8))
    box = Kernel.parse("box:4")
    want = ndimage.convolve(image, box.weights, mode="nearest")
    np.testing.assert_allclose(correlate(image, box, "clamp", convolve=True), want, atol=1e-12)
    assert not np.allclose(correlate(image, box, "clamp"), want)


def test_convolution_kernel_of_odd_sizes_is_the_flipped_kernel() -> None:
    k = Kernel.parse("emboss")
    assert k.for_convolution() == k.flipped()
    even = Kernel.parse("matrix:2x1:1,2").for_convolution()
    np.testing.assert_array_equal(even.weights, [[0.0, 2.0, 1.0]])
