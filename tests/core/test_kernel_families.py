"""The description of every family's parameters (FAMILY_PARAMS) agrees with the grammar itself:
names, positional order, ranges, defaults, choices; format_spec and spec_params round-trip."""

from __future__ import annotations

import pytest

from blurapp.core.errors import KernelSpecError
from blurapp.core.kernel import Kernel
from blurapp.core.kernel_families import (
    FAMILIES,
    FAMILY_PARAMS,
    MAX_KERNEL_SIDE,
    FamilyParam,
    format_number,
    format_spec,
    spec_params,
)

PARAMS = [
    pytest.param(family, p, id=f"{family}-{p.name}")
    for family, params in FAMILY_PARAMS.items()
    for p in params
]


def _spec(family: str, **values: str) -> str:
    """A spec of ``family``: the required parameters at their examples, then ``values``."""
    base = {p.name: p.example for p in FAMILY_PARAMS[family] if p.required}
    return format_spec(family, {**base, **values})


def test_the_same_families_in_the_same_order() -> None:
    assert list(FAMILY_PARAMS) == list(FAMILIES)


@pytest.mark.parametrize("family", [f for f in FAMILY_PARAMS if f != "matrix"])
def test_every_family_parses_with_its_examples(family: str) -> None:
    spec = _spec(family)
    assert Kernel.parse(spec).name == family
    if any(p.required for p in FAMILY_PARAMS[family]):
        with pytest.raises(KernelSpecError):  # they really are required
            Kernel.parse(format_spec(family, {}))


@pytest.mark.parametrize(("family", "p"), PARAMS)
def test_the_range_is_the_grammars(family: str, p: FamilyParam) -> None:
    def parses(value: float) -> bool:
        text = str(int(value)) if p.kind == "integer" else format_number(value)
        try:
            Kernel.parse(_spec(family, **{p.name: text}))
        except KernelSpecError:
            return False
        return True

    if p.minimum is not None:  # a bound on the value itself: below it, always refused
        assert not parses(p.minimum - (1 if p.kind == "integer" else 0.01))
        if p.exclusive_minimum:
            assert not parses(p.minimum)
        else:
            assert parses(p.minimum)
    if p.maximum is not None:
        assert p.maximum <= MAX_KERNEL_SIDE
        assert parses(p.maximum)
        assert not parses(p.maximum + 1)
    for choice in p.choices:
        assert Kernel.parse(_spec(family, **{p.name: choice})).name == family
    if p.choices:
        with pytest.raises(KernelSpecError):
            Kernel.parse(_spec(family, **{p.name: "z"}))
    if p.default is not None:  # giving the default is the same as leaving it out
        assert Kernel.parse(_spec(family, **{p.name: p.default})) == Kernel.parse(_spec(family))
    if p.pair:
        Kernel.parse(_spec(family, **{p.name: f"{p.example or 3}x{p.example or 3}"}))


@pytest.mark.parametrize("family", [f for f in FAMILY_PARAMS if f != "matrix"])
def test_positional_values_take_the_positional_names(family: str) -> None:
    positional = [p for p in FAMILY_PARAMS[family] if p.positional]
    values = [p.example for p in positional]
    spec = f"{family}:{','.join(v for v in values if v)}" if values else family
    assert spec_params(spec) == (
        family,
        {p.name: v for p, v in zip(positional, values, strict=True)},
    )
    assert Kernel.parse(spec) == Kernel.parse(_spec(family))


@pytest.mark.parametrize(
    "spec",
    ["gaussian:sigma=2x1,radius=3x2", "box:7x3", "sobel:y,size=7", "scharr:x", "laplacian",
     "motion:length=8.5,angle=-135", "disk:radius=2.5", "log:sigma=1,radius=6"],
)  # fmt: skip
def test_canonical_specs_split_and_write_back_the_same(spec: str) -> None:
    family, named = spec_params(spec)
    assert format_spec(family, named) == spec == Kernel.parse(spec).spec


def test_spec_params_reads_like_the_grammar() -> None:
    assert spec_params(" Sobel : Y , SIZE = 5 ") == ("sobel", {"direction": "Y", "size": "5"})
    assert spec_params("matrix:2x1:1,2") == ("matrix", {})
    with pytest.raises(KernelSpecError, match="unknown kernel family 'blur'"):
        spec_params("blur:3")
    with pytest.raises(KernelSpecError, match="unknown parameter 'sigma' for box"):
        spec_params("box:3,sigma=2")
    with pytest.raises(KernelSpecError, match="unexpected value"):
        spec_params("sobel:x,5")


def test_format_spec_refuses_unknown_names() -> None:
    assert format_spec("sobel", {"direction": "x", "size": None}) == "sobel:x"
    with pytest.raises(KeyError, match="sigma"):
        format_spec("box", {"sigma": "2"})
