"""blurapp.dask.ndfilters equals dask_image.ndfilters (scipy per chunk) on 2-D to 4-D dask
arrays, chunked so that halos cross chunks, for every function and mode."""

from __future__ import annotations

import dask.array as da
import dask_image.ndfilters as dif
import numpy as np
import pytest

from blurapp.dask import ndfilters as bdf

RNG = np.random.default_rng(6)
MODES = ("reflect", "mirror", "nearest", "wrap", "constant")
ARRAYS = {  # two chunks along each axis (one of them uneven), halos cross between them
    2: ((13, 17), (7, 9)),
    3: ((9, 8, 10), (5, 4, 6)),
    4: ((8, 6, 7, 9), (4, 3, 4, 5)),
}


def _pair(ndim: int, dtype) -> tuple[da.Array, np.ndarray]:
    shape, chunks = ARRAYS[ndim]
    x = (RNG.standard_normal(shape) * 20).astype(dtype)
    return da.from_array(x, chunks=chunks), x


def _equal(ours: da.Array, theirs: da.Array) -> None:
    assert ours.chunks == theirs.chunks
    assert ours.dtype == theirs.dtype
    a, b = ours.compute(), theirs.compute()
    if b.dtype.kind in "iu":
        np.testing.assert_array_equal(a, b)
    else:
        eps = 1e-11 if b.dtype == np.float64 else 2e-5
        np.testing.assert_allclose(a, b, rtol=eps, atol=eps * float(np.abs(b).max()))


@pytest.mark.parametrize("ndim", [2, 3, 4])
@pytest.mark.parametrize("mode", MODES)
def test_correlate_and_convolve_equal_dask_image(ndim, mode):
    image, _ = _pair(ndim, np.float64)
    weights = RNG.integers(-2, 3, size=(3, 2, 3, 2)[:ndim]).astype(np.float64)
    origin = [(1, 0, -1, 0)[i] if weights.shape[i] > 2 else 0 for i in range(ndim)]
    kw = dict(mode=mode, cval=1.5)
    _equal(bdf.correlate(image, weights, origin=origin, **kw),
           dif.correlate(image, weights, origin=origin, **kw))  # fmt: skip
    _equal(bdf.convolve(image, weights, **kw), dif.convolve(image, weights, **kw))


@pytest.mark.parametrize("ndim", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_other_functions_equal_dask_image(ndim, dtype):
    image, _ = _pair(ndim, dtype)
    modes = iter(MODES * 4)  # each function on another mode, all of them in turn

    def kw():
        return dict(mode=next(modes), cval=1.5)

    _equal(bdf.gaussian_filter(image, 1.0, **(k := kw())), dif.gaussian_filter(image, 1.0, **k))
    sig = [0.8, 1.5, 1.0, 0.6][:ndim]
    _equal(bdf.gaussian_filter(image, sig, order=1, **(k := kw())),
           dif.gaussian_filter(image, sig, order=1, **k))  # fmt: skip
    _equal(bdf.gaussian(image, 0.9, **(k := kw())), dif.gaussian(image, 0.9, **k))
    _equal(bdf.uniform_filter(image, 3, **(k := kw())), dif.uniform_filter(image, 3, **k))
    _equal(bdf.uniform_filter(image, 4, origin=1, **(k := kw())),
           dif.uniform_filter(image, 4, origin=1, **k))  # fmt: skip
    for axis in (0, -1):
        _equal(bdf.sobel(image, axis, **(k := kw())), dif.sobel(image, axis, **k))
        _equal(bdf.prewitt(image, axis, **(k := kw())), dif.prewitt(image, axis, **k))
    _equal(bdf.laplace(image, **(k := kw())), dif.laplace(image, **k))
    _equal(bdf.gaussian_laplace(image, 0.8, **(k := kw())), dif.gaussian_laplace(image, 0.8, **k))
    _equal(bdf.gaussian_gradient_magnitude(image, 0.8, **(k := kw())),
           dif.gaussian_gradient_magnitude(image, 0.8, **k))  # fmt: skip


def test_integers_and_a_kernel_larger_than_a_chunk():
    x = RNG.integers(0, 255, size=(20, 18)).astype(np.uint8)
    image = da.from_array(x, chunks=(4, 5))
    w = np.ones((7, 9))
    _equal(bdf.correlate(image, w, mode="nearest"), dif.correlate(image, w, mode="nearest"))
    _equal(bdf.sobel(image, 0), dif.sobel(image, 0))
    _equal(bdf.uniform_filter(image, 5), dif.uniform_filter(image, 5))


def test_the_results_are_the_whole_arrays_filtered():
    import blurapp.ndimage as bn

    # dask's boundary "none" leaves the true edges to the filter's mode: the whole array's
    # result, except for wrap, which dask-image's own filters apply chunk by chunk
    image, x = _pair(3, np.float32)
    for mode in ("reflect", "mirror", "nearest", "constant"):
        got = bdf.gaussian_filter(image, 1.0, mode=mode).compute()
        np.testing.assert_allclose(got, bn.gaussian_filter(x, 1.0, mode=mode), rtol=1e-5,
                                   atol=1e-4)  # fmt: skip


def test_bad_arguments_as_dask_image():
    image, _ = _pair(2, np.float32)
    for call in (
        lambda m: m.sobel(image, axis=2),
        lambda m: m.uniform_filter(image, size=(3, 3, 3)),
        lambda m: m.gaussian_filter(image, sigma=(1, 2, 3)),
        lambda m: m.correlate(image, np.ones((3, 3)), origin=2),
        lambda m: m.correlate(image, np.ones((3, 3)), origin=0.5),
    ):
        with pytest.raises(Exception) as theirs:  # dask-image's type is the expectation
            call(dif)
        with pytest.raises(type(theirs.value)):
            call(bdf)


def test_runs_without_scipy():
    """dask itself imports scipy where it is installed; blurapp.dask.ndfilters needs none:
    with scipy made unimportable, it imports and filters."""
    import subprocess
    import sys

    code = (
        "import sys, importlib.abc\n"
        "class NoScipy(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'scipy' or name.startswith('scipy.'):\n"
        "            raise ImportError('scipy is blocked')\n"
        "sys.meta_path.insert(0, NoScipy())\n"
        "import numpy as np, dask.array as da\n"
        "from blurapp.dask import ndfilters\n"
        "x = da.from_array(np.arange(36.0).reshape(6, 6), chunks=3)\n"
        "y = ndfilters.uniform_filter(x, 3).compute()\n"
        "assert abs(y[1, 1] - 7.0) < 1e-9, y\n"
        "assert 'scipy' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", bdf.__all__)
def test_signature_is_dask_images(name):
    import inspect

    theirs = inspect.signature(getattr(dif, name)).parameters.values()
    ours = inspect.signature(getattr(bdf, name)).parameters
    assert [(p.name, p.kind, p.default) for p in theirs] == [
        (p.name, p.kind, p.default) for p in ours.values() if p.name != "strategy"
    ]
    assert ours["strategy"].kind is inspect.Parameter.KEYWORD_ONLY


def test_docstring_example():
    import doctest

    result = doctest.testmod(bdf)
    assert result.attempted > 0
    assert result.failed == 0
