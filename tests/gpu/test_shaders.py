"""The shader loader: package data, the {$ $} template layer, the shared border include."""

from __future__ import annotations

import jinja2
import pytest

from blurapp.gpu.shaders import load_shader, shader_names

STRATEGY_SHADERS = {
    "direct": {"wg_x": 8, "wg_y": 8, "kw": 5},
    "halo_tiled": {"tile": 16, "kw": 5, "kh": 3, "block_w": 8, "block_h": 2, "layout": "vec4"},
    "separable_rows": {
        "wg_x": 8,
        "wg_y": 8,
        "taps": 3,
        "block": 8,
        "baked": ("0.25", "0.5", "0.25"),
    },
    "separable_cols": {"wg_x": 8, "wg_y": 8, "taps": 3, "block": 1, "baked": None},
    "transpose": {"tile": 32, "rows": 8},
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
    code = load_shader("halo_tiled", tile=8, kw=65, kh=65, block_w=4, block_h=2, layout="scalar")
    assert "array<f32, 5184>" in code and "array<vec4<f32>, 5184>" not in code
    assert "@workgroup_size(2, 4)" in code


def test_baked_weights_are_unrolled_literals() -> None:
    code = load_shader(**{"name": "separable_rows", **STRATEGY_SHADERS["separable_rows"]})
    # 8 outputs per invocation, each a chain of fma()s over the 3 literal taps of its own
    # window (as the buffer variant chains them: the same bits on an adapter that contracts),
    # stored once.
    vec = "vec4<f32>"
    lines = "\n".join(line for line in code.splitlines() if line.strip()) + "\n"
    for o in (0, 7):
        chain = "\n".join(f"        s{o} = fma({vec}({w}), t{o + k}, s{o});"
                           for k, w in enumerate(("0.25", "0.5", "0.25")))  # fmt: skip
        assert lines.count(f"        var s{o} = {vec}(0.0);\n{chain}\n") == 1
    assert code.count("= fma(") == 24 and " * t" not in code
    # One path for every invocation, the border mode applied on every load (no interior copy).
    assert code.count("textureLoad(") == 1
    assert code.count("load_mapped(border_index(start + ") == 10
    assert "weights[k]" not in code
    looped = load_shader(**{"name": "separable_cols", **STRATEGY_SHADERS["separable_cols"]})
    assert "weights[k]" in looped


def test_missing_parameter_is_an_error() -> None:
    with pytest.raises(jinja2.UndefinedError):
        load_shader("halo_tiled", tile=16, layout="vec4")


def test_unknown_shader() -> None:
    with pytest.raises(jinja2.TemplateNotFound):
        load_shader("no_such_shader")


def test_loads_are_cached() -> None:
    a = load_shader("transpose", tile=16, rows=4)
    assert load_shader("transpose", tile=16, rows=4) is a
    assert load_shader("transpose", tile=8, rows=4) is not a


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(STRATEGY_SHADERS))
def test_compiles_on_the_device(gpu, name: str) -> None:
    module = gpu.device.create_shader_module(code=load_shader(name, **STRATEGY_SHADERS[name]))
    assert module is not None
