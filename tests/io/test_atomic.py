"""The one atomic writer (blurapp.io.atomic): nothing half-written, the process umask honoured
from many threads without being touched, long names, and the never-overwrite rule."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from blurapp.core.errors import OutputError, UsageError
from blurapp.core.kernel import Kernel
from blurapp.io import (
    TEMP_SUFFIX,
    atomic_output,
    check_output,
    read_image,
    same_file,
    save_kernel,
    write_image,
    write_text,
)
from blurapp.io.atomic import temp_name


def _temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(TEMP_SUFFIX)]


# ------------------------------------------------------------------ all or nothing


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_nothing_is_left_on_failure(tmp_path: Path, error: type[BaseException]) -> None:
    target = tmp_path / "x.bin"
    with pytest.raises(error), atomic_output(target) as fh:
        fh.write(b"half")
        raise error("encoder died")
    assert list(tmp_path.iterdir()) == []


def test_never_clobbers_without_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "x.bin"
    with atomic_output(target) as fh:
        fh.write(b"first")
    with (
        pytest.raises(OutputError, match=r"x\.bin exists \(use --overwrite"),
        atomic_output(target) as fh,
    ):
        fh.write(b"second")
    assert target.read_bytes() == b"first"
    with atomic_output(target, overwrite=True) as fh:
        fh.write(b"third")
    assert target.read_bytes() == b"third"
    assert _temporaries(tmp_path) == []


def test_an_output_appearing_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "x.bin"
    with pytest.raises(OutputError, match="exists"), atomic_output(target) as fh:
        fh.write(b"mine")
        target.write_bytes(b"someone else's")  # after any check, before publishing
    assert target.read_bytes() == b"someone else's"
    assert _temporaries(tmp_path) == []


def _special_files(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "folder.png"
    folder.mkdir()
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    device = tmp_path / "null.png"
    device.symlink_to(os.devnull)  # a link to a character device
    return {"a folder": folder, "a FIFO": fifo, "a device": device}


def test_something_that_is_not_a_regular_file_is_never_replaced(tmp_path: Path) -> None:
    for kind, path in _special_files(tmp_path).items():
        before = os.lstat(path)
        with pytest.raises(OutputError, match=f"{path.name}: it is {kind}, not a file"):
            write_image(path, np.zeros((2, 2), np.uint8), fmt="png", overwrite=True)
        with pytest.raises(OutputError, match="exists"), atomic_output(path) as fh:
            fh.write(b"x")
        after = os.lstat(path)
        assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert _temporaries(tmp_path) == []


def test_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="nodir") as info:
        write_text(tmp_path / "nodir" / "r.json", "{}")
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ permissions


def test_the_umask_is_never_read_or_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def umask(mask: int) -> int:
        raise AssertionError("os.umask is process-wide: the writer must not call it")

    monkeypatch.setattr(os, "umask", umask)
    write_image(tmp_path / "a.png", np.zeros((2, 2), np.uint8))
    write_text(tmp_path / "r.json", "{}")
    save_kernel(Kernel.parse("box:3"), tmp_path / "k.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "k.json", "r.json"]


UMASK_SCRIPT = textwrap.dedent(
    """
    import os, stat, sys, threading
    from pathlib import Path
    import numpy as np
    from PIL import Image

    os.umask({umask})
    root = Path(sys.argv[1])
    src, out, direct = root / "in", root / "out", root / "direct"
    for folder in (src, direct):
        folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(16):
        Image.fromarray(rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)).save(src / f"p{{i}}.png")

    from blurapp.cli import main
    from blurapp.io import write_image, write_text

    def writer(t):
        for i in range(12):
            write_image(direct / f"t{{t}}-{{i}}.png", rng.integers(0, 256, (20, 30), np.uint8))
        write_text(direct / f"t{{t}}.json", "{{}}")

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    code = main(["batch", str(src), "-o", str(out), "-k", "box:3", "--strategy", "cpu",
                 "--jobs", "4", "--quiet", "--report", str(root / "report.json")])
    for t in threads:
        t.join()
    assert code == 0, code
    assert os.umask(0) == {umask}, "the process umask changed"
    files = [*out.iterdir(), *direct.iterdir(), root / "report.json"]
    modes = sorted({{oct(stat.S_IMODE(p.stat().st_mode)) for p in files}})
    print(len(files), " ".join(modes))
    """
)


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_outputs_from_many_threads_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    """Batch with four encoder threads and eight threads calling write_image at the same time:
    every file gets 0o666 less the umask (a subprocess: the test process's umask is kept)."""
    code = UMASK_SCRIPT.format(umask=oct(umask))
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    count, modes = proc.stdout.split(maxsplit=1)
    assert int(count) == 16 + 8 * 13 + 1
    assert modes.split() == [oct(mode)]


# ------------------------------------------------------------------ long names


def _name(total: int, char: str, ext: str = ".png") -> str:
    """A file name of exactly ``total`` UTF-8 bytes made of ``char`` (padded with "a")."""
    size = len(char.encode())
    count = (total - len(ext)) // size
    name = char * count + "a" * (total - len(ext) - count * size) + ext
    assert len(name.encode()) == total
    return name


@pytest.mark.parametrize("total", [244, 255])
@pytest.mark.parametrize("char", ["a", "é", "猫", "😀"])
def test_the_longest_legal_names_work(tmp_path: Path, total: int, char: str) -> None:
    name = _name(total, char)
    for _ in range(20):  # the cut never splits a character, whatever the random part
        tmp = temp_name(tmp_path, name)
        raw = os.fsencode(tmp)
        assert len(raw) <= 255
        raw.decode("utf-8")  # strict: whole characters only
        assert tmp.startswith(".") and tmp.endswith(TEMP_SUFFIX)
    pixels = np.arange(12, dtype=np.uint8).reshape(3, 4)
    write_image(tmp_path / name, pixels)
    np.testing.assert_array_equal(read_image(tmp_path / name).pixels, pixels)
    with pytest.raises(OutputError, match="exists"):
        write_image(tmp_path / name, pixels)
    write_image(tmp_path / name, pixels, overwrite=True)
    kernel = _name(total, char, ".json")
    save_kernel(Kernel.parse("box:3"), tmp_path / kernel)
    assert Kernel.load(tmp_path / kernel) == Kernel.parse("box:3")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, kernel])


