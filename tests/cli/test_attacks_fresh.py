"""What the fresh attack of issue 18 found (tests/fuzz/attack_fresh.py; docs/RELIABILITY.md,
"The fresh run"), one test each: every case ends in one line on stderr and the right exit code,
with nothing overwritten and no temporary file left."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp import cli
from blurapp.cli import main
from blurapp.io import TEMP_SUFFIX, read_image


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """``blurapp ARGS`` in this process: (exit code, stderr), stderr checked to be one line."""
    capsys.readouterr()
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    if code:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith(("blurapp: error: ", "blurapp: interrupted")), err
    return code, err


@pytest.fixture
def png(tmp_path: Path) -> Path:
    path = tmp_path / "in.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (12, 16, 3), np.uint8)).save(path)
    return path


def leftovers(folder: Path, pattern: str = f"*{TEMP_SUFFIX}") -> list[str]:
    return [p.name for p in folder.rglob(pattern)]


# ------------------------------------------------------------------ SIGTERM and Ctrl-C


def test_sigterm_while_apply_writes_leaves_no_temporary(tmp_path: Path) -> None:
    """SIGTERM stopped only `batch` cleanly; `apply` (and bench, conv run) died with the
    atomic writer's temporary left behind."""
    big = tmp_path / "big.png"
    pixels = np.random.default_rng(1).integers(0, 256, (1000, 1400, 3), np.uint8)
    Image.fromarray(pixels).save(big, compress_level=1)
    out = tmp_path / "o.png"
    proc = subprocess.Popen(
        [sys.executable, "-m", "blurapp", "apply", big, "-o", out, "-k", "box:3",
         "--strategy", "cpu", "--compress-level", "9"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    writing = f".o.png.*{TEMP_SUFFIX}"  # the output's temporary, not the writable-folder probe
    while not leftovers(tmp_path, writing) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert leftovers(tmp_path, writing), "the temporary file never appeared"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() == "blurapp: interrupted"
    assert not leftovers(tmp_path) and not out.exists()


def test_sigterm_in_any_command_is_an_interrupt_and_the_handler_is_restored(
    capsys, png, tmp_path, monkeypatch
) -> None:
    import blurapp.batch.commands as commands

    def killed(*args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises first
        raise AssertionError("SIGTERM did not interrupt")

    monkeypatch.setattr(commands, "process_file", killed)
    before = signal.getsignal(signal.SIGTERM)
    code, err = run(capsys, "apply", png, "-o", tmp_path / "o.png", "-k", "box:3")
    assert code == 130 and "interrupted" in err
    assert signal.getsignal(signal.SIGTERM) == before


def test_ctrl_c_while_starting_is_one_line(capsys, monkeypatch) -> None:
    """A Ctrl-C while Python imports blurapp's modules printed a traceback."""

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    code, err = run(capsys, "kernel", "box:3")
    assert code == 130 and err.strip() == "blurapp: interrupted"


# ------------------------------------------------------------------ names that break lines


def test_a_name_with_a_newline_or_an_escape_stays_one_line(capsys, tmp_path) -> None:
    bad = tmp_path / "bad\nname\x1b[31m.png"
    bad.write_bytes(b"not an image")
    code, err = run(capsys, "apply", bad, "-o", tmp_path / "o.png", "-k", "box:3")
    assert code == 1 and "bad\\nname\\x1b[31m.png" in err and "\x1b" not in err
    folder = tmp_path / "in"
    folder.mkdir()
    bad.rename(folder / bad.name)
    (folder / "\u202egnp.exe.png").write_bytes(b"not an image either")  # a right-to-left override
    code, err = main(["batch", str(folder), "-o", str(tmp_path / "out"), "-k", "box:3",
                      "--quiet"]), capsys.readouterr().err  # fmt: skip
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("blurapp: error: ") for line in lines), err
    assert "\\u202e" in err and "\u202e" not in err


def test_an_argparse_error_with_a_newline_stays_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["batch", "x", "-o", "y", "-k", "box:3", "--format", "png\nrm -rf"])
    assert stop.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


# ------------------------------------------------------------------ names too long


def test_names_and_paths_too_long_are_usage_errors_before_any_work(capsys, png, tmp_path) -> None:
    """A 256-byte name failed after the work (exit 1); a path over PATH_MAX was a traceback
    in apply's and batch's checks."""
    code, err = run(capsys, "apply", png, "-o", tmp_path / ("n" * 252 + ".png"), "-k", "box:3")
    assert code == 2 and "too long" in err
    deep = tmp_path / "/".join(["d" * 200] * 21)
    code, err = run(capsys, "apply", png, "-o", deep / "o.png", "-k", "box:3")
    assert code == 2 and "too long" in err
    code, err = run(capsys, "batch", png, "-o", deep, "-k", "box:3")
    assert code == 2 and "too long" in err
    code, err = run(capsys, "batch", png, "-o", tmp_path / ("n" * 300), "-k", "box:3")
    assert code == 2 and "too long" in err
    code, err = run(capsys, "batch", png, "-o", tmp_path / "o", "-k", "box:3", "--report",
                    tmp_path / ("r" * 300 + ".json"))  # fmt: skip
    assert code == 2 and "too long" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.png"]


# ------------------------------------------------------------------ numbers and types


def test_a_huge_max_megapixels_means_no_limit(capsys, png, tmp_path) -> None:
    """1e308 megapixels overflowed to an infinite pixel count: OverflowError."""
    code, err = run(capsys, "apply", png, "-o", tmp_path / "o.png", "-k", "box:3",
                    "--strategy", "cpu", "--max-megapixels", "1e308")  # fmt: skip
    assert code == 0, err


@pytest.mark.parametrize(
    ("dtype", "output", "holds"),
    [
        ("float32", "o.png", "PNG holds uint8 and uint16"),
        ("float64", "o.jpg", "JPG holds uint8"),
        ("uint16", "o.webp", "WEBP holds uint8"),
        ("uint16", "o.bmp", "BMP holds uint8"),
    ],
)
def test_a_dtype_the_output_cannot_hold_is_refused(capsys, png, tmp_path, dtype, output, holds):
    """--dtype float32 -o x.png wrote 16-bit integers without a word."""
    code, err = run(capsys, "apply", png, "-o", tmp_path / output, "-k", "box:3",
                    "--dtype", dtype)  # fmt: skip
    assert code == 2 and holds in err and "write TIFF or .npy" in err
    assert not (tmp_path / output).exists()


def test_a_dtype_some_batch_outputs_cannot_hold_is_refused_before_any_work(
    capsys, png, tmp_path
) -> None:
    Image.open(png).save(tmp_path / "photo.jpg")
    out = tmp_path / "out"
    code, err = run(capsys, "batch", png, tmp_path / "photo.jpg", "-o", out, "-k", "box:3",
                    "--dtype", "uint16")  # fmt: skip
    assert code == 2 and "as JPG" in err and not out.exists()
    code, err = run(capsys, "batch", png, tmp_path / "photo.jpg", "-o", out, "-k", "box:3",
                    "--dtype", "uint16", "--format", "png", "--strategy", "cpu",
                    "--quiet")  # fmt: skip
    assert code == 0, err
    assert {p.name: read_image(p).pixels.dtype for p in out.iterdir()} == {
        "in.png": np.uint16, "photo.png": np.uint16,
    }  # fmt: skip
    code, err = run(capsys, "apply", png, "-o", tmp_path / "o.tif", "-k", "box:3",
                    "--dtype", "float32", "--strategy", "cpu")  # fmt: skip
    assert code == 0, err


# ------------------------------------------------------------------ a usage error leaves nothing


def test_a_usage_error_after_the_output_folder_was_made_removes_it(
    capsys, png, tmp_path, monkeypatch
) -> None:
    """An unreachable --scheduler (a usage error found when connecting) left the new, empty
    output folder behind."""
    import blurapp.batch.commands as commands
    from blurapp.core.errors import UsageError

    def unreachable(*args: object, **kwargs: object) -> None:
        raise UsageError("cannot reach the Dask scheduler at localhost:1")

    monkeypatch.setattr(commands, "run_pipeline", unreachable)
    out = tmp_path / "new" / "deeper"
    code, err = run(capsys, "batch", png, "-o", out, "-k", "box:3", "--strategy", "cpu")
    assert code == 2 and "localhost:1" in err
    assert not (tmp_path / "new").exists()
    (tmp_path / "kept").mkdir()  # a folder that was there stays
    code, err = run(capsys, "batch", png, "-o", tmp_path / "kept", "-k", "box:3", "--strategy",
                    "cpu")  # fmt: skip
    assert code == 2 and (tmp_path / "kept").is_dir()


# ------------------------------------------------------------------ the conv lab


@pytest.fixture
def conv_arrays(tmp_path: Path) -> tuple[Path, Path]:
    x, w = tmp_path / "x.npy", tmp_path / "w.npy"
    np.save(x, np.ones((1, 2, 6, 6), np.float32))
    np.save(w, np.ones((3, 2, 3, 3), np.float32))
    return x, w


def test_conv_npy_declaring_more_than_it_holds_is_refused(capsys, tmp_path, conv_arrays) -> None:
    """A 140-byte .npy declaring 2**40 values made numpy allocate 4 TiB (a traceback)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 1048576, 524288), }"
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    bomb = tmp_path / "bomb.npy"
    bomb.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    _x, w = conv_arrays
    code, err = run(capsys, "conv", "run", "--input", bomb, "--weights", w, "-o",
                    tmp_path / "y.npy")  # fmt: skip
    assert code == 2 and "truncated or corrupt" in err and "4,398,046,511,104 bytes" in err


def test_conv_layers_too_large_for_memory_are_refused(capsys, tmp_path, conv_arrays) -> None:
    """conv layout and conv bench allocated their random arrays first (224 GiB, 512 GiB)."""
    code, err = run(capsys, "conv", "layout", "--shape", "1,3,100000,100000", "--cout", "64")
    assert code == 2 and "over the limit of 8 GiB" in err
    code, err = run(capsys, "conv", "bench", "--layer", "1,4096,4096,4096,4096,3", "--no-peer")
    assert code == 2 and "over the limit of 8 GiB" in err
    x, w = conv_arrays
    code, err = run(capsys, "conv", "run", "--input", x, "--weights", w, "-o", tmp_path / "y.npy",
                    "--padding", "20000")  # fmt: skip
    assert code == 2 and "over the limit of 8 GiB" in err
    code, _err = run(capsys, "conv", "layout", "--shape", "1,3,100000,100000", "--cout", "64",
                     "--no-run")  # fmt: skip
    assert code == 0  # counting runs allocates nothing


def test_conv_weights_beyond_float32_are_one_line(capsys, tmp_path, conv_arrays) -> None:
    """A RuntimeWarning (three lines) came before the usage error."""
    x, _w = conv_arrays
    w = tmp_path / "w39.npy"
    np.save(w, np.full((3, 2, 3, 3), 1e39))
    code, err = run(capsys, "conv", "run", "--input", x, "--weights", w, "-o",
                    tmp_path / "y.npy")  # fmt: skip
    assert code == 2 and "too large for float32" in err and "Warning" not in err


# ------------------------------------------------------------------ decoders' own words


def test_a_broken_tiff_is_one_line_without_tifffile_log_records(tmp_path) -> None:
    """tifffile's logger printed "<tifffile.TiffPage 0 @16> missing data offset tag" on
    stderr before blurapp's line (a process of its own: the logging set-up is process-wide)."""
    body = b"II+\x00\x08\x00\x00\x00" + struct.pack("<Q", 16)
    body += struct.pack("<Q", 1) + struct.pack("<HHQQ", 256, 16, 1, 8) + struct.pack("<Q", 16)
    (tmp_path / "loop.tif").write_bytes(body)
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp", "apply", tmp_path / "loop.tif", "-o",
         tmp_path / "o.tif", "-k", "box:3"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("blurapp: error: "), proc.stderr


def test_a_long_batch_suffix_is_a_usage_error_before_any_work(capsys, png, tmp_path) -> None:
    """Outputs named past the file system's limit failed one by one after the work (exit 1)."""
    out = tmp_path / "out"
    code, err = run(capsys, "batch", png, "-o", out, "-k", "box:3", "--suffix", "x" * 260)
    assert code == 2 and "266 bytes, longer than the 255" in err
    assert not out.exists()


# ------------------------------------------------------------------ numbers float32 cannot hold


def test_float64_pixels_beyond_float32_are_refused_on_the_gpu(capsys, tmp_path) -> None:
    """They became inf on the GPU where the float64 reference is finite, after a numpy
    RuntimeWarning; the cpu strategy computes them."""
    image = np.full((6, 7), 1e300)
    image[0, 0] = 1.0
    np.save(tmp_path / "big.npy", image)
    code, err = run(capsys, "apply", tmp_path / "big.npy", "-o", tmp_path / "o.npy",
                    "-k", "box:3", "--strategy", "direct")  # fmt: skip
    assert code == 1 and "beyond float32" in err and "--strategy cpu" in err, err
    assert not (tmp_path / "o.npy").exists()
    code, err = run(capsys, "apply", tmp_path / "big.npy", "-o", tmp_path / "o.npy", "-k",
                    "box:3", "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    cpu = np.load(tmp_path / "o.npy")
    assert np.isfinite(cpu).all()
    # auto runs the float64 reference for them, and says why.
    code, err = run(capsys, "apply", tmp_path / "big.npy", "-o", tmp_path / "a.npy", "-k",
                    "box:3", "--timing")  # fmt: skip
    assert code == 0, err
    assert "strategy    cpu  (pixel values beyond float32" in err
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), cpu)


