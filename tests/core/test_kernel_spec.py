"""Spec grammar: every family's weights, canonical specs and round trips, and the bad specs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from blurapp.core.errors import KernelSpecError, UsageError
from blurapp.core.kernel import KNOWN_FAMILIES, MAX_KERNEL_SIDE, Kernel
from blurapp.core.kernel_families import SUPERSAMPLE, format_number

# One spec per family and per notable option; each must rebuild itself exactly.
ROUND_TRIP_SPECS = [
    "gaussian:sigma=2",
    "gaussian:sigma=0.7",
    "gaussian:sigma=2x1",
    "gaussian:sigma=1.5,radius=3",
    "gaussian:sigma=1,radius=4x2",
    "box:5",
    "box:4",
    "box:7x3",
    "box:1",
    "sobel:x",
    "sobel:y",
    "sobel:x,size=5",
    "sobel:y,size=7",
    "scharr:x",
    "scharr:y",
    "prewitt:x",
    "prewitt:y",
    "laplacian",
    "sharpen",
    "emboss",
    "identity",
    "motion:length=9,angle=30",
    "motion:length=9,angle=0",
    "motion:length=8.5,angle=-135",
    "disk:radius=4",
    "disk:radius=2.5",
    "log:sigma=1.5",
    "log:sigma=1,radius=6",
    "bokeh:radius=8",
    "bokeh:radius=6.5,blades=5,rotation=18",
    "bokeh:radius=3,blades=0",
    "unsharp:sigma=2",
    "unsharp:sigma=1.5,amount=0.5",
    "dog:sigma=1",
    "dog:sigma=1,sigma2=2",
    "matrix:3x3:1,2,1,2,4,2,1,2,1",
    "matrix:3x3:1,2,1,2,4,2,1,2,1,normalize",
    "matrix:2x1:0.1,-0",
    "matrix:4x2:1e-300,2.5,-3,0.30000000000000004,7,8,9,1e+16",
]


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("spec", ROUND_TRIP_SPECS)
def test_canonical_specs_round_trip_bit_exact(spec: str) -> None:
    k = Kernel.parse(spec)
    assert k.spec == spec  # these are already canonical
    again = Kernel.parse(k.spec)
    assert again.spec == k.spec
    assert again.weights.shape == k.weights.shape
    assert bits(again.weights) == bits(k.weights)
    assert again == k
    assert k.name == spec.split(":")[0]


def test_every_family_is_covered_by_the_round_trip_list() -> None:
    covered = {s.split(":")[0] for s in ROUND_TRIP_SPECS}
    assert covered == set(KNOWN_FAMILIES)


@pytest.mark.parametrize(
    ("messy", "canonical"),
    [
        ("  Gaussian : SIGMA = 2 ", "gaussian:sigma=2"),
        ("gaussian:2", "gaussian:sigma=2"),
        ("gaussian:sigma=2.0", "gaussian:sigma=2"),
        ("gaussian:sigma=2,truncate=4", "gaussian:sigma=2"),
        ("gaussian:sigma=2,radius=8", "gaussian:sigma=2"),
        ("gaussian:sigma=2,truncate=2", "gaussian:sigma=2,radius=4"),
        ("gaussian:sigma=2X2", "gaussian:sigma=2"),
        ("gaussian:sigma=2x1,truncate=3", "gaussian:sigma=2x1,radius=6x3"),
        ("BOX: 7 x 3", "box:7x3"),
        ("box:5x5", "box:5"),
        ("box:size=6", "box:6"),
        ("Sobel: X , Size = 5", "sobel:x,size=5"),
        ("sobel:y,size=3", "sobel:y"),
        ("sobel:direction=y", "sobel:y"),
        ("SCHARR:Y", "scharr:y"),
        (" Laplacian ", "laplacian"),
        ("identity:", "identity"),
        ("motion:length=9", "motion:length=9,angle=0"),
        ("motion: 9 , angle = 30.0", "motion:length=9,angle=30"),
        ("disk:4", "disk:radius=4"),
        ("log:sigma=1.5,radius=6", "log:sigma=1.5"),
        ("matrix: 2x1 : 1.0 , 3.50 , Normalize", "matrix:2x1:1,3.5,normalize"),
        ("matrix:2:1,2,3,4", "matrix:2x2:1,2,3,4"),
        ("matrix:3x1:1e0,0.1,-2.", "matrix:3x1:1,0.1,-2"),
    ],
)
def test_spellings_are_canonicalised(messy: str, canonical: str) -> None:
    k = Kernel.parse(messy)
    assert k.spec == canonical
    assert bits(Kernel.parse(canonical).weights) == bits(k.weights)


def test_format_number_is_exact_and_short() -> None:
    for x in [2.0, -3.0, 0.1, 1 / 3, 1e-300, 5e-324, 1.7976931348623157e308, 2.0**60, -0.0, 0.0]:
        text = format_number(x)
        assert bits(np.float64(float(text))) == bits(np.float64(x))
    assert format_number(2.0) == "2"
    assert format_number(-0.0) == "-0"
    assert format_number(0.1) == "0.1"


# --------------------------------------------------------------------------- Gaussian vs scipy


def scipy_delta_response(shape: tuple[int, int], **kwargs: object) -> np.ndarray:
    """scipy.ndimage.gaussian_filter of a centred delta (mode='constant') = the 2-D weights."""
    delta = np.zeros(shape)
    delta[shape[0] // 2, shape[1] // 2] = 1.0
    return ndimage.gaussian_filter(delta, mode="constant", **kwargs)


@pytest.mark.parametrize("sigma", [0.5, 0.8, 1.0, 2.0, 3.3])
def test_gaussian_matches_scipy(sigma: float) -> None:
    k = Kernel.parse(f"gaussian:sigma={sigma}")
    r = int(4 * sigma + 0.5)
    assert k.shape == (2 * r + 1, 2 * r + 1)
    expected = scipy_delta_response(k.shape, sigma=sigma, truncate=4.0)
    np.testing.assert_allclose(k.weights, expected, rtol=1e-14, atol=1e-300)
    assert k.weights.sum() == pytest.approx(1.0, abs=1e-14)


def test_anisotropic_gaussian_matches_scipy_with_x_horizontal() -> None:
    k = Kernel.parse("gaussian:sigma=2x1")
    # sigma_x = 2 over 17 columns, sigma_y = 1 over 9 rows: W×H = 17×9.
    assert (k.width, k.height) == (17, 9)
    expected = scipy_delta_response(k.shape, sigma=(1.0, 2.0), truncate=4.0)
    np.testing.assert_allclose(k.weights, expected, rtol=1e-14, atol=1e-300)


def test_gaussian_radius_and_truncate_match_scipy() -> None:
    k = Kernel.parse("gaussian:sigma=1.5,radius=3")
    assert k.shape == (7, 7)
    np.testing.assert_allclose(
        k.weights, scipy_delta_response((7, 7), sigma=1.5, radius=3), rtol=1e-14, atol=1e-300
    )
    k = Kernel.parse("gaussian:sigma=2,truncate=2.5")
    assert k.shape == (11, 11)  # int(2.5 * 2 + 0.5) = 5
    np.testing.assert_allclose(
        k.weights, scipy_delta_response((11, 11), sigma=2, truncate=2.5), rtol=1e-14, atol=1e-300
    )


def test_gaussian_radius_zero_is_the_identity() -> None:
    k = Kernel.parse("gaussian:sigma=0.1")
    assert k.shape == (1, 1)
    assert k.weights[0, 0] == 1.0


# --------------------------------------------------------------------------- box and derivatives


def test_box_rectangular_is_w_wide_h_tall_mean() -> None:
    k = Kernel.parse("box:7x3")
    assert k.shape == (3, 7)
    assert (k.width, k.height) == (7, 3)
    assert np.all(k.weights == 1.0 / 21)
    assert Kernel.parse("box:4").shape == (4, 4)
    assert Kernel.parse("box:4").anchor == (2, 2)


OPENCV_SOBEL_X_5 = np.array(
    [
        [-1, -2, 0, 2, 1],
        [-4, -8, 0, 8, 4],
        [-6, -12, 0, 12, 6],
        [-4, -8, 0, 8, 4],
        [-1, -2, 0, 2, 1],
    ],
    dtype=np.float64,
)


def test_sobel_matches_opencv() -> None:
    np.testing.assert_array_equal(
        Kernel.parse("sobel:x").weights, [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]
    )
    np.testing.assert_array_equal(
        Kernel.parse("sobel:y").weights, [[-1, -2, -1], [0, 0, 0], [1, 2, 1]]
    )
    np.testing.assert_array_equal(Kernel.parse("sobel:x,size=5").weights, OPENCV_SOBEL_X_5)
    np.testing.assert_array_equal(Kernel.parse("sobel:y,size=5").weights, OPENCV_SOBEL_X_5.T)
    # OpenCV getDerivKernels(1, 0, 7): smoothing [1,6,15,20,15,6,1], derivative [-1,-4,-5,0,5,4,1].
    expected7 = np.outer([1, 6, 15, 20, 15, 6, 1], [-1, -4, -5, 0, 5, 4, 1])
    np.testing.assert_array_equal(Kernel.parse("sobel:x,size=7").weights, expected7)
    np.testing.assert_array_equal(Kernel.parse("sobel:y,size=7").weights, expected7.T)


@pytest.mark.parametrize(
    "spec",
    ["sobel:x", "sobel:x,size=5", "sobel:x,size=7", "scharr:x", "prewitt:x"],
)
def test_x_derivatives_are_positive_where_intensity_grows_right(spec: str) -> None:
    k = Kernel.parse(spec)
    ramp = np.tile(np.arange(20.0), (20, 1))  # grows with the column index
    out = ndimage.correlate(ramp, k.weights, mode="nearest")
    assert out[10, 10] > 0
    y = Kernel.parse(spec.replace(":x", ":y"))
    out = ndimage.correlate(ramp.T.copy(), y.weights, mode="nearest")  # grows with the row index
    assert out[10, 10] > 0
    assert out[10, 10] == pytest.approx(ndimage.correlate(ramp, k.weights)[10, 10])


def test_scharr_prewitt_and_fixed_kernels() -> None:
    np.testing.assert_array_equal(
        Kernel.parse("scharr:x").weights, [[-3, 0, 3], [-10, 0, 10], [-3, 0, 3]]
    )
    np.testing.assert_array_equal(
        Kernel.parse("prewitt:y").weights, [[-1, -1, -1], [0, 0, 0], [1, 1, 1]]
    )
    np.testing.assert_array_equal(
        Kernel.parse("laplacian").weights, [[0, 1, 0], [1, -4, 1], [0, 1, 0]]
    )
    np.testing.assert_array_equal(
        Kernel.parse("sharpen").weights, [[0, -1, 0], [-1, 5, -1], [0, -1, 0]]
    )
    np.testing.assert_array_equal(
        Kernel.parse("emboss").weights, [[-2, -1, 0], [-1, 1, 1], [0, 1, 2]]
    )
    np.testing.assert_array_equal(
        Kernel.parse("identity").weights, [[0, 0, 0], [0, 1, 0], [0, 0, 0]]
    )


# --------------------------------------------------------------------------- motion, disk, LoG


def test_motion_at_zero_and_ninety_degrees_is_a_box_line() -> None:
    k = Kernel.parse("motion:length=9")
    assert k.shape == (1, 9)
    np.testing.assert_allclose(k.weights, np.full((1, 9), 1 / 9), rtol=1e-15)
    k = Kernel.parse("motion:length=9,angle=90")
    assert k.shape == (9, 1)
    np.testing.assert_allclose(k.weights, np.full((9, 1), 1 / 9), rtol=1e-15)


def test_motion_even_length_has_half_weight_ends() -> None:
    k = Kernel.parse("motion:length=8")
    assert k.shape == (1, 9)
    np.testing.assert_allclose(k.weights[0], np.array([0.5, 1, 1, 1, 1, 1, 1, 1, 0.5]) / 8)


def test_motion_at_30_degrees_goes_up_to_the_right() -> None:
    k = Kernel.parse("motion:length=9,angle=30")
    w = k.weights
    assert w.sum() == pytest.approx(1.0, abs=1e-14)
    assert np.all(w >= 0)
    rows, cols = w.shape
    assert rows < cols  # 30°: wider than tall
    assert w[k.anchor] == w.max() or w[k.anchor] > 0.05
    # Counter-clockwise from +x with rows growing down: the right end sits in the top rows.
    assert w[: rows // 2, cols // 2 + 1 :].sum() > 0.3
    assert w[: rows // 2, : cols // 2].sum() == pytest.approx(0.0, abs=1e-12)
    # Symmetric about the anchor (a line through the centre).
    np.testing.assert_allclose(w, w[::-1, ::-1], atol=1e-15)
    # Its centroid direction is 30°: second moments of the line.
    y, x = np.mgrid[-(rows // 2) : rows // 2 + 1, -(cols // 2) : cols // 2 + 1]
    sxx, syy, sxy = (w * x * x).sum(), (w * y * y).sum(), (w * x * -y).sum()
    angle = 0.5 * np.degrees(np.arctan2(2 * sxy, sxx - syy))
    assert angle == pytest.approx(30.0, abs=0.5)


def test_disk_is_a_normalised_antialiased_disc() -> None:
    k = Kernel.parse("disk:radius=4")
    w = k.weights
    assert k.shape == (9, 9)
    assert w.sum() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_array_equal(w, w.T)
    np.testing.assert_array_equal(w, w[::-1])
    # Interior pixels fully covered, the corners not at all, the rim partially.
    full = w[4, 4]
    assert w[4, 2] == full
    assert w[0, 0] == 0.0
    assert 0 < w[0, 4] < full
    # Total coverage is the disc's area, to supersampling accuracy.
    assert (w / full).sum() == pytest.approx(np.pi * 16, rel=0.01)
    assert SUPERSAMPLE >= 8


def test_log_is_zero_sum_negative_centre_and_scaled_like_the_laplacian() -> None:
    k = Kernel.parse("log:sigma=1.5")
    assert k.shape == (13, 13)  # radius int(4*1.5+0.5) = 6
    w = k.weights
    assert abs(w.sum()) < 1e-14
    assert w[6, 6] < 0  # documented sign: negative at the centre, like `laplacian`
    assert w[6, 6] == w.min()
    np.testing.assert_allclose(w, w.T, atol=1e-18)
    # Applied to x² + y² (Laplacian 4) it gives about 4 at the centre.
    y, x = np.mgrid[-6:7, -6:7].astype(float)
    assert (w * (x * x + y * y)).sum() == pytest.approx(4.0, rel=0.02)


def test_matrix_is_row_major_w_wide_and_normalize_divides_by_sum() -> None:
    k = Kernel.parse("matrix:3x2:1,2,3,4,5,6")
    np.testing.assert_array_equal(k.weights, [[1, 2, 3], [4, 5, 6]])
    k = Kernel.parse("matrix:3x3:1,2,1,2,4,2,1,2,1,normalize")
    np.testing.assert_array_equal(k.weights, np.outer([1, 2, 1], [1, 2, 1]) / 16)


# --------------------------------------------------------------------------- bad specs


BAD_SPECS = [
    ("gaussian:sigma=-1", "-1"),
    ("gaussian:sigma=0", "0"),
    ("gaussian:sigma=abc", "abc"),
    ("gaussian:sigma=nan", "nan"),
    ("gaussian:sigma=inf", "inf"),
    ("gaussian", "sigma"),
    ("gaussian:sigma=2,radius=3,truncate=2", "truncate"),
    ("gaussian:sigma=2,radius=-1", "-1"),
    ("gaussian:sigma=2,truncate=0", "0"),
    ("gaussian:sigma=2,foo=3", "foo"),
    ("gaussian:sigma=2,sigma=3", "sigma"),
    ("gaussian:sigma=1x2x3", "1x2x3"),
    ("box:0", "0"),
    ("box:-3", "-3"),
    ("box:2.5", "2.5"),
    ("box:7x0", "7x0"),
    ("box", "size"),
    ("box:5,7", "7"),
    ("box:5,width=3", "width"),
    ("sobel:z", "z"),
    ("sobel", "direction"),
    ("sobel:x,size=4", "4"),
    ("sobel:x,size=9", "9"),
    ("scharr:z", "z"),
    ("scharr:x,size=5", "size"),
    ("prewitt:diagonal", "diagonal"),
    ("laplacian:3", "3"),
    ("identity:size=5", "size=5"),
    ("nonsense", "nonsense"),
    ("nonsense:1", "nonsense"),
    ("motion:length=0.5", "0.5"),
    ("motion:angle=30", "length"),
    ("motion:length=9,angle=nan", "nan"),
    ("motion:length=9,speed=2", "speed"),
    ("disk:radius=0.2", "0.2"),
    ("disk:radius=-4", "-4"),
    ("disk", "radius"),
    ("log:sigma=0", "0"),
    ("log:sigma=0.1", "0.1"),
    ("log:sigma=1,radius=3x2", "3x2"),
    ("matrix:3x3:1,2", "9 weights"),
    ("matrix:3x3:1,2,3,4,5,6,7,8,9,10", "10 given"),
    ("matrix:2x1:1,nan", "nan"),
    ("matrix:2x1:1,inf", "inf"),
    ("matrix:2x1:1,-Infinity", "-Infinity"),
    ("matrix:2x1:1,abc", "abc"),
    ("matrix:2x1:", "0 given"),
    ("matrix:0x0:", "0x0"),
    ("matrix:", "matrix:WxH"),
    ("matrix", "matrix:WxH"),
    ("matrix:3x3", "matrix:WxH"),
    ("matrix:2x1:1,-1,normalize", "sum to 0"),
    ("matrix:1x1:0,normalize", "sum to 0"),
    ("", "empty"),
    ("   ", "empty"),
    ("@", "file"),
    ("@/nonexistent/dir/blur.json", "/nonexistent/dir/blur.json"),
    ("box:1001", "1001"),
    ("box:7x600", "7x600"),
    ("gaussian:sigma=200", "200"),
    ("gaussian:sigma=1e300", "1e300"),
    ("gaussian:sigma=1,radius=257", "257"),
    ("log:sigma=100", "100"),
    ("disk:radius=300", "300"),
    ("motion:length=2000", "2000"),
    ("matrix:600x1:" + ",".join(["1"] * 600), "600x1"),
    ("gaussian:sigma=2\nbox:3", "sigma"),
]


@pytest.mark.parametrize(("spec", "named"), BAD_SPECS)
def test_bad_specs_raise_one_line_naming_the_value(spec: str, named: str) -> None:
    with pytest.raises(KernelSpecError) as info:
        Kernel.parse(spec)
    message = str(info.value)
    assert named in message
    assert "\n" not in message
    assert 0 < len(message) < 300
    assert isinstance(info.value, UsageError)
    assert info.value.exit_code == 2


def test_unknown_family_lists_the_known_ones() -> None:
    with pytest.raises(KernelSpecError) as info:
        Kernel.parse("nonsense")
    for family in KNOWN_FAMILIES:
        assert family in str(info.value)
    assert "@file.json" in str(info.value)


def test_size_limit_message_names_the_limit() -> None:
    assert MAX_KERNEL_SIDE == 513
    with pytest.raises(KernelSpecError, match="513"):
        Kernel.parse("box:1001")
    with pytest.raises(KernelSpecError, match="1601x1601"):
        Kernel.parse("gaussian:sigma=200")


def test_largest_allowed_kernels_build() -> None:
    k = Kernel.parse(f"box:{MAX_KERNEL_SIDE}x1")
    assert k.shape == (1, MAX_KERNEL_SIDE)
    k = Kernel.parse("gaussian:sigma=64")  # radius 256 -> 513 taps
    assert k.shape == (MAX_KERNEL_SIDE, MAX_KERNEL_SIDE)
    assert Kernel.parse("motion:length=400,angle=45").width <= MAX_KERNEL_SIDE


def test_non_string_spec_is_refused() -> None:
    with pytest.raises(KernelSpecError, match="int"):
        Kernel.parse(5)  # type: ignore[arg-type]
