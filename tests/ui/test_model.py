"""The window's model: every change checked through FilterSpec.replace, refused ones reported in
one line with the state unchanged, and signals for whoever shows it."""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.ui.model import DEFAULT_SPEC, FilterModel


@pytest.fixture
def model(qtbot) -> FilterModel:
    return FilterModel()


def test_starts_on_the_default_spec(model) -> None:
    assert model.spec == FilterSpec.create(DEFAULT_SPEC)
    assert model.image is None and model.image_path is None


def test_a_change_emits_the_new_spec(qtbot, model) -> None:
    with qtbot.waitSignal(model.spec_changed) as blocker:
        assert model.set_border("mirror") is None
    assert blocker.args == [model.spec]
    assert model.spec.border.name == "mirror"
    for setter, value, field, expected in (
        (model.set_range, "offset", "range_mode", "offset"),
        (model.set_alpha, "straight", "alpha", "straight"),
        (model.set_linear, True, "linear", True),
        (model.set_convolve, True, "convolve", True),
        (model.set_dtype, "float32", "dtype", "float32"),
        (model.set_strategy, "direct", "strategy", "direct"),
    ):
        assert setter(value) is None
        assert getattr(model.spec, field) == expected


def test_no_signal_when_nothing_changes(qtbot, model) -> None:
    with qtbot.assertNotEmitted(model.spec_changed):
        assert model.set_border("clamp") is None
        assert model.set_border("edge") is None  # an alias of the same mode


@pytest.mark.parametrize(
    ("setter", "value", "words"),
    [
        ("set_border", "sideways", "sideways"),
        ("set_range", "fold", "fold"),
        ("set_alpha", "opaque", "opaque"),
        ("set_strategy", "quantum", "quantum"),
        ("set_dtype", "int7", "int7"),
        ("set_tile", 12, "12"),
    ],
)
def test_a_bad_value_is_one_line_and_changes_nothing(qtbot, model, setter, value, words) -> None:
    before = model.spec
    with qtbot.assertNotEmitted(model.spec_changed):
        problem = getattr(model, setter)(value)
    assert problem is not None and words in problem and "\n" not in problem
    assert model.spec is before


def test_a_strategy_that_cannot_run_the_kernel_is_refused(qtbot, model) -> None:
    model.set_kernel("laplacian")
    with qtbot.assertNotEmitted(model.spec_changed):
        problem = model.set_strategy("separable")
    assert problem is not None and "rank-1" in problem
    assert model.spec.strategy == "auto"


def test_a_kernel_the_strategy_cannot_run_moves_it_to_auto(qtbot, model) -> None:
    assert model.set_strategy("separable") is None
    with qtbot.waitSignal(model.notice) as blocker:
        assert model.set_kernel(Kernel.parse("laplacian")) is None
    assert model.spec.kernel.spec == "laplacian" and model.spec.strategy == "auto"
    assert "separable" in blocker.args[0] and "auto" in blocker.args[0]


def test_a_bad_kernel_spec_is_refused(model) -> None:
    before = model.spec
    problem = model.set_kernel("gaussian:sigma=-1")
    assert problem is not None and "sigma" in problem
    assert model.spec is before


def test_the_tile_choice_outlives_a_strategy_without_tiles(model) -> None:
    assert model.set_strategy("tiled") is None
    assert model.set_tile(16) is None
    assert model.spec.tile == 16
    assert model.set_strategy("direct") is None
    assert model.spec.tile is None and model.tile_choice == 16
    assert model.set_tile(32) is None  # kept for later, the spec has no tile now
    assert model.spec.tile is None
    assert model.set_strategy("tiled") is None
    assert model.spec.tile == 32
    assert model.set_tile(None) is None
    assert model.spec.tile is None and model.tile_choice is None
    assert model.set_tile(8) is None
    assert model.update(tile=None) is None  # any way to the planner's tile is the choice
    assert model.tile_choice is None


def test_set_image_gives_each_image_its_own_key(qtbot, model, tmp_path) -> None:
    image = np.zeros((4, 5, 3), np.uint8)
    with qtbot.waitSignal(model.image_changed):
        model.set_image(image, path=tmp_path / "a.png")
    first = model.image_key
    assert model.image_path == tmp_path / "a.png"
    assert model.image_data is not None and model.image_data.pixels is model.image
    model.set_image(image)
    assert model.image_key != first and model.image_path is None
