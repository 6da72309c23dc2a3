"""The kernel designer reads core: its families, parameters, ranges and spec reading come from
blurapp.core.kernel_families, so it can offer nothing the grammar refuses."""

from __future__ import annotations

import pytest

from blurapp.core.kernel import KNOWN_FAMILIES, MAX_KERNEL_SIDE, Kernel
from blurapp.core.kernel_families import FAMILIES, FAMILY_PARAMS, MAX_RADIUS
from blurapp.ui.kernel_designer import KernelDesigner


@pytest.fixture
def designer(qtbot) -> KernelDesigner:
    widget = KernelDesigner()
    qtbot.addWidget(widget)
    return widget


def _offered(designer: KernelDesigner) -> list[str]:
    return [designer.family.itemText(i) for i in range(designer.family.count())]


def test_every_family_offered_parses_in_core_and_round_trips(designer) -> None:
    offered = _offered(designer)
    assert offered == list(FAMILY_PARAMS) == list(FAMILIES)
    assert set(offered) == set(KNOWN_FAMILIES)
    for family in offered:
        designer.family.setCurrentText(family)
        spec = designer.build_spec()
        if family == "matrix":  # edited in the Grid tab: the designer writes no weights
            assert spec == "matrix"
            continue
        kernel = Kernel.parse(spec)  # no exception: a spec core accepts
        assert kernel.name == family
        designer.show_kernel(kernel)  # and back: the controls hold what the spec says
        assert designer.family.currentText() == family
        assert Kernel.parse(designer.build_spec()) == kernel


def test_the_designers_limits_are_cores(designer) -> None:
    assert designer.width_.maximum() == designer.height_.maximum() == MAX_KERNEL_SIDE
    assert designer.radius.maximum() == MAX_RADIUS == MAX_KERNEL_SIDE // 2
    assert designer.length.maximum() == MAX_KERNEL_SIDE
    assert designer.disk_radius.maximum() == MAX_RADIUS + 0.5
    assert designer.sigma.maximum() == MAX_RADIUS / 4  # radius int(4σ + 0.5) = MAX_RADIUS
    # At the limits, what the designer writes is what core accepts.
    designer.family.setCurrentText("box")
    designer.width_.setValue(designer.width_.maximum())
    designer.height_.setValue(designer.height_.minimum())
    assert Kernel.parse(designer.build_spec()).shape == (1, MAX_KERNEL_SIDE)
    designer.family.setCurrentText("gaussian")
    designer.sigma.setValue(designer.sigma.maximum())
    assert Kernel.parse(designer.build_spec()).shape == (MAX_KERNEL_SIDE, MAX_KERNEL_SIDE)
    designer.sigma.setValue(designer.sigma.minimum())
    designer.radius.setValue(designer.radius.maximum())
    assert Kernel.parse(designer.build_spec()).shape == (MAX_KERNEL_SIDE, MAX_KERNEL_SIDE)
    designer.family.setCurrentText("motion")
    designer.length.setValue(designer.length.maximum())
    assert Kernel.parse(designer.build_spec()).width == MAX_KERNEL_SIDE


def test_start_values_and_tooltips_come_from_core(designer) -> None:
    gaussian = {p.name: p for p in FAMILY_PARAMS["gaussian"]}
    assert designer.sigma.value() == float(gaussian["sigma"].example)
    assert designer.sigma.toolTip() == gaussian["sigma"].help
    assert designer.radius.specialValueText() == "auto"  # core computes it when left out
    assert designer.radius.value() == designer.radius.minimum()
    assert designer.width_.value() == int(FAMILY_PARAMS["box"][0].example)
    assert designer.size.currentText() == "3" == FAMILY_PARAMS["sobel"][1].default
    assert designer.build_spec() == "gaussian:sigma=2"


def test_specs_are_read_with_cores_parser(designer) -> None:
    designer.show_kernel(Kernel.parse("box:7x3"))
    assert (designer.width_.value(), designer.height_.value()) == (7, 3)
    designer.show_kernel(Kernel.parse("gaussian:3,radius=5"))  # positional sigma
    assert (designer.sigma.value(), designer.radius.value()) == (3, 5)
    assert designer.build_spec() == "gaussian:sigma=3,radius=5"
    designer.show_kernel(Kernel.parse("gaussian:sigma=2"))
    assert designer.radius.value() == designer.radius.minimum()  # auto again
    # An anisotropic sigma cannot be shown in one box: the box keeps its value.
    designer.show_kernel(Kernel.parse("gaussian:sigma=1.5x0.5"))
    assert designer.family.currentText() == "gaussian" and designer.sigma.value() == 2
    designer.show_kernel(Kernel.parse("log:sigma=1,radius=6"))
    assert (designer.family.currentText(), designer.radius.value()) == ("log", 6)
    designer.show_kernel(Kernel.from_weights([[1.0, 2.0]]))
    assert designer.family.currentText() == "matrix"


def test_the_matrix_family_starts_from_the_weights_or_the_identity(qtbot) -> None:
    """GIMP's Convolution Matrix: the current kernel's exact weights, or the identity."""
    import numpy as np

    from blurapp.core.kernel import Kernel
    from blurapp.ui.kernel_designer import KernelDesigner

    designer = KernelDesigner()
    qtbot.addWidget(designer)
    gaussian = Kernel.parse("gaussian:sigma=1")
    designer.show_kernel(gaussian)
    designer.family.setCurrentText("matrix")
    with qtbot.waitSignal(designer.spec_edited) as sent:
        designer.from_current.click()
    spec, source = sent.args
    assert spec.startswith("matrix:9x9:") and source == "params"
    np.testing.assert_array_equal(Kernel.parse(spec).weights, gaussian.weights)
    with qtbot.waitSignal(designer.spec_edited) as sent:
        designer.from_identity.click()
    assert Kernel.parse(sent.args[0]).weights.tolist() == [[0, 0, 0], [0, 1, 0], [0, 0, 0]]
