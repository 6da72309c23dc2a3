"""Specs that used to raise ZeroDivisionError (issue 18): in the spec box they are a message,
from a saved setting they lose only themselves, and the window still starts."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from blurapp.ui.model import FilterModel
from blurapp.ui.window_settings import DEFAULT_SPEC, load_spec

BAD = ("gaussian:sigma=1e-200", "gaussian:sigma=5e-324", "matrix:1x1:1e39")


@pytest.mark.parametrize("spec", BAD)
def test_the_spec_box_shows_a_message(qtbot, spec: str) -> None:
    model = FilterModel()
    before = model.spec
    error = model.set_kernel(spec)
    assert error and "\n" not in error
    assert model.spec == before


@pytest.mark.parametrize("spec", BAD)
def test_a_saved_bad_spec_falls_back_to_the_default(tmp_path, spec: str) -> None:
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    settings.setValue("kernel/last", spec)
    assert load_spec(settings).kernel.spec == DEFAULT_SPEC
