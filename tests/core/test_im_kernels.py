"""``im:SPEC``: ImageMagick's kernel strings give the weights ImageMagick prints, anchored where
ImageMagick puts the origin, and filter as ImageMagick's ``-morphology Correlate`` does.

The references are fixtures made by ``benchmarks/imagemagick_fixtures.py`` with ImageMagick
6.9.11-60 Q16 (the JSON names the command and version); the tests do not need ImageMagick.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from blurapp.core.errors import KernelSpecError
from blurapp.core.im_kernels import anchored_weights, im_string, parse_geometry, parse_im
from blurapp.core.kernel import MAX_KERNEL_SIDE, Kernel
from blurapp.core.reference import correlate

FIXTURES = Path(__file__).parent / "fixtures"
SHOWN = json.loads((FIXTURES / "imagemagick_kernels.json").read_text(encoding="utf-8"))
KERNELS = {k["spec"]: k for k in SHOWN["kernels"]}
SIZES = {k["spec"]: k for k in SHOWN["sizes"]}


def _printed(entry: dict) -> np.ndarray:
    return np.array([[float(v) for v in row] for row in entry["printed"]])


def _precise(entry: dict) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in entry["values"]])


def test_fixtures_say_how_they_were_made() -> None:
    assert "ImageMagick 6.9.11-60 Q16" in SHOWN["imagemagick"]
    assert "-morphology Convolve SPEC" in SHOWN["command"]
    assert SHOWN["generator"] == "benchmarks/imagemagick_fixtures.py"
    assert (Path(__file__).parents[2] / SHOWN["generator"]).is_file()


@pytest.mark.parametrize("spec", list(KERNELS))
def test_weights_are_what_imagemagick_prints(spec: str) -> None:
    entry = KERNELS[spec]
    k = parse_im(spec)
    assert k.values.shape == (entry["height"], entry["width"])
    assert (k.x, k.y) == (entry["x"], entry["y"])
    assert k.name == entry["name"]
    printed, precise = _printed(entry), _precise(entry)
    np.testing.assert_array_equal(np.isnan(k.values), np.isnan(printed))
    inside = ~np.isnan(printed)
    # 6 significant digits, as printed: within half a unit of the last digit.
    np.testing.assert_allclose(k.values[inside], printed[inside], rtol=5.0000001e-6, atol=0)
    # and much closer than that to what -precision 17 prints
    np.testing.assert_allclose(k.values[inside], precise[inside], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("spec", list(SIZES))
def test_imagemagick_radius_rule(spec: str) -> None:
    entry = SIZES[spec]
    if max(entry["width"], entry["height"]) > MAX_KERNEL_SIDE:
        with pytest.raises(KernelSpecError, match="MAX_KERNEL_SIDE"):
            parse_im(spec)
        return
    k = parse_im(spec)
    assert k.values.shape == (entry["height"], entry["width"])
    assert (k.x, k.y) == (entry["x"], entry["y"])


@pytest.mark.parametrize("spec", list(KERNELS))
def test_origin_lands_on_the_anchor_and_the_spec_round_trips(spec: str) -> None:
    im = parse_im(spec)
    kernel = Kernel.parse("im:" + spec)
    assert kernel.name == "im"
    w = kernel.weights
    ar, ac = kernel.anchor
    rows, cols = im.values.shape
    expected = np.zeros_like(w)
    expected[ar - im.y : ar - im.y + rows, ac - im.x : ac - im.x + cols] = np.nan_to_num(
        im.values, nan=0.0
    )
    np.testing.assert_array_equal(w, expected)
    # the least padding that centres the origin: at most one side grows
    assert w.shape[0] <= 2 * max(im.y, rows - 1 - im.y) + 1 or w.shape == im.values.shape
    again = Kernel.parse(kernel.spec)
    assert again == kernel
    assert again.spec == kernel.spec
    assert again.weights.tobytes() == kernel.weights.tobytes()


def test_off_centre_origin_is_padded_with_zeros() -> None:
    k = Kernel.parse("im:3x3+0+0: 1,2,3 4,nan,6 7,8,9")
    assert k.shape == (5, 5)
    np.testing.assert_array_equal(
        k.weights[2:, 2:], [[1.0, 2.0, 3.0], [4.0, 0.0, 6.0], [7.0, 8.0, 9.0]]
    )
    assert not k.weights[:2].any() and not k.weights[:, :2].any()
    # an even kernel with ImageMagick's default origin ((w-1)//2) gets one column on the left
    k = Kernel.parse("im:2x2: 1,2 3,4")
    np.testing.assert_array_equal(k.weights, [[0, 0, 0], [0, 1, 2], [0, 3, 4]])
    # Comet starts at its origin: a trail to the right of the anchor
    comet = Kernel.parse("im:Comet:0x1")
    assert comet.shape == (1, 9) and not comet.weights[0, :4].any()


CORRELATED = np.load(FIXTURES / "imagemagick_correlate.npz")


@pytest.mark.parametrize("index", range(len(CORRELATED["specs"])))
def test_filtering_matches_imagemagick_correlate(index: int) -> None:
    spec = str(CORRELATED["specs"][index])
    image = CORRELATED["image"]
    theirs = CORRELATED[f"out{index}"]
    ours = correlate(image, Kernel.parse("im:" + spec), "clamp")  # -virtual-pixel Edge
    assert ours.dtype == theirs.dtype == np.uint16
    # Q16 rounding of the same float64 sums: equal here, a tie may round either way elsewhere
    assert np.abs(ours.astype(np.int64) - theirs.astype(np.int64)).max() <= 1


def test_convolve_is_the_rotated_kernel() -> None:
    """ImageMagick's -morphology Convolve is blurapp's --convolve of the same im: kernel."""
    k = Kernel.parse("im:3x3+0+0: 1,2,3 4,5,6 7,8,9")
    x = np.zeros((7, 7))
    x[3, 3] = 1.0
    out = correlate(x, k, "zero", convolve=True)
    # Convolve puts the kernel, as printed, below and right of a dot (what ImageMagick showed).
    np.testing.assert_array_equal(out[3:6, 3:6], np.arange(1.0, 10.0).reshape(3, 3))


@pytest.mark.parametrize(
    ("text", "flags", "args"),
    [
        ("0x2", 0x4 | 0x8, [0, 2, 0, 0]),
        ("2", 0x4, [2, 0, 0, 0]),
        ("0,1,2", 0x4 | 0x8 | 0x1, [0, 1, 2, 0]),
        ("3x3+1+2", 0x4 | 0x8 | 0x1 | 0x2, [3, 3, 1, 2]),
        ("0x2+90", 0x4 | 0x8 | 0x1, [0, 2, 90, 0]),
        ("5x-3", 0x4 | 0x8 | 0x20, [5, -3, 0, 0]),
        (" 1.5 x 2e1 ", 0x4 | 0x8, [1.5, 20, 0, 0]),
        ("", 0, [0, 0, 0, 0]),
    ],
)
def test_parse_geometry_like_imagemagick(text: str, flags: int, args: list[float]) -> None:
    got_flags, got = parse_geometry(text)
    assert got_flags & 0xFF == flags
    assert got[:4] == args


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("im:", "empty"),
        ("im:Foo:1", "unknown imagemagick kernel 'foo'"),
        ("im:Edges", "hit-and-miss"),
        ("im:Sobel;Sobel:90", "list of 2 kernels"),
        ("im:Sobel@", "'@'"),
        ("im:Gaussian:0x2!", "convolve:scale"),
        ("im:Gaussian:0x2abc", "unexpected 'a'"),
        ("im:3x3: 1,2", "needs 9 values, 2 given"),
        ("im:1,2,1 2,4,2 1,2", "square"),
        ("im:3x3: 1,2,3,4,x,6,7,8,9", "'x' is not a number"),
        ("im:2x1: nan,-", "no value that is not nan"),
        ("im:3x3+3+0: 1,2,3 4,5,6 7,8,9", "outside"),
        ("im:2x1: 1,inf", "not finite"),
        ("im:600x1: 1", "MAX_KERNEL_SIDE"),
        ("im:Gaussian:300x1", "MAX_KERNEL_SIDE"),
        ("im:Blur:0x80", "MAX_KERNEL_SIDE"),
        ("im:Gaussian:0x1e200", "too small or too large"),
        ("im:FreiChen:10", "list of 9 kernels"),
        ("im:Binomial:9", "radius 8"),
        ("im:Ring:-3,-1", "negative"),
    ],
)
def test_bad_imagemagick_strings_are_one_line(spec: str, needle: str) -> None:
    with pytest.raises(KernelSpecError) as info:
        Kernel.parse(spec)
    message = str(info.value)
    assert "\n" not in message
    assert needle.lower() in message.lower()


def test_a_huge_sigma_is_refused_fast() -> None:
    with pytest.raises(KernelSpecError):
        Kernel.parse("im:Blur:0x1e6")
    assert Kernel.parse("im:Gaussian:0x500").shape == (253, 253)  # ImageMagick's own width


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        ("Gaussian:0x2", "; did you mean im:Gaussian:0x2 (ImageMagick) or gaussian:sigma=2?"),
        (
            "Gaussian:0x1.5,2",
            "did you mean im:Gaussian:0x1.5,2 (ImageMagick) or gaussian:sigma=1.5?",
        ),
        (
            "3x3: 1,2,1 2,4,2 1,2,1",
            "did you mean im:3x3: 1,2,1 2,4,2 1,2,1 (ImageMagick) or matrix:3x3:1,2,1,2,4,2,1,2,1?",
        ),
        ("'1,2,1 2,4,2 1,2,1'", "did you mean im:3x3: 1,2,1 2,4,2 1,2,1 (ImageMagick)"),
        ("Laplacian:3", "did you mean im:Laplacian:3 (ImageMagick)?"),
        ("DoG:0,1,2", "did you mean im:DoG:0,1,2 (ImageMagick) or dog:sigma=1,2?"),
        ("Sobel", "did you mean im:Sobel (ImageMagick)?"),
        ("Blur:0x2", "did you mean im:Blur:0x2 (ImageMagick)?"),
        ("Unsharp:0x1", "did you mean unsharp:sigma=1 (ImageMagick's -unsharp)?"),
    ],
)
def test_imagemagick_near_miss_gets_a_suggestion(spec: str, hint: str) -> None:
    with pytest.raises(KernelSpecError) as info:
        Kernel.parse(spec)
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith(hint) if hint.startswith(";") else hint in message


@pytest.mark.parametrize("spec", ["nonsense", "gaussian:sigma=-1", "box:0", "matrix:3x3:1,2"])
def test_no_suggestion_for_what_imagemagick_refuses_too(spec: str) -> None:
    with pytest.raises(KernelSpecError) as info:
        Kernel.parse(spec)
    assert "did you mean im:" not in str(info.value)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("sobel:x", "Sobel:180"),
        ("prewitt:x", "Prewitt:180"),
        ("gaussian:sigma=2", "Gaussian:8x2"),
        ("gaussian:sigma=1.5,radius=3", "Gaussian:3x1.5"),
        ("im:Comet:0x1", "Comet:0x1"),
        ("laplacian", "3x3: 0,1,0 1,-4,1 0,1,0"),
        ("matrix:2x1:0.1,3", "2x1+1+0: 0.1,3"),
        ("box:4x3", None),
        ("motion:length=5,angle=30", None),
        ("dog:sigma=1,2", None),
    ],
)
def test_im_string_gives_back_the_same_kernel(spec: str, expected: str | None) -> None:
    kernel = Kernel.parse(spec)
    text = im_string(kernel)
    if expected is not None:
        assert text == expected
    assert "\n" not in text
    back = Kernel.parse("im:" + text)
    assert back.shape == kernel.shape
    if text.startswith("Gaussian:"):
        # ImageMagick's 2-D sampled Gaussian: the same function, rounded differently
        np.testing.assert_allclose(back.weights, kernel.weights, rtol=0, atol=1e-15)
    else:
        assert back.weights.tobytes() == kernel.weights.tobytes()


def test_im_string_of_an_anchored_im_kernel_keeps_imagemagicks_origin() -> None:
    k = Kernel.parse("im:3x3+0+0: 1,2,3 4,nan,6 7,8,9")
    assert im_string(k) == "3x3+0+0: 1,2,3 4,nan,6 7,8,9"
    np.testing.assert_array_equal(anchored_weights(parse_im(im_string(k))), k.weights)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"kernel": "sobel:x", "border": "reflect", "range_mode": "offset"},
         ["-virtual-pixel", "Mirror", "-define", "convolve:bias=50%", "-morphology", "Correlate",
          "Sobel:180"]),
        ({"kernel": "emboss", "border": "constant=0.25", "convolve": True},
         ["-virtual-pixel", "Background", "-background", "gray(25%)", "-morphology", "Convolve",
          "3x3: -2,-1,0 -1,1,1 0,1,2"]),
        ({"kernel": "box:3", "border": "wrap", "linear": True},
         ["-virtual-pixel", "Tile", "-colorspace", "RGB", "-morphology", "Correlate", None,
          "-colorspace", "sRGB"]),
    ],
)  # fmt: skip
def test_magick_options_for_a_spec(kwargs, expected) -> None:
    """The ImageMagick line beside Export CLI's (checked against ImageMagick 6.9.11 by hand:
    within a level of blurapp's pixels; the tests do not need ImageMagick)."""
    from blurapp.core.filterspec import FilterSpec
    from blurapp.core.im_kernels import magick_argv

    argv, note = magick_argv(FilterSpec.create(**kwargs))
    assert argv is not None and "within a level" in note
    assert len(argv) == len(expected)
    for got, want in zip(argv, expected, strict=True):
        if want is not None:
            assert got == want


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"border": "mirror"}, "REFLECT_101"),
        ({"range_mode": "abs"}, "--range abs"),
        ({"dtype": "uint16"}, "-depth"),
        ({"border": "constant=2"}, "outside 0..1"),
    ],
)
def test_no_magick_options_where_imagemagick_cannot(kwargs, why) -> None:
    from blurapp.core.filterspec import FilterSpec
    from blurapp.core.im_kernels import magick_argv

    argv, note = magick_argv(FilterSpec.create("box:3", **kwargs))
    assert argv is None and why in note