def test_a_batch_failure_line_names_its_file(capsys, png, tmp_path) -> None:
    """A filter's message (here the float32 one) said nothing of the file it was about."""
    np.save(tmp_path / "big.npy", np.full((6, 7), 1e300))
    capsys.readouterr()
    code = main(["batch", str(png), str(tmp_path / "big.npy"), "-o", str(tmp_path / "out"),
                 "-k", "box:3", "--strategy", "direct", "--quiet"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"blurapp: error: {tmp_path / 'big.npy'}: ")


def test_an_interrupt_wrapped_by_python_is_still_an_interrupt(capsys, monkeypatch) -> None:
    """SIGTERM while a module defining a dataclass was imported came out as "RuntimeError:
    Error calling __set_name__ ..." with a traceback (the fresh run's second pass)."""
    import blurapp.cli as cli

    def wrapped(_args: list[str]) -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as err:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from err

    monkeypatch.setattr(cli, "_run", wrapped)
    assert cli.main(["kernel", "box:3"]) == 130
    assert capsys.readouterr().err == "blurapp: interrupted\n"

    def failing(_args: list[str]) -> int:
        raise RuntimeError("a real bug")

    monkeypatch.setattr(cli, "_run", failing)
    with pytest.raises(RuntimeError, match="a real bug"):
        cli.main(["kernel", "box:3"])
