"""Issue 18's attacks through the command line, as a careless or hostile user would make them:
each ends in one line on stderr and the right exit code (2 usage, 1 failure), no traceback,
nothing overwritten, no leftovers (DESIGN.md "Contracts"; docs/RELIABILITY.md lists them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """``blurapp ARGS`` in this process: (exit code, stderr), stderr checked to be one line."""
    capsys.readouterr()
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    if code:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("blurapp: error: "), err
    return code, err


def subprocess_run(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 60):
    """``blurapp ARGS`` as its own process (for what only a process shows: hangs, aborts)."""
    return subprocess.run(
        [sys.executable, "-m", "blurapp", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def png(tmp_path: Path) -> Path:
    path = tmp_path / "in.png"
    pixels = np.random.default_rng(0).integers(0, 256, (12, 16, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path


# ------------------------------------------------------------------ numbers float32 cannot hold


@pytest.mark.parametrize(
    "options",
    [
        ("--kernel", "matrix:1x1:1e39"),
        ("--kernel", "matrix:3x1:0,4e38,0"),
        ("--kernel", "matrix:1x1:1e300", "--strategy", "separable"),
        ("--kernel", "box:3", "--border", "constant=1e300"),
    ],
)
def test_numbers_beyond_float32_are_usage_errors(capsys, png, tmp_path, options) -> None:
    out = tmp_path / "out.png"
    code, err = run(capsys, "apply", png, "-o", out, *options)
    assert code == 2 and "float32" in err
    assert not out.exists()


# ------------------------------------------------------------------ nothing overwritten


def test_a_report_onto_an_input_or_an_existing_file_is_refused(capsys, png, tmp_path) -> None:
    other = tmp_path / "other.txt"
    other.write_text("keep me")
    for report in (png, other):
        before = report.read_bytes()
        code, _err = run(capsys, "batch", png, "-o", tmp_path / "out", "--kernel", "box:3",
                        "--report", report)  # fmt: skip
        assert code == 2
        assert report.read_bytes() == before
    assert not (tmp_path / "out").exists()  # refused before any work


def test_bench_json_onto_an_existing_image_is_refused(capsys, png) -> None:
    before = png.read_bytes()
    code, err = run(capsys, "bench", "--size", "8x8", "--radii", "1", "--strategies", "cpu",
                    "--repeat", "1", "--warmup", "0", "--quiet", "--json", png)  # fmt: skip
    assert code == 2 and "exists" in err
    assert png.read_bytes() == before


def test_conv_run_never_writes_its_input(capsys, tmp_path) -> None:
    x, w = tmp_path / "x.npy", tmp_path / "w.npy"
    np.save(x, np.ones((1, 2, 6, 6), np.float32))
    np.save(w, np.ones((3, 2, 3, 3), np.float32))
    before = x.read_bytes(), w.read_bytes()
    for output in (x, w):
        code, err = run(capsys, "conv", "run", "--input", x, "--weights", w, "-o", output,
                        "--overwrite")  # fmt: skip
        assert code == 2 and "never modified" in err
    assert (x.read_bytes(), w.read_bytes()) == before


@pytest.mark.parametrize("overwrite", [False, True])
def test_apply_onto_a_device_or_fifo_is_refused(capsys, png, tmp_path, overwrite) -> None:
    fifo = tmp_path / "full.png"
    os.mkfifo(fifo)
    device = tmp_path / "null.png"
    device.symlink_to(os.devnull)
    for target in (fifo, device):
        code, _err = run(capsys, "apply", png, "-o", target, "--kernel", "box:3",
                        *(["--overwrite"] if overwrite else []))  # fmt: skip
        assert code == 2
    assert os.path.islink(device) and os.readlink(device) == os.devnull


# ------------------------------------------------------------------ refused before any work


def test_unwritable_destinations_are_usage_errors_before_any_work(capsys, png, tmp_path) -> None:
    out = tmp_path / "out"
    code, err = run(capsys, "batch", png, "-o", out, "--kernel", "box:3",
                    "--report", "/proc/r.json")  # fmt: skip
    assert code == 2 and "/proc/r.json" in err
    assert not out.exists()
    code, err = run(capsys, "batch", png, "-o", "/proc/blurapp/x", "--kernel", "box:3")
    assert code == 2 and "cannot create the folder" in err
    code, err = run(capsys, "apply", png, "-o", "/proc/x.png", "--kernel", "box:3")
    assert code == 2 and "cannot write /proc/x.png" in err
    code, err = run(capsys, "batch", png, "-o", out, "--kernel", "box:3", "--report", tmp_path)
    assert code == 2 and "folder" in err


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        (("--max-megapixels", "inf"), "finite"),
        (("--max-megapixels", "nan"), "finite"),
        (("--strategy", "tiled", "--tile", "7"), "tile size 7"),
        (("--strategy", "tiled", "--tile", "100000"), "tile size 100000"),
    ],
)
def test_bad_numbers_in_options(capsys, png, tmp_path, options, needle) -> None:
    capsys.readouterr()
    argv = ["apply", str(png), "-o", str(tmp_path / "o.png"), "--kernel", "box:3", *options]
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own usage errors
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.png").exists()


def test_bench_sizes_are_guarded_in_bytes(capsys) -> None:
    code, err = run(capsys, "bench", "--size", "100000x100000", "--strategies", "cpu", "--quiet")
    assert code == 2 and "GiB" in err


# ------------------------------------------------------------------ hangs


def test_kernel_files_that_never_end_are_refused(capsys, tmp_path) -> None:
    code, err = run(capsys, "kernel", "@/dev/zero")
    assert code == 2 and "not a regular file" in err
    fifo = tmp_path / "k.json"
    os.mkfifo(fifo)
    code, err = run(capsys, "kernel", f"@{fifo}", "--no-plan")
    assert code == 2


def test_fifos_as_images_do_not_hang(capsys, png, tmp_path) -> None:
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    code, err = run(capsys, "apply", fifo, "-o", tmp_path / "o.png", "--kernel", "box:3")
    assert code == 1 and "FIFO" in err
    folder = tmp_path / "in"
    folder.mkdir()
    png.rename(folder / "ok.png")
    os.mkfifo(folder / "pipe.png")
    code, err = run(capsys, "batch", folder, "-o", tmp_path / "out", "--kernel", "box:3",
                    "--quiet", "--strategy", "cpu")  # fmt: skip
    assert code == 1 and "FIFO" in err
    assert (tmp_path / "out" / "ok.png").exists()


def test_multi_frame_images_have_every_frame_filtered(capsys, tmp_path) -> None:
    """Refused before issue 25 ("it has 3 frames"); now every frame goes through, into an APNG."""
    rng = np.random.default_rng(1)
    first, *rest = (Image.fromarray(rng.integers(0, 256, (5, 6, 3), np.uint8)) for _ in range(3))
    first.save(tmp_path / "anim.webp", save_all=True, append_images=rest, lossless=True)
    code, err = run(capsys, "apply", tmp_path / "anim.webp", "-o", tmp_path / "o.png",
                    "--kernel", "box:3", "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    with Image.open(tmp_path / "o.png") as im:
        assert im.n_frames == 3


# ------------------------------------------------------------------ tracebacks


@pytest.mark.parametrize(
    "spec", ["gaussian:sigma=1e-200", "gaussian:sigma=5e-324", "gaussian:sigma=1e-160"]
)
def test_tiny_sigmas_are_one_line(capsys, spec) -> None:
    code, err = run(capsys, "kernel", spec, "--no-plan")
    assert code == 2 and "RuntimeWarning" not in err


# ------------------------------------------------------------------ the adapter asked for


def test_an_adapter_name_that_matches_nothing_is_an_error(png, tmp_path) -> None:
    env = {"BLURAPP_ADAPTER": "no-such-adapter-xyz"}
    proc = subprocess_run("apply", png, "-o", tmp_path / "o.png", "--kernel", "box:3", env=env)
    assert proc.returncode == 2, proc.stderr  # an environment error before any work (issue 25)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "matches no adapter (found: " in lines[0]
    assert not (tmp_path / "o.png").exists()
    # A batch says it once, before any work, not once per file.
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(3):
        (folder / f"p{i}.png").write_bytes(png.read_bytes())
    proc = subprocess_run(
        "batch", folder, "-o", tmp_path / "out", "--kernel", "box:3", "--strategy", "direct",
        "--quiet", env=env,
    )  # fmt: skip
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "out").exists()


def test_an_ascii_terminal_gets_question_marks_not_a_traceback() -> None:
    proc = subprocess_run("kernel", "box:3", "--no-plan", env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    assert "3?3" in proc.stdout and "Traceback" not in proc.stderr


def test_a_resumed_recursive_batch_with_its_output_inside_the_input(capsys, png, tmp_path) -> None:
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    png.rename(folder / "sub" / "p.png")
    out = folder / "out"
    argv = ["batch", folder, "-r", "-o", out, "--kernel", "box:3", "--strategy", "cpu", "--quiet"]
    assert run(capsys, *argv)[0] == 0
    code, err = run(capsys, *argv, "--skip-existing")  # its own outputs are no inputs
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["p.png"]


def test_a_legal_long_file_name_is_written(capsys, png, tmp_path) -> None:
    name = "n" * 246 + ".png"  # 250 bytes: the temporary name must still fit
    code, err = run(capsys, "apply", png, "-o", tmp_path / name, "--kernel", "box:3")
    assert code == 0, err
    assert [p.name for p in tmp_path.iterdir() if p.name != png.name] == [name]


def test_conv_run_with_a_huge_stride_is_no_traceback(capsys, tmp_path) -> None:
    x, w = tmp_path / "x.npy", tmp_path / "w.npy"
    np.save(x, np.ones((1, 2, 6, 6), np.float32))
    np.save(w, np.ones((3, 2, 3, 3), np.float32))
    code, err = run(capsys, "conv", "run", "--input", x, "--weights", w, "-o",
                    tmp_path / "y.npy", "--stride", "99999999999")  # fmt: skip
    assert code in (0, 2), err
