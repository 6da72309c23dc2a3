"""Runs in flight: GpuFilter submits under its lock and reads back outside it, so that the next
tile's run uploads and submits while the previous one is read back (issue 15)."""

from __future__ import annotations

import threading

import numpy as np

from blurapp.core.borders import Border
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate_float
from blurapp.gpu.engine import STORAGE_FORMATS, _passes, _staged, with_output
from blurapp.pipeline import filter_pixels


def _images(n: int, shape=(37, 45, 3)) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [rng.random(shape, dtype=np.float32) for _ in range(n)]


def test_two_submitted_runs_of_one_shape_read_back_their_own_results(fresh_filter) -> None:
    f = fresh_filter
    k = Kernel.parse("gaussian:sigma=1.5")
    a, b = _images(2)
    # Warm, so that both runs below reuse the shape's textures and pipelines.
    f.run(a, k, "mirror", "separable")
    border = Border.parse("mirror")
    specs = _passes("separable", k, border.mode.value, border.value, (45, 37), f.context.limits,
                    None, 3, None)  # fmt: skip
    passes = lambda _x: f._ready_passes(with_output(specs, "rgba32f"))  # noqa: E731
    with f._lock:
        first = f._submit(a, passes(a), "rgba32f", "rgba32f")
        second = f._submit(b, passes(b), "rgba32f", "rgba32f", staged=_staged(b, "rgba32f"))
    # Each holds a readback of its own: the first is read after the second was submitted.
    assert first.readback[0] is not second.readback[0]
    out_a, ms_a, _ = f._collect(first, 3, None)
    out_b, ms_b, _ = f._collect(second, 3, None)
    for x, out in ((a, out_a), (b, out_b)):
        ref = correlate_float(x.astype(np.float64), k, "mirror")
        np.testing.assert_allclose(out, ref, atol=2e-6)
    assert len(ms_a) == len(ms_b) == 2
    # Both readbacks went back for reuse: the next two runs create nothing.
    created = dict(f.stats)
    f.run(a, k, "mirror", "separable")
    assert dict(f.stats) == created
    assert len(f._shapes[(45, 37)].readbacks["rgba32f"]) == 2
    assert STORAGE_FORMATS["rgba32f"][1] is np.float32


def test_runs_from_many_threads_on_one_shape_are_each_right(fresh_filter) -> None:
    f = fresh_filter
    k = Kernel.parse("box:5")
    images = _images(12)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            out, _ = f.run(images[i], k, "wrap", "direct")
            results[i] = out
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(images))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, x in enumerate(images):
        ref = correlate_float(x.astype(np.float64), k, "wrap")
        np.testing.assert_allclose(results[i], ref, atol=2e-6)


def test_tiles_in_flight_give_the_untiled_bytes(gpu) -> None:
    """Tiles run three at a time on GPU threads; the result is still the untiled one."""
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (300, 410, 3), dtype=np.uint8)
    for strategy in ("direct", "separable", "tiled", "fft"):
        spec = FilterSpec.create("gaussian:sigma=2", border="reflect", strategy=strategy)
        whole = filter_pixels(image, spec).image
        tiled = filter_pixels(image, spec, max_tile_side=64)
        assert tiled.reason.endswith("63 tiles of up to 48×48")
        if strategy == "fft":
            assert np.abs(tiled.image.astype(int) - whole.astype(int)).max() <= 1
        else:
            np.testing.assert_array_equal(tiled.image, whole)
