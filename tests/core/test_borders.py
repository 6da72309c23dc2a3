"""Tests for blurapp.core.borders: the border registry, parsing and index mapping."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blurapp.core.borders import BORDER_ALIASES, BORDER_MODES, Border, BorderMode
from blurapp.core.errors import BorderError, UsageError

ALL_BORDERS = [Border.parse(name) for name in BORDER_MODES] + [Border.parse("constant=0.5")]


# --- registry and parsing -------------------------------------------------------------------


def test_shader_codes_are_stable():
    assert [(m.name, m.value) for m in BorderMode] == [
        ("CLAMP", 0),
        ("CONSTANT", 1),
        ("REFLECT", 2),
        ("MIRROR", 3),
        ("WRAP", 4),
    ]


def test_border_modes_list_parses_to_canonical_names():
    assert BORDER_MODES == ("clamp", "zero", "reflect", "mirror", "wrap")
    for name in BORDER_MODES:
        assert Border.parse(name).name == name


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("clamp", BorderMode.CLAMP),
        ("nearest", BorderMode.CLAMP),
        ("edge", BorderMode.CLAMP),
        ("replicate", BorderMode.CLAMP),
        ("zero", BorderMode.CONSTANT),
        ("constant", BorderMode.CONSTANT),
        ("reflect", BorderMode.REFLECT),
        ("symmetric", BorderMode.REFLECT),
        ("mirror", BorderMode.MIRROR),
        ("reflect101", BorderMode.MIRROR),
        ("wrap", BorderMode.WRAP),
        ("periodic", BorderMode.WRAP),
        ("tile", BorderMode.WRAP),
    ],
)
def test_every_alias_parses_case_insensitively(text, mode):
    for spelling in (text, text.upper(), text.title(), f"  {text}\t"):
        border = Border.parse(spelling)
        assert border.mode is mode
        assert border.value == 0.0
    assert BORDER_ALIASES[text] is mode


def test_alias_table_matches_the_parametrised_test():
    # A new alias must come with a row in DESIGN.md's table and in the test above.
    assert len(BORDER_ALIASES) == 13


@pytest.mark.parametrize(
    ("text", "value", "name"),
    [
        ("constant=0.5", 0.5, "constant=0.5"),
        ("CONSTANT = -0.25 ", -0.25, "constant=-0.25"),
        ("constant=1e-3", 0.001, "constant=0.001"),
        ("constant=0", 0.0, "zero"),
        ("constant=-0", 0.0, "zero"),
        ("constant", 0.0, "zero"),
        ("zero", 0.0, "zero"),
        ("constant=2", 2.0, "constant=2.0"),
    ],
)
def test_constant_values(text, value, name):
    border = Border.parse(text)
    assert border.mode is BorderMode.CONSTANT
    assert border.value == value
    assert border.name == name
    assert str(border) == name
    assert Border.parse(border.name) == border


@pytest.mark.parametrize("value", [0.1, 1 / 3, -7.25, 1e-300, 123456.789])
def test_name_round_trips_exactly(value):
    border = Border(BorderMode.CONSTANT, value)
    assert Border.parse(border.name) == border
    assert Border.parse(border.name).value == value


def test_parse_passes_borders_and_modes_through():
    border = Border(BorderMode.CONSTANT, 0.25)
    assert Border.parse(border) is border
    assert Border.parse(BorderMode.MIRROR) == Border(BorderMode.MIRROR)


@pytest.mark.parametrize(
    "text",
    ["blur", "", "   ", "clamp101", "constant=abc", "constant=", "constant=0.5=1", "wrap=1"],
)
def test_bad_names_raise_a_one_line_error_naming_the_text_and_valid_names(text):
    with pytest.raises(BorderError) as info:
        Border.parse(text)
    message = str(info.value)
    assert "\n" not in message
    assert repr(text) in message
    assert "clamp, zero, reflect, mirror, wrap" in message or "constant=" in message
    assert isinstance(info.value, UsageError)
    assert info.value.exit_code == 2


def test_unknown_name_lists_every_valid_name():
    with pytest.raises(BorderError, match="blur") as info:
        Border.parse("blur")
    for name in (*BORDER_MODES, "constant=V", "nearest", "reflect101", "periodic"):
        assert name in str(info.value)


@pytest.mark.parametrize("text", ["constant=nan", "constant=inf", "constant=-Infinity"])
def test_non_finite_values_are_rejected(text):
    with pytest.raises(BorderError, match="finite") as info:
        Border.parse(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("bad", [None, 3, 0.5, ["clamp"]])
def test_non_string_is_rejected(bad):
    with pytest.raises(BorderError, match="must be a string"):
        Border.parse(bad)


def test_constructor_validates():
    with pytest.raises(BorderError, match="only applies to constant"):
        Border(BorderMode.CLAMP, 0.5)
    with pytest.raises(BorderError, match="finite"):
        Border(BorderMode.CONSTANT, float("nan"))
    with pytest.raises(BorderError, match="BorderMode"):
        Border("clamp")  # type: ignore[arg-type]
    assert Border(BorderMode.CONSTANT, -0.0).name == "zero"
    assert Border(BorderMode.CONSTANT, 1).value == 1.0


# --- index mapping ---------------------------------------------------------------------------

# DESIGN.md's pictures for a 4-pixel row "abcd", read from index -4 to 7.
PICTURES = {
    "clamp": "aaaa|abcd|dddd",
    "zero": "0000|abcd|0000",
    "reflect": "dcba|abcd|dcba",
    "mirror": "cdcb|abcd|cbab",  # DESIGN.md: dcb|abcd|cba, plus one more sample each side
    "wrap": "abcd|abcd|abcd",
}


@pytest.mark.parametrize("name", BORDER_MODES)
def test_map_indices_matches_the_design_pictures(name):
    idx = Border.parse(name).map_indices(np.arange(-4, 8), 4)
    text = "".join("0" if i < 0 else "abcd"[i] for i in idx)
    assert f"{text[:4]}|{text[4:8]}|{text[8:]}" == PICTURES[name]


# np.pad implements the same reflections for pads of any width (it repeats them).
NP_PAD_MODE = {"clamp": "edge", "reflect": "symmetric", "mirror": "reflect", "wrap": "wrap"}


@pytest.mark.parametrize("name", sorted(NP_PAD_MODE))
@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("pad", [0, 1, 3, 10, 31])
def test_map_indices_matches_np_pad_for_pads_far_beyond_n(name, n, pad):
    idx = Border.parse(name).map_indices(np.arange(-pad, n + pad), n)
    expected = np.pad(np.arange(n), pad, mode=NP_PAD_MODE[name])
    np.testing.assert_array_equal(idx, expected)


def test_constant_marks_outside_with_minus_one():
    idx = Border.parse("constant=0.3").map_indices(np.arange(-3, 6), 3)
    np.testing.assert_array_equal(idx, [-1, -1, -1, 0, 1, 2, -1, -1, -1])


def test_mirror_of_one_pixel_maps_everything_to_it():
    idx = Border.parse("mirror").map_indices(np.arange(-50, 50), 1)
    assert idx.dtype == np.intp
    assert not idx.any()


def test_map_indices_accepts_scalars_and_any_shape_and_int_dtype():
    border = Border.parse("reflect")
    assert int(border.map_indices(-1, 5)) == 0
    grid = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    out = border.map_indices(grid, 3)
    assert out.shape == (3, 4)
    assert out.dtype == np.intp
    np.testing.assert_array_equal(out.ravel(), np.pad(np.arange(3), 6, "symmetric")[:12])
    big = np.array([np.iinfo(np.int64).min // 4, np.iinfo(np.int64).max // 4])
    assert ((border.map_indices(big, 7) >= 0) & (border.map_indices(big, 7) < 7)).all()


def test_map_indices_rejects_bad_input():
    border = Border.parse("clamp")
    with pytest.raises(TypeError, match="integers"):
        border.map_indices(np.array([0.5]), 3)
    with pytest.raises(ValueError, match="at least 1"):
        border.map_indices(np.arange(3), 0)


index_arrays = st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=40).map(np.array)


@settings(max_examples=200, deadline=None)
@given(idx=index_arrays, n=st.integers(1, 50), border=st.sampled_from(ALL_BORDERS))
def test_map_indices_is_always_in_range(idx, n, border):
    out = border.map_indices(idx, n)
    inside = (idx >= 0) & (idx < n)
    # Indices inside the image read themselves in every mode.
    np.testing.assert_array_equal(out[inside], idx[inside])
    if border.mode is BorderMode.CONSTANT:
        assert (out[~inside] == -1).all()
    else:
        assert ((out >= 0) & (out < n)).all()


@settings(max_examples=200, deadline=None)
@given(idx=index_arrays, n=st.integers(1, 50))
def test_reflections_and_wrap_are_periodic(idx, n):
    periods = {
        "reflect": 2 * n,
        "mirror": max(1, 2 * n - 2),
        "wrap": n,
    }
    for name, period in periods.items():
        border = Border.parse(name)
        np.testing.assert_array_equal(
            border.map_indices(idx + period, n), border.map_indices(idx, n)
        )
    # Reflect is symmetric about -1/2, mirror about 0.
    reflect, mirror = Border.parse("reflect"), Border.parse("mirror")
    np.testing.assert_array_equal(reflect.map_indices(-1 - idx, n), reflect.map_indices(idx, n))
    np.testing.assert_array_equal(mirror.map_indices(-idx, n), mirror.map_indices(idx, n))
