"""NaN and Inf on the GPU: every 2-D and rank-1 strategy marks an output NaN (or ±Inf) exactly
where scipy.ndimage.correlate does, for every border mode (DESIGN.md "Numbers"): a zero tap is
skipped, not multiplied, and a tiled block's padding rows reach nothing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from blurapp.core.kernel import Kernel
from blurapp.engine import filter_float
from blurapp.gpu.shaders import load_shader
from blurapp.gpu.strategies import get_strategy

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "_nonfinite", _HERE.parent / "core/test_nonfinite.py"
)
_core = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_core)
SCIPY_MODES, non_finite_image, scipy_correlate = (
    _core.SCIPY_MODES,
    _core.non_finite_image,
    _core.scipy_correlate,
)

pytestmark = pytest.mark.gpu

KERNELS_2D = ["sobel:x", "matrix:3x1:1,0,1", "motion:length=5,angle=30", "box:4x2", "box:3"]
KERNELS_RANK1 = ["sobel:x", "matrix:3x1:1,0,1", "box:4x2"]


def check(got: np.ndarray, want: np.ndarray) -> None:
    got = np.asarray(got, dtype=np.float64)
    for name, test in (("NaN", np.isnan), ("+Inf", np.isposinf), ("-Inf", np.isneginf)):
        diff = np.argwhere(test(got) != test(want))
        assert diff.size == 0, f"{name} differs from scipy at {diff[:5].tolist()}"
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], atol=2e-5)


@pytest.mark.parametrize("border", SCIPY_MODES)
@pytest.mark.parametrize("spec", KERNELS_2D)
def test_direct_and_tiled(gpu, spec: str, border: str) -> None:
    kernel = Kernel.parse(spec)
    x = non_finite_image()
    want = scipy_correlate(x, kernel.weights, border)
    check(filter_float(x, kernel, border, "direct")[0], want)
    for tile in (8, 32):
        check(filter_float(x, kernel, border, "tiled", tile)[0], want)


@pytest.mark.parametrize("border", SCIPY_MODES)
@pytest.mark.parametrize("strategy", ["separable", "transpose"])
def test_rank_one_strategies(gpu, strategy: str, border: str) -> None:
    x = non_finite_image()
    for spec in KERNELS_RANK1:
        kernel = Kernel.parse(spec)
        check(
            filter_float(x, kernel, border, strategy)[0], scipy_correlate(x, kernel.weights, border)
        )


def test_a_long_one_dimensional_kernel_with_zeros(gpu) -> None:
    # 67 taps: past the baked ones, the 1-D pass loops over the weights buffer.
    taps = np.zeros(67)
    taps[::3] = 1.0
    kernel = Kernel.from_weights(taps[None, :])
    x = non_finite_image((9, 80, 2))
    want = scipy_correlate(x, kernel.weights, "mirror")
    for strategy in ("separable", "direct"):
        check(filter_float(x, kernel, "mirror", strategy)[0], want)


def test_kernels_without_zeros_keep_the_plain_multiply_adds() -> None:
    from blurapp.core.planner import DeviceLimits

    limits = DeviceLimits()
    for name in ("direct", "tiled"):
        plain = get_strategy(name).passes(Kernel.parse("box:3"), 0, 0.0, (64, 64), limits)[0]
        sobel = get_strategy(name).passes(Kernel.parse("sobel:x"), 0, 0.0, (64, 64), limits)[0]
        assert dict(plain.template)["skip_zero"] is False
        assert dict(sobel.template)["skip_zero"] is True
        assert "!= 0.0" not in load_shader(plain.shader, **dict(plain.template))
        assert "!= 0.0" in load_shader(sobel.shader, **dict(sobel.template))


@pytest.mark.parametrize("strategy", ["direct", "tiled", "separable"])
def test_convolve_with_an_even_kernel_is_scipy_convolve_on_the_gpu(gpu, strategy: str) -> None:
    from scipy import ndimage

    from blurapp.pipeline import filter_image

    image = np.random.default_rng(5).random((10, 12)).astype(np.float32)
    weights = np.outer([1.0, 3.0], [1.0, 2.0, 4.0, 8.0])  # rank 1, 4 wide, 2 tall
    want = ndimage.convolve(image.astype(np.float64), weights, mode="mirror")
    got = filter_image(
        image, Kernel.from_weights(weights), border="mirror", strategy=strategy, convolve=True
    ).image
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
