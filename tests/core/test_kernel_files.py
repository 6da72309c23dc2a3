"""Kernel files and spec strings that used to hang, eat memory or raise tracebacks (issue 18):
each is one KernelSpecError line now."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from blurapp.core.errors import KernelSpecError
from blurapp.core.kernel import MAX_KERNEL_FILE_BYTES, Kernel

HEADER = '{"format": "blurapp-kernel", "version": 1, '


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_device_nodes_are_not_kernel_files(device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    with pytest.raises(KernelSpecError, match="not a regular file"):
        Kernel.parse(f"@{device}")


def test_a_fifo_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "k.json"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    with pytest.raises(KernelSpecError, match="not a regular file"):
        Kernel.parse(f"@{fifo}")


def test_a_folder_is_not_a_kernel_file(tmp_path: Path) -> None:
    with pytest.raises(KernelSpecError, match="a folder"):
        Kernel.parse(f"@{tmp_path}")


def test_kernel_files_have_a_size_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_KERNEL_FILE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(KernelSpecError, match="MiB"):
        Kernel.parse(f"@{big}")


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('"weights": [[' + "9" * 400 + "]]}", "not a numeric array"),
        ('"weights": [[' + "9" * 4301 + "]]}", "too many digits"),
        ('"version": 1, "weights": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('"spec": "gaussian:sigma=1e-200", "weights": [[1.0]]}', None),  # kept as a matrix
        ('"weights": [[1e39]]}', "float32"),
    ],
)
def test_hostile_json_kernels(tmp_path: Path, body: str, needle: str | None) -> None:
    path = tmp_path / "k.json"
    path.write_text(HEADER + body)
    if needle is None:
        assert Kernel.parse(f"@{path}").spec == "matrix:1x1:1"
        return
    with pytest.raises(KernelSpecError, match=needle) as info:
        Kernel.parse(f"@{path}")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "spec",
    [
        "gaussian:sigma=1e-200",
        "gaussian:sigma=5e-324",
        "gaussian:sigma=1e-160",
        "gaussian:sigma=1e-200x1",
        "dog:sigma=1e-200,1",
        "unsharp:sigma=1e-200,amount=1",
    ],
)
def test_parameters_out_of_range_are_one_line_without_warnings(spec: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning printed before the error
        with pytest.raises(KernelSpecError, match="too small or too large") as info:
            Kernel.parse(spec)
    assert "\n" not in str(info.value)
