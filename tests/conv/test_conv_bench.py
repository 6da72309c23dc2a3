"""``blurapp conv bench``: every strategy × dtype beside onnxruntime's Conv, on one tiny layer."""

from __future__ import annotations

import json

import pytest

from blurapp.cli import main
from blurapp.conv.bench import RESNET_LAYERS, onnxruntime_conv
from blurapp.conv.data import random_layer, relative_error
from blurapp.conv.engine import DTYPES, GPU_STRATEGIES
from blurapp.conv.reference import conv2d_reference
from blurapp.conv.spec import ConvSpec


def test_resnet_layers_are_the_issue_s():
    shapes = {(s.cin, s.cout, s.kh, s.stride, s.groups) for s in RESNET_LAYERS.values()}
    assert shapes == {(64, 64, 3, 1, 1), (256, 64, 1, 1, 1), (128, 128, 3, 1, 128),
                      (64, 128, 3, 2, 1)}  # fmt: skip
    assert all((s.h, s.w) == (56, 56) for s in RESNET_LAYERS.values())


def test_onnxruntime_conv_matches_the_reference():
    spec = ConvSpec(1, 4, 7, 6, 6, 3, 3, stride=2, padding=1, groups=2)
    x, w, b = random_layer(1, 4, 7, 6, 6, 3, 2, seed=4)
    y, ms, version = onnxruntime_conv(x, w, b, spec, repeats=1)
    assert ms > 0 and version
    ref = conv2d_reference(x, w, b, stride=2, padding=1, groups=2)
    assert relative_error(y, ref) < 1e-5


@pytest.mark.gpu
def test_bench_one_tiny_layer_every_strategy_and_dtype(conv_runner, capsys):
    argv = ["conv", "bench", "--layer", "1,8,8,8,8,3,1,1", "--repeat", "1", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    (layer,) = report["layers"]
    assert layer["peer"]["name"].startswith("onnxruntime") and layer["peer"]["ms"] > 0
    assert layer["peer"]["max_relative_error"] < 1e-5
    rows = layer["rows"]
    assert {(r["strategy"], r["dtype"]) for r in rows} == {
        (s, d) for s in GPU_STRATEGIES for d in DTYPES
    }
    bound = {"float32": 1e-4, "fp16": 2e-3, "int8": 3e-2}
    ran = [r for r in rows if "error" not in r]
    assert {r["strategy"] for r in ran} == set(GPU_STRATEGIES)
    for r in ran:
        assert r["max_relative_error"] < bound[r["dtype"]], r["variant"]
        assert r["gflops"] > 0 and r["vs_peer"] == pytest.approx(r["ms"] / layer["peer"]["ms"])
    variants = {r["variant"] for r in rows}
    assert {"implicit-gemm (double-buffered)", "winograd F(4×4,3×3)"} <= variants
    refused = [r for r in rows if "error" in r]
    assert all(r["dtype"] != "float32" for r in refused)  # float32 runs everywhere here


def test_bench_bad_layer_is_a_one_line_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["conv", "bench", "--layer", "1,8,8"])
    assert exc.value.code == 2
    assert "N,C,H,W,COUT,K" in capsys.readouterr().err
