"""blurapp.ndimage's plans (blurapp/ndimage/_plans.py): a call made again from the one GPU run
it came down to, without its planning. Every result is the full path's, bit for bit, on new
values of the same shape; a plan is kept only where nothing but the shape and the arguments
decide the run, and a key tells apart what scipy tells apart."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from blurapp import ndimage as bn
from blurapp.gpu import ndpass
from blurapp.ndimage import _plans

RNG = np.random.default_rng(2029)

# (function, positional arguments, keyword arguments): each a float32 path of one chain.
CALLS = [
    ("sobel", (0,), {}),
    ("sobel", (), {"axis": 1, "mode": "constant", "cval": -0.0}),
    ("prewitt", (1,), {"mode": "wrap"}),
    ("uniform_filter", (5,), {}),
    ("uniform_filter", ((3, 4),), {"mode": ("nearest", "mirror"), "origin": (1, -1)}),
    ("uniform_filter1d", (7,), {"axis": 0, "origin": 2}),
    ("gaussian_filter", (1.5,), {}),
    ("gaussian_filter", ([1.0, 2.0],), {"order": (0, 1), "mode": "grid-wrap", "truncate": 3.0}),
    ("gaussian_filter1d", (2.0,), {"axis": -1, "order": 2, "radius": 5}),
    ("correlate1d", ([1.0, -2.0, 0.5],), {"axis": 0, "mode": "constant", "cval": float("nan")}),
    ("convolve1d", ([1, 2, 3, 4],), {"origin": -1, "output": "float32"}),
]

# Shapes past ndpass.SMALL (one chain, lent): lines a multiple of 8 long (the plain run) and
# not (the padded one), and a stack of planes.
SHAPES = [(256, 192), (301, 203), (4, 90, 117)]


def _full(name: str, x: np.ndarray, args: tuple, kwargs: dict) -> np.ndarray:
    """The call on the full path (no plan kept or used)."""
    old, _plans.PLANS = _plans.PLANS, 0
    try:
        return np.array(getattr(bn, name)(x, *args, **kwargs))
    finally:
        _plans.PLANS = old


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("call", range(len(CALLS)))
def test_a_planned_call_equals_the_full_path_on_new_values(shape, call) -> None:
    name, args, kwargs = CALLS[call]
    if len(shape) == 3 and (name == "uniform_filter" and isinstance(args[0], tuple)):
        args = ((3, 4, 2),)
        kwargs = {**kwargs, "mode": ("nearest", "mirror", "wrap"), "origin": (1, -1, 0)}
    if len(shape) == 3 and name == "gaussian_filter" and isinstance(args[0], list):
        args = ([1.0, 2.0, 0.5],)
        kwargs = {**kwargs, "order": (0, 1, 0)}
    _plans.clear()
    f = getattr(bn, name)
    xs = [RNG.standard_normal(shape).astype(np.float32) for _ in range(4)]
    xs[3][0, 0] = np.nan
    # Planned on the full path. Lent where the adapter lends (a software adapter's mapped
    # buffers), else a new array; the plan's results are the same kind.
    lends = ndpass.is_lent(f(xs[0], *args, **kwargs))
    [key] = _plans._plans
    plan = _plans._plans.get(key)
    assert isinstance(plan, ndpass.Plan), "one chain over the array, its result"
    engine = ndpass.get_passes()
    runs = engine.stats["lent"]
    results = [f(x, *args, **kwargs) for x in xs[1:]]  # from the plan
    assert engine.stats["lent"] == runs + 3 * lends  # each a run of its own
    assert list(_plans._plans) == [key]
    for x, got in zip(xs[1:], results, strict=True):
        want = _full(name, x, args, kwargs)
        assert got.shape == x.shape and got.dtype == np.float32
        assert ndpass.is_lent(got) == lends and type(got) is np.ndarray
        np.testing.assert_array_equal(got, want)
        assert np.signbit(got[got == 0]).tolist() == np.signbit(want[want == 0]).tolist()
    # The input changed in place between calls: the plan reads the new values.
    xs[1] *= -2.0
    np.testing.assert_array_equal(f(xs[1], *args, **kwargs), _full(name, xs[1], args, kwargs))


def test_keys_tell_apart_what_scipy_tells_apart(monkeypatch) -> None:
    """A float by its bits (-0.0 is not 0.0), a bool not its int, a list not its tuple, a
    keyword not its position; every ndpass setting and the engine are in the key."""
    x = np.zeros((64, 64), np.float32)
    key = _plans._key
    f = bn.sobel.__wrapped__
    base = key(f, x, (0,), {})
    assert base is not None and key(f, x, (0,), {}) == base
    assert key(f, x, (), {"cval": -0.0}) != key(f, x, (), {"cval": 0.0})
    assert key(f, x, (True,), {}) != base and key(f, x, (0.0,), {}) != base
    assert key(f, x, (), {"axis": 0}) != base
    assert key(f, x, ([1],), {}) != key(f, x, ((1,),), {})
    assert key(f, x.reshape(32, 128), (0,), {}) != base
    assert key(bn.prewitt.__wrapped__, x, (0,), {}) != base
    monkeypatch.setattr(ndpass, "PLANE_COLS", ndpass.PLANE_COLS * 2)
    assert key(f, x, (0,), {}) != base
    monkeypatch.undo()
    assert key(f, x, (0,), {}) == base
    monkeypatch.setattr(ndpass, "_passes", ndpass.NdPasses(ndpass.get_passes().context))
    assert key(f, x, (0,), {}) != base


@pytest.mark.parametrize(
    "x, args, kwargs",
    [
        (np.zeros((64, 64)), (0,), {}),  # float64: double-float scales by the values
        (np.zeros((64, 64), np.uint8), (0,), {}),  # integers: casts by the values
        (np.zeros((64, 64), np.float32, order="F"), (0,), {}),
        (np.zeros((64, 128), np.float32)[:, ::2], (0,), {}),
        (np.zeros((64, 64), np.float32), (0, np.zeros((64, 64), np.float32)), {}),
        (np.zeros((64, 64), np.float32), (0,), {"strategy": "direct"}),
        (np.zeros((64, 64), np.float32), (np.int64(0),), {}),  # not a plain value
        (np.zeros((64, 64), np.float32), (0,), {"output": np.float32}),
        (np.ma.zeros((64, 64), np.float32), (0,), {}),
        (np.zeros((0, 64), np.float32), (0,), {}),
    ],
    ids=[
        "float64",
        "uint8",
        "fortran",
        "strided",
        "output array",
        "strategy",
        "numpy scalar",
        "dtype type",
        "subclass",
        "empty",
    ],
)
def test_no_key_where_more_than_shape_and_arguments_decide(x, args, kwargs) -> None:
    assert _plans._key(bn.sobel.__wrapped__, x, args, kwargs) is None


def test_calls_that_run_more_than_one_chain_keep_no_plan() -> None:
    """gaussian_laplace sums chains; a filter of tiny sigmas runs none; a call that raises
    keeps nothing and raises again, also after the same call with a right argument."""
    _plans.clear()
    x = RNG.standard_normal((256, 192)).astype(np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(bn.laplace(x), _full("laplace", x, (), {}))
        bn.gaussian_filter(x, 1e-20)
    assert all(plan is _plans._NONE for plan in _plans._plans.values())
    assert len(_plans._plans) == 1  # laplace is not planned at all; the tiny sigmas' call is
    bn.sobel(x, 1)
    bn.sobel(x, 1)
    for _ in range(2):
        with pytest.raises(TypeError):
            bn.sobel(x, 1.0)
        with pytest.raises(np.exceptions.AxisError):
            bn.sobel(x, 2)
        with pytest.raises(ValueError, match="origin"):
            bn.uniform_filter(x, 3, origin=5)


def test_a_plan_runs_on_its_own_engine_only() -> None:
    _plans.clear()
    x = RNG.standard_normal((256, 192)).astype(np.float32)
    bn.uniform_filter(x, 5)
    [plan] = _plans._plans.values()
    other = ndpass.NdPasses(ndpass.get_passes().context)
    assert plan.run(x, other) is None
    np.testing.assert_array_equal(plan.run(x, ndpass.get_passes()), _full("uniform_filter", x,
                                                                          (5,), {}))  # fmt: skip


def test_plans_are_bounded_and_cleared(monkeypatch) -> None:
    monkeypatch.setattr(_plans, "PLANS", 3)
    _plans.clear()
    x = RNG.standard_normal((256, 192)).astype(np.float32)
    for size in range(3, 9):
        bn.uniform_filter1d(x, size)
    assert len(_plans._plans) == 3
    assert [k[2][0][1][0][1] for k in _plans._plans] == [6, 7, 8]  # the newest kept
    _plans.clear()
    assert not _plans._plans


def test_threads_calling_one_planned_filter_get_their_own_results() -> None:
    _plans.clear()
    xs = [RNG.standard_normal((256, 192)).astype(np.float32) for _ in range(4)]
    wants = [_full("gaussian_filter", x, (2.0,), {}) for x in xs]
    bn.gaussian_filter(xs[0], 2.0)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(10):
                np.testing.assert_array_equal(bn.gaussian_filter(xs[k], 2.0), wants[k])
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_a_planning_keeps_only_one_run_over_the_array_itself() -> None:
    """ndpass.Planning.plan_for: a plan only where one run read the array itself (not a copy,
    not the same memory read another way) and the call returned that run's result as it came
    (lent, or a new array where the adapter lends none); a planning inside another is the
    outer one's."""
    from blurapp.core.borders import Border, BorderMode

    x = RNG.standard_normal((256, 256)).astype(np.float32)
    lines = [ndpass.Line(0, np.array([1.0, 2.0, 1.0]), Border(BorderMode.REFLECT), 0)]

    def watch(a: np.ndarray, runs: int = 1) -> tuple[ndpass.Planning, np.ndarray]:
        with ndpass.planning() as watched:
            for _ in range(runs):
                result = ndpass.correlate1d_chain(a, lines, precision="f32", lend=True)
        return watched, result

    watched, result = watch(x)
    assert isinstance(watched.plan_for(x, result), ndpass.Plan)
    assert watched.plan_for(x.T, result) is None  # the same memory, read across
    assert watched.plan_for(x.copy(), result) is None
    assert watched.plan_for(x, np.array(result)) is None  # a copy of the result
    assert watched.plan_for(x, result[1:]) is None
    watched, result = watch(np.ascontiguousarray(x.T))
    assert watched.plan_for(x.T, result) is None  # a copy was read
    watched, result = watch(x, runs=2)
    assert watched.plan_for(x, result) is None
    with ndpass.planning() as outer, ndpass.planning() as inner:
        assert inner is None and outer is not None
