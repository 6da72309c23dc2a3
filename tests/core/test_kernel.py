"""The Kernel type: immutability, geometry, from_weights, flipping, equality and JSON files."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

from blurapp.core.errors import KernelSpecError
from blurapp.core.kernel import FORMAT, MAX_KERNEL_SIDE, Kernel
from blurapp.core.separability import Separability

FAMILY_SPECS = [
    "gaussian:sigma=2",
    "gaussian:sigma=2x1,radius=5x3",
    "box:7x3",
    "box:4",
    "sobel:y,size=5",
    "scharr:x",
    "prewitt:y",
    "laplacian",
    "sharpen",
    "emboss",
    "identity",
    "motion:length=9,angle=30",
    "disk:radius=4",
    "log:sigma=1.5",
    "matrix:3x3:1,2,1,2,4,2,1,2,1,normalize",
]


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


# --------------------------------------------------------------------------- the type


def test_weights_are_float64_c_contiguous_and_read_only() -> None:
    k = Kernel.parse("box:7x3")
    assert k.weights.dtype == np.float64
    assert k.weights.flags.c_contiguous
    assert not k.weights.flags.writeable
    with pytest.raises(ValueError):
        k.weights[0, 0] = 5.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        k.spec = "box:3"  # type: ignore[misc]


def test_from_weights_copies_its_input() -> None:
    source = np.ones((3, 3))
    k = Kernel.from_weights(source)
    source[0, 0] = 99.0
    assert k.weights[0, 0] == 1.0
    assert source.flags.writeable


@pytest.mark.parametrize(
    ("spec", "shape", "anchor"),
    [
        ("identity", (3, 3), (1, 1)),
        ("box:7x3", (3, 7), (1, 3)),
        ("box:4", (4, 4), (2, 2)),
        ("box:1", (1, 1), (0, 0)),
        ("matrix:2x1:1,2", (1, 2), (0, 1)),
        ("gaussian:sigma=2x1", (9, 17), (4, 8)),
    ],
)
def test_geometry(spec: str, shape: tuple[int, int], anchor: tuple[int, int]) -> None:
    k = Kernel.parse(spec)
    assert k.shape == shape
    assert (k.height, k.width) == shape
    assert k.anchor == anchor
    assert k.radius == anchor


def test_anchor_follows_correlation_semantics_of_scipy() -> None:
    # scipy's origin=0 puts the anchor at (rows//2, cols//2): correlating a delta with the
    # kernel gives the kernel rotated 180° around the anchor, also for even sizes.
    for spec in ["matrix:3x2:1,2,3,4,5,6", "matrix:4x4:" + ",".join(str(i) for i in range(16))]:
        k = Kernel.parse(spec)
        image = np.zeros((9, 9))
        image[4, 4] = 1.0
        out = ndimage.correlate(image, k.weights, mode="constant")
        ar, ac = k.anchor
        rows, cols = k.shape
        # out[4 - (i - ar), 4 - (j - ac)] = w[i, j]
        for i in range(rows):
            for j in range(cols):
                assert out[4 - (i - ar), 4 - (j - ac)] == k.weights[i, j]


@pytest.mark.parametrize(
    "weights",
    [
        [[1.0]],
        [[0.1, 0.2, 0.30000000000000004]],
        [[-0.0, 0.0], [5e-324, -3.4028234663852886e38]],  # float32's max: the largest allowed
        np.random.default_rng(1).standard_normal((5, 4)),
        np.random.default_rng(2).standard_normal((1, 7)) * 1e-200,
    ],
)
def test_from_weights_spec_rebuilds_bit_exactly(weights: object) -> None:
    k = Kernel.from_weights(weights)
    assert k.name == "matrix"
    rows, cols = k.shape
    assert k.spec.startswith(f"matrix:{cols}x{rows}:")
    again = Kernel.parse(k.spec)
    assert bits(again.weights) == bits(k.weights)
    assert again.spec == k.spec
    assert again == k


def test_from_weights_accepts_float32_and_keeps_their_exact_value() -> None:
    w32 = Kernel.parse("gaussian:sigma=1.3").weights.astype(np.float32)
    k = Kernel.from_weights(w32, name="gaussian-f32")
    assert k.name == "gaussian-f32"
    assert np.array_equal(k.weights, w32.astype(np.float64))
    assert bits(Kernel.parse(k.spec).weights) == bits(k.weights)


@pytest.mark.parametrize(
    ("weights", "named"),
    [
        ([[1.0, np.nan]], "nan"),
        ([[np.inf]], "inf"),
        ([[1.0, -np.inf]], "-inf"),
        (np.zeros((0, 3)), "empty"),
        ([], "2-D"),
        ([1.0, 2.0], "2-D"),
        (np.ones((2, 2, 2)), "2-D"),
        (np.ones((1, MAX_KERNEL_SIDE + 1)), str(MAX_KERNEL_SIDE)),
        ([[1j]], "complex"),
        ([["a"]], "numeric"),
        ([[1.0, 2.0], [3.0]], "numeric"),
    ],
)
def test_from_weights_rejects_bad_weights(weights: object, named: str) -> None:
    with pytest.raises(KernelSpecError) as info:
        Kernel.from_weights(weights)
    assert named in str(info.value)
    assert "\n" not in str(info.value)


def test_separability_is_cached_and_typed() -> None:
    k = Kernel.parse("gaussian:sigma=1")
    assert isinstance(k.separability, Separability)
    assert k.separability is k.separability
    assert k.separability.rank == 1


def test_equality_and_hash() -> None:
    a = Kernel.parse("box:3")
    b = Kernel.parse(" BOX : 3x3 ")
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    # Same weights, different spec: not equal (the spec is part of the kernel's identity).
    c = Kernel.from_weights(a.weights)
    assert np.array_equal(a.weights, c.weights)
    assert a != c
    assert a != Kernel.parse("box:5")
    assert a != "box:3"
    assert "box:3" in repr(a)


def test_parse_passes_a_kernel_through() -> None:
    k = Kernel.parse("sobel:x")
    assert Kernel.parse(k) is k


# --------------------------------------------------------------------------- flipping


def test_flipped_symmetric_kernel_is_itself() -> None:
    for spec in ["gaussian:sigma=2", "box:7x3", "disk:radius=3", "motion:length=9,angle=30"]:
        k = Kernel.parse(spec)
        assert k.flipped() is k


def test_flipped_asymmetric_kernel_rotates_180_and_round_trips() -> None:
    k = Kernel.parse("matrix:3x2:1,2,3,4,5,6")
    f = k.flipped()
    np.testing.assert_array_equal(f.weights, [[6, 5, 4], [3, 2, 1]])
    assert f.flipped() == k or np.array_equal(f.flipped().weights, k.weights)
    assert bits(Kernel.parse(f.spec).weights) == bits(f.weights)
    sobel = Kernel.parse("sobel:x")
    assert sobel.flipped().name == "sobel"
    np.testing.assert_array_equal(sobel.flipped().weights, -sobel.weights)


def test_flipped_kernel_correlation_is_convolution() -> None:
    rng = np.random.default_rng(3)
    image = rng.random((12, 10))
    k = Kernel.parse("emboss")
    np.testing.assert_allclose(
        ndimage.correlate(image, k.flipped().weights, mode="nearest"),
        ndimage.convolve(image, k.weights, mode="nearest"),
        rtol=1e-13,
    )


# --------------------------------------------------------------------------- JSON


def _write(k: Kernel, path: Path) -> None:
    """A kernel file as core defines it (blurapp.io.save_kernel writes the same, atomically:
    tests/io/test_kernels.py)."""
    path.write_text(json.dumps(k.to_json()))


@pytest.mark.parametrize("spec", FAMILY_SPECS)
def test_json_round_trip_is_bit_exact_and_keeps_family_spec(spec: str, tmp_path: Path) -> None:
    k = Kernel.parse(spec)
    path = tmp_path / "k.json"
    _write(k, path)
    loaded = Kernel.load(path)
    assert loaded.spec == k.spec
    assert loaded.name == k.name
    assert bits(loaded.weights) == bits(k.weights)
    assert loaded == k
    via_at = Kernel.parse(f"@{path}")
    assert via_at == k
    assert bits(via_at.weights) == bits(k.weights)


def test_json_format_fields(tmp_path: Path) -> None:
    k = Kernel.parse("box:7x3")
    path = tmp_path / "box.json"
    _write(k, path)
    data = json.loads(path.read_text())
    assert data == k.to_json()
    assert data["format"] == FORMAT == "blurapp-kernel"
    assert data["version"] == 1
    assert (data["name"], data["spec"]) == ("box", "box:7x3")
    assert (data["width"], data["height"]) == (7, 3)
    assert len(data["weights"]) == 3 and len(data["weights"][0]) == 7


def test_json_round_trip_of_raw_weights(tmp_path: Path) -> None:
    w = np.random.default_rng(4).standard_normal((4, 6)) / 3
    w[0, 0] = -0.0
    k = Kernel.from_weights(w, name="learned")
    path = tmp_path / "raw.json"
    _write(k, path)
    loaded = Kernel.load(path)
    assert loaded.name == "learned"
    assert loaded.spec == k.spec
    assert bits(loaded.weights) == bits(k.weights)


def test_json_with_edited_weights_keeps_the_weights(tmp_path: Path) -> None:
    data = Kernel.parse("box:3").to_json()
    data["weights"][1][1] = 0.5
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    k = Kernel.load(path)
    assert k.weights[1, 1] == 0.5
    assert k.spec.startswith("matrix:3x3:")
    assert bits(Kernel.parse(k.spec).weights) == bits(k.weights)


def test_json_with_integer_weights(tmp_path: Path) -> None:
    path = tmp_path / "ints.json"
    path.write_text(
        json.dumps(
            {
                "format": "blurapp-kernel",
                "version": 1,
                "name": "sobel",
                "spec": "sobel:x",
                "width": 3,
                "height": 3,
                "weights": [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]],
            }
        )
    )
    k = Kernel.load(path)
    assert k.spec == "sobel:x"
    assert k == Kernel.parse("sobel:x")


BAD_FILES = [
    ("[1, 2]", "JSON object"),
    ('{"format": "png"}', "png"),
    ('{"format": "blurapp-kernel", "version": 2, "weights": [[1]]}', "version 2"),
    ('{"format": "blurapp-kernel", "version": 1}', "weights"),
    ('{"format": "blurapp-kernel", "version": 1, "weights": []}', "weights"),
    ('{"format": "blurapp-kernel", "version": 1, "weights": [[1, 2], [3]]}', "different lengths"),
    ('{"format": "blurapp-kernel", "version": 1, "weights": [[1, "2"]]}', "'2'"),
    ('{"format": "blurapp-kernel", "version": 1, "weights": [[1, true]]}', "True"),
    ('{"format": "blurapp-kernel", "version": 1, "weights": [[1, NaN]]}', "nan"),
    ('{"format": "blurapp-kernel", "version": 1, "weights": [[Infinity]]}', "inf"),
    ('{"format": "blurapp-kernel", "version": 1, "width": 3, "weights": [[1, 2]]}', "width"),
    ('{"format": "blurapp-kernel", "version": 1, "height": 2, "weights": [[1, 2]]}', "height"),
    ('{"format": "blurapp-kernel", "version": 1, "weights": [[1, 2]', "not valid JSON"),
]


@pytest.mark.parametrize(("text", "named"), BAD_FILES)
def test_bad_kernel_files_raise_one_line(text: str, named: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    for load in (lambda: Kernel.load(path), lambda: Kernel.parse(f"@{path}")):
        with pytest.raises(KernelSpecError) as info:
            load()
        message = str(info.value)
        assert named in message
        assert "bad.json" in message
        assert "\n" not in message


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(KernelSpecError, match=r"missing\.json"):
        Kernel.parse(f"@{missing}")
    with pytest.raises(KernelSpecError, match="not found"):
        Kernel.load(missing)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(KernelSpecError, match=r"binary\.json"):
        Kernel.load(binary)
    with pytest.raises(KernelSpecError, match=re.escape(tmp_path.name)):
        Kernel.load(tmp_path)  # a directory


def test_at_spec_with_whitespace_and_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(Kernel.parse("sobel:y,size=7"), tmp_path / "s.json")
    monkeypatch.chdir(tmp_path)
    assert Kernel.parse("  @ s.json ") == Kernel.parse("sobel:y,size=7")
