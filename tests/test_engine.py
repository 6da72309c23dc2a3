"""blurapp.filter_image (the pixel pipeline): the public API's 8-bit fast path, input reuse,
and alpha premultiplied by default."""

from __future__ import annotations

import numpy as np
import pytest

import blurapp
from blurapp.core.borders import Border
from blurapp.core.kernel import Kernel
from blurapp.core.numbers import from_float, to_float
from blurapp.core.reference import correlate_float


def _photo(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Smooth ramps plus noise: both flat areas (ties are likely) and edges, 8-bit."""
    rng = np.random.default_rng(seed)
    h, w = shape[:2]
    ramp = np.add.outer(np.linspace(0, 180, h), np.linspace(0, 60, w))
    if len(shape) == 3:
        ramp = ramp[:, :, None] + np.arange(shape[2]) * 10
    return np.clip(ramp + rng.integers(0, 30, shape), 0, 255).astype(np.uint8)


def _expected(image: np.ndarray, spec: str, border: str, range_mode: str) -> np.ndarray:
    ref = correlate_float(to_float(image), Kernel.parse(spec), Border.parse(border))
    return from_float(ref, image.dtype, range_mode=range_mode, squeeze=image.ndim == 2)


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["separable", "tiled", "direct", "transpose", "auto"])
@pytest.mark.parametrize("range_mode", ["clamp", "abs", "offset"])
@pytest.mark.parametrize("shape", [(1, 1), (23, 41), (17, 9, 3), (33, 20, 4), (5, 6, 2)])
def test_8bit_images_match_the_reference_within_one_level(
    gpu, strategy: str, range_mode: str, shape: tuple[int, ...]
) -> None:
    image = _photo(shape, sum(shape))
    spec = "gaussian:sigma=1.5" if strategy in ("separable", "transpose") else "sobel:x"
    result = blurapp.filter_image(image, spec, border="mirror", strategy=strategy,
                                  range_mode=range_mode, alpha="straight")  # fmt: skip
    want = _expected(image, spec, "mirror", range_mode)
    assert result.image.dtype == np.uint8
    assert result.image.shape == image.shape
    diff = np.abs(result.image.astype(int) - want.astype(int))
    # Off by one only where f32 and f64 round a value on a .5 tie differently: rare for a
    # Gaussian; common for integer kernels in offset mode (k/255 + 0.5 is often a tie).
    assert diff.max() <= 1
    if spec.startswith("gaussian"):
        assert np.count_nonzero(diff) <= max(1, image.size // 100)


@pytest.mark.gpu
def test_8bit_fast_path_equals_the_float_path(gpu) -> None:
    """rgba8 in and out gives the pixels the float32 path gives (f32 accumulation both)."""
    from blurapp.engine import filter_float

    image = _photo((64, 96, 3), 1)
    for spec, strategy in (("gaussian:sigma=2", "separable"), ("sharpen", "tiled")):
        fast = blurapp.filter_image(image, spec, strategy=strategy).image
        y, *_ = filter_float(to_float(image), spec, "clamp", strategy)
        slow = from_float(y, np.uint8, range_mode="clamp", squeeze=False)
        assert np.abs(fast.astype(int) - slow.astype(int)).max() <= 1
        assert np.count_nonzero(fast != slow) <= image.size // 1000


@pytest.mark.gpu
def test_input_key_uploads_a_preview_image_once(gpu) -> None:
    from blurapp.gpu.engine import get_filter

    f = get_filter()
    image = _photo((40, 50, 3), 2)
    other = _photo((40, 50, 3), 3)
    before = f.uploads
    first = blurapp.filter_image(image, "box:3", strategy="separable", input_key=7)
    blurapp.filter_image(image, "gaussian:sigma=1", strategy="separable", input_key=7)
    second = blurapp.filter_image(image, "box:3", border="wrap", strategy="tiled", input_key=7)
    assert f.uploads == before + 1
    np.testing.assert_array_equal(first.image, _expected(image, "box:3", "clamp", "clamp"))
    np.testing.assert_array_equal(second.image, _expected(image, "box:3", "wrap", "clamp"))
    # A float image under the same key is other pixels in another texture: uploaded.
    blurapp.filter_image(to_float(image, np.float32), "box:3", strategy="tiled", input_key=7)
    assert f.uploads == before + 2
    changed = blurapp.filter_image(other, "box:3", strategy="separable", input_key=8)
    assert f.uploads == before + 3
    np.testing.assert_array_equal(changed.image, _expected(other, "box:3", "clamp", "clamp"))


def test_16bit_images_on_the_cpu_keep_the_float64_path() -> None:
    image = (_photo((12, 14, 3), 4).astype(np.uint16) * 257) ^ 0x5A
    got = blurapp.filter_image(image, "box:3", strategy="cpu", border="reflect").image
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, _expected(image, "box:3", "reflect", "clamp"))


@pytest.mark.parametrize("strategy", ["cpu", pytest.param("auto", marks=pytest.mark.gpu)])
def test_alpha_is_premultiplied_unless_asked_otherwise(request, strategy: str) -> None:
    """A half-transparent red | opaque green edge: no red fringe on the green side by default
    (DESIGN.md "Numbers"); ``alpha="straight"`` blurs the colour as it is stored."""
    if strategy != "cpu":
        request.getfixturevalue("gpu")
    image = np.zeros((9, 16, 4), np.uint8)
    image[:, :8] = (255, 0, 0, 10)
    image[:, 8:] = (0, 255, 0, 255)
    pre = blurapp.filter_image(image, "gaussian:sigma=3", strategy=strategy).image
    straight = blurapp.filter_image(
        image, "gaussian:sigma=3", strategy=strategy, alpha="straight"
    ).image
    # Right of the edge, the red of a nearly invisible neighbour must not show.
    assert pre[4, 9, 0] <= 5 and pre[4, 9, 1] >= 245
    assert straight[4, 9, 0] > 40
    np.testing.assert_array_equal(pre[..., 3], straight[..., 3])


def test_filter_image_takes_every_option_of_the_spec() -> None:
    """channels and tolerance reach the pipeline through blurapp.filter_image too."""
    image = np.random.default_rng(4).integers(0, 256, (9, 8, 4)).astype(np.uint8)
    got = blurapp.filter_image(image, "box:3", strategy="cpu", channels="rgb").image
    np.testing.assert_array_equal(got[..., 3], image[..., 3])
    with pytest.raises(blurapp.core.errors.UsageError, match="unknown filter option"):
        blurapp.filter_image(image, "box:3", colour="red")
