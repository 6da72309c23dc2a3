"""blurapp.gpu.commands: NdPasses.run's commands recorded through wgpu-native's functions give
what wgpu-py's encoder gives, raise wgpu's errors, and release every handle they make."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import wgpu
from scipy import ndimage

from blurapp import ndimage as bnd
from blurapp.gpu import commands, ndpass

pytestmark = pytest.mark.gpu

U = wgpu.BufferUsage


def _calls() -> list[tuple[str, object]]:
    rng = np.random.default_rng(5)
    odd = rng.standard_normal((301, 203)).astype(np.float32)  # padded lines, a fused pair
    odd[7, 9] = np.nan
    cube = rng.standard_normal((9, 40, 72)).astype(np.float32)
    f64 = rng.standard_normal((129, 67))
    return [
        ("uniform 301x203", lambda: bnd.uniform_filter(odd, 5)),
        ("sobel 301x203 constant", lambda: bnd.sobel(odd, 1, mode="constant", cval=2.5)),
        ("gaussian 9x40x72", lambda: bnd.gaussian_filter(cube, 1.5, mode="wrap")),
        ("gaussian1d 64x64", lambda: bnd.gaussian_filter1d(odd[:64, :64], 2.0, axis=0)),
        ("correlate 2-D", lambda: bnd.correlate(odd, np.arange(12.0).reshape(3, 4))),
        ("float64 laplace", lambda: bnd.laplace(f64, mode="mirror")),
        ("1 element", lambda: bnd.uniform_filter(np.float32([3.0]), 3)),
    ]


def test_the_results_equal_those_recorded_through_wgpu_py(gpu, monkeypatch) -> None:
    for name, call in _calls():
        monkeypatch.setattr(ndpass, "RAW_COMMANDS", False)
        call()  # whatever is measured once per adapter (ndtune, the df64 check) before
        expected = np.array(call())
        monkeypatch.setattr(ndpass, "RAW_COMMANDS", True)
        got = np.array(call())
        np.testing.assert_array_equal(got, expected, err_msg=name)
        assert got.dtype == expected.dtype, name


def test_every_handle_made_is_released(gpu, monkeypatch) -> None:
    """Encoders, compute passes and command buffers: as many released as made, over whole
    ndimage calls and over an encoder whose recording fails."""
    from wgpu.backends.wgpu_native._api import libf

    counts: Counter[str] = Counter()
    for name in ("wgpuDeviceCreateCommandEncoder", "wgpuCommandEncoderBeginComputePass",
                 "wgpuCommandEncoderFinish", "wgpuCommandEncoderRelease",
                 "wgpuComputePassEncoderRelease", "wgpuCommandBufferRelease"):  # fmt: skip
        real = getattr(libf, name)

        def counted(*args, _real=real, _name=name):
            result = _real(*args)
            counts[_name] += 1
            return result

        monkeypatch.setattr(libf, name, counted)
    monkeypatch.setattr(ndpass, "RAW_COMMANDS", True)
    for _name, call in _calls():
        call()
    device = gpu.device
    a = device.create_buffer(size=1024, usage=U.COPY_SRC | U.COPY_DST)
    b = device.create_buffer(size=1024, usage=U.COPY_DST)
    with pytest.raises(wgpu.GPUValidationError, match="overrun"):
        with commands.Encoder(device) as encoder:
            encoder.begin_compute_pass()
            encoder.end()
            encoder.copy_buffer_to_buffer(a, 0, b, 0, 4096)  # past a's end: finish() raises
            encoder.finish()
    with commands.Encoder(device) as encoder:  # left with a pass open
        encoder.begin_compute_pass()
    assert counts["wgpuDeviceCreateCommandEncoder"] >= len(_calls())
    assert counts["wgpuCommandEncoderRelease"] == counts["wgpuDeviceCreateCommandEncoder"]
    assert counts["wgpuComputePassEncoderRelease"] == counts["wgpuCommandEncoderBeginComputePass"]
    assert counts["wgpuCommandBufferRelease"] == counts["wgpuCommandEncoderFinish"]  # (one raised)
    # The device is fine afterwards.
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    np.testing.assert_allclose(
        bnd.uniform_filter(x, 3, mode="nearest"),
        ndimage.uniform_filter(x, 3, mode="nearest"),
        rtol=1e-6,
    )


def test_copies_are_checked_and_one_pass_is_open_at_a_time(gpu) -> None:
    device = gpu.device
    buffer = device.create_buffer(size=4096, usage=U.COPY_SRC)
    texture = device.create_texture(
        size=(4, 4, 1), format="rgba32float", usage=wgpu.TextureUsage.COPY_DST
    )
    with commands.Encoder(device) as encoder:
        with pytest.raises(ValueError, match="bytes_per_row"):
            encoder.copy_buffer_to_texture(
                {"buffer": buffer, "bytes_per_row": 64}, {"texture": texture}, (4, 4, 1)
            )
        encoder.begin_compute_pass()
        with pytest.raises(RuntimeError, match="already open"):
            encoder.begin_compute_pass()
        encoder.end()
        encoder.close()
        encoder.close()  # idempotent


def test_only_wgpu_natives_devices_record_through_it(gpu) -> None:
    assert commands.available(gpu.device)
    assert not commands.available(object())
