"""The tile storage-budget planner, with the worked example of the conv-layer issue."""

from __future__ import annotations

import pytest

from blurapp.conv.tile_budget import plan_tile, tile_input_extent
from blurapp.core.errors import UsageError


def test_worked_example_int8_3x3():
    b = plan_tile((2, 2), 2, 2, 3, dtype="int8")
    assert b.input_tile == (4, 4)
    assert (b.input_bytes, b.weight_bytes, b.partial_sum_bytes, b.bias_bytes) == (32, 36, 32, 8)
    assert b.total_bytes == 108


def test_double_buffer_goes_over_a_128_byte_budget():
    b = plan_tile((2, 2), 2, 2, 3, dtype="int8", double_buffer=True, budget=128)
    assert b.total_bytes == 176 and not b.fits
    # input_bytes and weight_bytes stay per buffer
    assert (b.input_bytes, b.weight_bytes) == (32, 36)


def test_one_input_channel_per_block_fits_double_buffered():
    b = plan_tile((2, 2), 1, 2, 3, dtype="int8", double_buffer=True, budget=128)
    assert (b.input_bytes, b.weight_bytes) == (16, 18)
    assert b.total_bytes == 108 and b.fits


def test_stride_2_needs_a_5x5_input_tile():
    assert plan_tile((2, 2), 2, 2, 3, stride=2, dtype="int8").input_tile == (5, 5)


def test_dilation_and_rectangular_tiles():
    assert plan_tile((4, 8), 1, 1, 3, dilation=2).input_tile == (8, 12)
    assert tile_input_extent(8, 5, 2, 2) == 7 * 2 + 4 * 2 + 1


def test_output_blocks_mask_the_last_one():
    b = plan_tile((2, 2), 2, 2, 3, dtype="int8", cin=3, cout=5)
    assert (b.cout_blocks, b.last_cout_block_valid) == (3, 1)
    assert (b.cin_blocks, b.last_cin_block_valid) == (2, 1)


def test_json_has_the_issue_keys():
    d = plan_tile((2, 2), 2, 2, 3, dtype="int8", cin=4, cout=5).to_dict()
    for key in (
        "input_tile", "input_bytes", "weight_bytes", "partial_sum_bytes", "bias_bytes",
        "total_bytes", "fits", "cin_blocks", "cout_blocks", "last_cout_block_valid",
    ):  # fmt: skip
        assert key in d
    assert d["input_tile"] == [4, 4] and d["fits"] is True


def test_dtype_sizes_and_32_bit_accumulators():
    fp16 = plan_tile((2, 2), 2, 2, 3, dtype="fp16")
    fp32 = plan_tile((2, 2), 2, 2, 3, dtype="fp32")
    assert (fp16.input_bytes, fp32.input_bytes) == (64, 128)
    assert fp16.partial_sum_bytes == fp32.partial_sum_bytes == 32


def test_traffic_unique_versus_loaded():
    # 8×8 input, pad 1, 3×3: 4×4 tiles of 2×2 outputs; edge tiles clip the halo to the image
    b = plan_tile((2, 2), 2, 2, 3, dtype="int8", cin=4, cout=5, size=(8, 8), padding=1)
    assert b.output_size == (8, 8) and b.spatial_tiles == 16
    assert b.unique_input_bytes == 4 * 64
    # per axis the tiles load 3 + 4 + 4 + 3 = 14 rows; 3 output blocks reload everything
    assert b.loaded_input_bytes == 14 * 14 * 4 * 3
    assert b.reload_factor == pytest.approx(2352 / 256)
    # a 1×1 kernel with one output block loads each input byte exactly once
    one = plan_tile((4, 4), 4, 8, 1, cin=4, cout=8, size=(8, 8))
    assert one.loaded_input_bytes == one.unique_input_bytes


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dtype": "int4"}, "dtype"),
        ({"cin": 4}, "both"),
        ({"size": (8, 8)}, "channel counts"),
        ({"budget": -1}, "budget"),
        ({"stride": 0}, "stride"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(UsageError, match=message):
        plan_tile((2, 2), 2, 2, 3, **kwargs)


def test_bad_tile():
    with pytest.raises(UsageError, match="tile rows"):
        plan_tile((0, 2), 2, 2, 3)


def _workgroup_arrays(wgsl: str) -> dict[str, int]:
    """Bytes of each ``var<workgroup> NAME: array<T, N>`` in rendered WGSL."""
    import re

    sizes = {"f32": 4, "f16": 2, "u32": 4, "i32": 4, "vec4<f32>": 16, "vec4<f16>": 8}
    return {
        name: sizes[elem] * int(count)
        for name, elem, count in re.findall(
            r"var<workgroup>\s+(\w+)\s*:\s*array<(vec4<\w+>|\w+),\s*(\d+)>", wgsl
        )
    }


@pytest.mark.parametrize(
    ("dtype", "double_buffer", "tiles"),
    [
        ("float32", False, None),
        ("float32", True, None),
        ("fp16", False, None),
        ("fp16", True, (4, 8, 8, 4)),
        ("int8", False, None),
        ("int8", False, (2, 4, 2, 4)),
    ],
)
def test_planner_numbers_are_what_the_shader_allocates(dtype, double_buffer, tiles):
    """The modelled budget is what runs: the tile the engine picks, rendered into the shader
    it runs, declares exactly the planner's input and weight bytes as workgroup memory."""
    from blurapp.conv.engine import CONV_STRATEGIES, ConvOptions
    from blurapp.conv.spec import ConvSpec
    from blurapp.core.planner import DeviceLimits
    from blurapp.gpu.shaders import load_shader

    strategy = CONV_STRATEGIES["implicit-gemm"]
    spec = ConvSpec(1, 24, 20, 20, 40, 3, 3, padding=1)
    opts = ConvOptions(dtype=dtype, double_buffer=double_buffer, tiles=tiles)
    chosen = strategy.tiles(spec, DeviceLimits(workgroup_storage=32768), opts)
    name, template = strategy.shader_template(spec, chosen, opts)
    arrays = _workgroup_arrays(load_shader(name, **template))
    b = chosen.budget
    copies = 2 if double_buffer else 1
    assert arrays == {"in_tile": copies * b.input_bytes, "w_tile": copies * b.weight_bytes}
    assert sum(arrays.values()) == b.workgroup_bytes <= b.budget
    assert b.dtype == {"float32": "fp32", "fp16": "fp16", "int8": "int8"}[dtype]
    assert b.double_buffer == double_buffer
    # the template's tile is the planner's tile
    th, tw = b.tile
    assert (template["th"], template["tw"], template["tm"]) == (th, tw, b.cout_block)
    tc = template["tc4"] * 4 if dtype == "int8" else template["tc"]
    assert tc == b.cin_block and (template["ih"], template["iw"]) == b.input_tile
    if tiles:
        assert (th, tw, b.cout_block, b.cin_block) == tiles
    assert b.register_bytes == th * tw * b.cout_block * 4 + b.cout_block * 4
