"""``blurapp conv run|plan|layout`` through the real command line (exit codes, one-line errors)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from blurapp.cli import main
from blurapp.conv.data import random_layer, relative_error, to_layout
from blurapp.conv.reference import conv2d_reference

PLAN = ["conv", "plan", "--tile", "2x2", "--cin-block", "2", "--cout-block", "2", "--kernel", "3"]


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_worked_example_json(capsys):
    d = run_json(capsys, [*PLAN, "--dtype", "int8", "--cin", "4", "--cout", "5", "--json"])
    assert d["input_tile"] == [4, 4]
    assert [d[k] for k in ("input_bytes", "weight_bytes", "partial_sum_bytes", "bias_bytes")] == [
        32, 36, 32, 8,
    ]  # fmt: skip
    assert d["total_bytes"] == 108 and d["fits"] is True
    assert (d["cin_blocks"], d["cout_blocks"], d["last_cout_block_valid"]) == (2, 3, 1)


def test_plan_double_buffer_and_tc1(capsys):
    over = run_json(
        capsys, [*PLAN, "--dtype", "int8", "--double-buffer", "--budget", "128", "--json"]
    )
    assert (over["total_bytes"], over["fits"]) == (176, False)
    argv = [*PLAN, "--dtype", "int8", "--double-buffer", "--budget", "128", "--json"]
    argv[argv.index("--cin-block") + 1] = "1"
    ok = run_json(capsys, argv)
    assert (ok["input_bytes"], ok["weight_bytes"], ok["total_bytes"], ok["fits"]) == (
        16, 18, 108, True,
    )  # fmt: skip


def test_plan_stride_2_text(capsys):
    assert main([*PLAN, "--stride", "2", "--dtype", "int8"]) == 0
    out = capsys.readouterr().out
    assert "5×5 × 2 ch = 50 B" in out and "total" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tile", "2y2"], "--tile"),
        (["--cin", "4"], "--cin and --cout"),
        (["--dtype", "int4"], "--dtype"),
        (["--kernel", "3x5"], "square"),
    ],
)
def test_plan_bad_input_exits_2_with_one_line(capsys, extra, message):
    try:
        code = main([*PLAN, *extra])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_conv_without_action_is_a_usage_error(capsys):
    assert main(["conv"]) == 2
    assert "run, plan, layout or bench" in capsys.readouterr().err


def test_layout_counts_without_gpu(capsys):
    d = run_json(
        capsys, ["conv", "layout", "--shape", "1,16,8,8", "--cout", "4", "--no-run", "--json"]
    )
    assert d["runs"]["nchw"]["runs"] == 48 and d["runs"]["nhwc"]["run_length"] == 48
    assert d["times"] == []


@pytest.fixture
def layer_files(tmp_path):
    x, wt, b = random_layer(1, 5, 11, 9, 7, 3, seed=3)
    paths = {name: tmp_path / f"{name}.npy" for name in ("x", "xh", "w", "b", "wd")}
    np.save(paths["x"], x)
    np.save(paths["xh"], to_layout(x, "nhwc"))
    np.save(paths["w"], wt)
    np.save(paths["b"], b)
    np.save(paths["wd"], random_layer(1, 5, 11, 9, 5, 3, 5)[1])
    return {k: str(v) for k, v in paths.items()}, (x, wt, b)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_run_writes_y_in_x_layout(conv_runner, layer_files, tmp_path, capsys, layout):
    paths, (x, wt, b) = layer_files
    out = tmp_path / "y.npy"
    xin = paths["x"] if layout == "nchw" else paths["xh"]
    argv = ["conv", "run", "--input", xin, "--weights", paths["w"], "--bias", paths["b"],
            "-o", str(out), "--stride", "2", "--padding", "1", "--layout", layout,
            "--strategy", "implicit-gemm", "--timing"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    for needle in ("GPU time", "GFLOP/s", "memory:", "tiles: tile", "partial sums"):
        assert needle in text
    ref = conv2d_reference(to_layout(x, layout), wt, b, stride=2, padding=1, layout=layout)
    y = np.load(out)
    assert y.shape == ref.shape and relative_error(y, ref) < 1e-4


@pytest.mark.gpu
def test_run_im2col_timing_json_shows_the_column_matrix(conv_runner, layer_files, tmp_path, capsys):
    paths, _ = layer_files
    argv = ["conv", "run", "--input", paths["x"], "--weights", paths["w"], "-o",
            str(tmp_path / "y.npy"), "--padding", "1", "--strategy", "im2col", "--json",
            "--check"]  # fmt: skip
    d = run_json(capsys, argv)
    assert d["memory"]["column_bytes"] == 5 * 9 * 11 * 9 * 4
    assert d["tiles"]["kind"] == "im2col" and d["max_relative_error"] < 1e-4


@pytest.mark.gpu
def test_run_depthwise_with_a_gemm_strategy_exits_2(conv_runner, layer_files, tmp_path, capsys):
    paths, _ = layer_files
    out = tmp_path / "y.npy"
    argv = ["conv", "run", "--input", paths["x"], "--weights", paths["wd"], "-o", str(out),
            "--groups", "5", "--strategy", "im2col"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "depthwise" in err and "--strategy direct" in err
    assert not out.exists()


def test_run_missing_input_exits_2(tmp_path, capsys):
    argv = ["conv", "run", "--input", str(tmp_path / "nope.npy"), "--weights", "w.npy",
            "-o", str(tmp_path / "y.npy")]  # fmt: skip
    assert main(argv) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.gpu
def test_layout_times_both_layouts_next_to_the_run_counts(conv_runner, capsys):
    argv = ["conv", "layout", "--shape", "1,4,9,7", "--cout", "6", "--padding", "1",
            "--strategy", "direct", "--strategy", "im2col", "--repeats", "1", "--groups", "2",
            "--json"]  # fmt: skip
    d = run_json(capsys, argv)
    assert d["runs"]["nhwc"] == {"layout": "nhwc", "runs": 9, "run_length": 2, "values": 18}
    direct = [e for e in d["times"] if e["strategy"] == "direct"]
    assert {e["layout"] for e in direct} == {"nchw", "nhwc"}
    assert all(e["max_relative_error"] < 1e-4 and e["ms"] > 0 for e in direct)
    assert all("groups=1" in e["error"] for e in d["times"] if e["strategy"] == "im2col")


def test_run_refuses_a_file_that_is_not_npy(tmp_path, capsys):
    bad = tmp_path / "x.npy"
    bad.write_text("not an array")
    argv = ["conv", "run", "--input", str(bad), "--weights", str(bad), "-o",
            str(tmp_path / "y.npy")]  # fmt: skip
    assert main(argv) == 2
    assert "is not a .npy array" in capsys.readouterr().err


def test_run_refuses_a_missing_output_folder_before_any_work(tmp_path, capsys):
    argv = ["conv", "run", "--input", "x.npy", "--weights", "w.npy", "-o",
            str(tmp_path / "nodir" / "y.npy")]  # fmt: skip
    assert main(argv) == 2
    assert "does not exist" in capsys.readouterr().err


def test_run_never_writes_over_an_input_or_an_existing_output(tmp_path, capsys):
    x, w = tmp_path / "x.npy", tmp_path / "w.npy"
    np.save(x, np.zeros((1, 1, 4, 4), np.float32))
    np.save(w, np.ones((1, 1, 3, 3), np.float32))
    before = x.read_bytes()
    for extra in ([], ["--overwrite"]):
        argv = ["conv", "run", "--input", str(x), "--weights", str(w), "-o", str(x), *extra]
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "is the input" in err and len(err.splitlines()) == 1
    y = tmp_path / "y.npy"
    y.write_bytes(b"precious")
    assert main(["conv", "run", "--input", str(x), "--weights", str(w), "-o", str(y)]) == 2
    assert "y.npy exists (use --overwrite" in capsys.readouterr().err
    assert x.read_bytes() == before and y.read_bytes() == b"precious"


@pytest.mark.gpu
def test_run_int8_prints_the_quantisation(conv_runner, layer_files, tmp_path, capsys):
    paths, (x, wt, b) = layer_files
    out = tmp_path / "y.npy"
    argv = ["conv", "run", "--input", paths["x"], "--weights", paths["w"], "--bias", paths["b"],
            "-o", str(out), "--padding", "1", "--dtype", "int8", "--timing", "--check"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "int8; input scale" in text and "weights scale" in text and "zero point 0" in text
    assert relative_error(np.load(out), conv2d_reference(x, wt, b, padding=1)) < 3e-2


@pytest.mark.gpu
def test_run_int8_with_im2col_exits_2_naming_who_can(conv_runner, layer_files, tmp_path, capsys):
    paths, _ = layer_files
    argv = ["conv", "run", "--input", paths["x"], "--weights", paths["w"], "-o",
            str(tmp_path / "y.npy"), "--dtype", "int8", "--strategy", "im2col"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "implicit-gemm or direct" in err
