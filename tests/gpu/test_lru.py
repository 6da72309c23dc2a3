"""blurapp.gpu.lru.LruCache: the size bound of the GPU caches."""

from __future__ import annotations

import pytest

from blurapp.gpu.lru import LruCache


def test_least_recently_used_goes_first_and_is_counted() -> None:
    dropped: list[tuple[str, int]] = []
    cache: LruCache[str, int] = LruCache(2, lambda k, v: dropped.append((k, v)))
    cache["a"] = 1
    cache["b"] = 2
    assert cache.get("a") == 1  # "a" is now newer than "b"
    cache["c"] = 3
    assert list(cache) == ["a", "c"] and dropped == [("b", 2)]
    assert cache.get_or_make("a", lambda: pytest.fail("made again")) == 1
    assert cache.get_or_make("d", lambda: 4) == 4
    assert list(cache) == ["a", "d"] and cache.evictions == 2 and len(cache) == 2
    assert "c" not in cache and cache.get("c") is None and cache.get("c", 0) == 0
    with pytest.raises(KeyError):
        cache["c"]
    cache.clear()
    assert len(cache) == 0 and cache.evictions == 2  # clearing is not evicting


def test_a_failed_make_stores_nothing() -> None:
    cache: LruCache[str, int] = LruCache(1)

    def fail() -> int:
        raise RuntimeError("compile error")

    with pytest.raises(RuntimeError):
        cache.get_or_make("x", fail)
    assert "x" not in cache and cache.evictions == 0


def test_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="maxsize=0"):
        LruCache(0)