# ------------------------------------------------------------------ check_output


def test_check_output_refuses_an_existing_file_without_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    assert check_output(out, overwrite=False) == out
    out.write_text("{}")
    with pytest.raises(UsageError, match=r"out\.json exists \(use --overwrite") as info:
        check_output(out, overwrite=False)
    assert "\n" not in str(info.value)
    assert check_output(out, overwrite=True) == out
    with pytest.raises(UsageError, match=r"nodir.out\.json: the folder .*nodir does not exist"):
        check_output(tmp_path / "nodir" / "out.json", overwrite=True)


def test_check_output_knows_an_input_by_device_and_inode(tmp_path: Path) -> None:
    source = tmp_path / "in.png"
    source.write_bytes(b"precious")
    hard = tmp_path / "other-name.png"
    os.link(source, hard)  # another name, the same file: names cannot tell
    soft = tmp_path / "link.png"
    soft.symlink_to(source)
    for out in (source, hard, soft):
        with pytest.raises(UsageError, match=r"is the input .*in\.png; an input is never"):
            check_output(out, overwrite=True, inputs=[source])
    assert same_file(hard, source) and not same_file(tmp_path / "missing", source)
    copy = tmp_path / "copy.png"
    copy.write_bytes(b"precious")
    assert check_output(copy, overwrite=True, inputs=[source]) == copy


def test_check_output_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    for kind, path in _special_files(tmp_path).items():
        with pytest.raises(UsageError, match=f"{path.name} is {kind}, not a file"):
            check_output(path, overwrite=True)


def test_a_taken_temporary_name_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import secrets

    tokens = iter(["deadbeef", "deadbeef", "cafef00d"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(tokens))
    other = tmp_path / temp_name(tmp_path, "x.bin")  # someone else's file, same random part
    other.write_bytes(b"theirs")
    write_text(tmp_path / "x.bin", "mine")
    assert (tmp_path / "x.bin").read_text() == "mine"
    assert other.read_bytes() == b"theirs"
