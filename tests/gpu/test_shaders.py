"""The shader loader: package data, the {$ $} template layer, the shared border include."""

from __future__ import annotations

import jinja2
import pytest

from blurapp.gpu.shaders import load_shader, shader_names

STRATEGY_SHADERS = {
    "direct": {"wg_x": 16, "wg_y": 16},
    "halo_tiled": {"tile": 16, "halo_len": 324, "layout": "vec4"},
    "separable_rows": {"strip_w": 64, "strip_h": 4, "halo_len": 264},
    "separable_cols": {"tile_w": 16, "tile_h": 16, "halo_len": 288},
    "transpose": {"tile": 16},
}


def test_every_shader_ships() -> None:
    assert {*STRATEGY_SHADERS, "border"} <= set(shader_names())


@pytest.mark.parametrize("name", sorted(STRATEGY_SHADERS))
def test_render(name: str) -> None:
    code = load_shader(name, **STRATEGY_SHADERS[name])
    assert "{$" not in code and "{%" not in code
    assert "@compute" in code
    if name != "transpose":  # the filters address borders through the shared file
        assert "fn border_index(" in code and "override BORDER_MODE" in code


def test_scalar_layout_renders_an_f32_halo() -> None:
    code = load_shader("halo_tiled", tile=8, halo_len=5184, layout="scalar")
    assert "array<f32, 5184>" in code and "array<vec4<f32>" not in code


def test_missing_parameter_is_an_error() -> None:
    with pytest.raises(jinja2.UndefinedError):
        load_shader("halo_tiled", tile=16, layout="vec4")


def test_unknown_shader() -> None:
    with pytest.raises(jinja2.TemplateNotFound):
        load_shader("no_such_shader")


def test_loads_are_cached() -> None:
    a = load_shader("transpose", tile=16)
    assert load_shader("transpose", tile=16) is a
    assert load_shader("transpose", tile=8) is not a


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(STRATEGY_SHADERS))
def test_compiles_on_the_device(gpu, name: str) -> None:
    module = gpu.device.create_shader_module(code=load_shader(name, **STRATEGY_SHADERS[name]))
    assert module is not None
