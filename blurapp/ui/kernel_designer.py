"""The kernel designer: a family picker with its parameters and the spec text field, kept in
sync both ways (parameters write the spec; a typed spec sets the parameters)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from blurapp.core.kernel import Kernel

# Families offered in the picker, in display order, with the parameters each one shows.
FAMILY_PARAMS: dict[str, tuple[str, ...]] = {
    "gaussian": ("sigma", "radius"),
    "box": ("width", "height"),
    "sobel": ("direction", "size"),
    "scharr": ("direction",),
    "prewitt": ("direction",),
    "laplacian": (),
    "sharpen": (),
    "emboss": (),
    "identity": (),
    "motion": ("length", "angle"),
    "disk": ("disk_radius",),
    "log": ("sigma", "radius"),
    "matrix": (),
}
TYPING_DEBOUNCE_MS = 300
MAX_SIDE_PARAM = 257


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def split_spec(spec: str) -> tuple[str, list[str], dict[str, str]]:
    """``"sobel:x,size=5"`` -> ("sobel", ["x"], {"size": "5"}) for syncing the widgets."""
    family, _, rest = spec.strip().partition(":")
    positional: list[str] = []
    named: dict[str, str] = {}
    if family.lower() != "matrix" and rest:
        for token in rest.split(","):
            key, eq, value = token.partition("=")
            if eq:
                named[key.strip().lower()] = value.strip()
            elif token.strip():
                positional.append(token.strip())
    return family.strip().lower(), positional, named


class KernelDesigner(QWidget):
    """Family + parameters + spec field (objectName ``kernelSpec``) + an inline error line.

    It does not decide what a valid kernel is: it emits :attr:`spec_edited` with candidate text
    and the window answers with :meth:`show_kernel` or :meth:`show_error`.
    """

    # (spec text, source): source is "typed" or "params"
    spec_edited = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._syncing = False
        self.family = QComboBox(objectName="familyCombo")
        self.family.addItems(list(FAMILY_PARAMS))
        self.family.setToolTip("Kernel family (DESIGN.md spec grammar)")

        self.sigma = self._double(0.1, 64.0, 0.1, 2.0, "σ in pixels; radius = int(4σ + 0.5)")
        self.radius = QSpinBox(minimum=0, maximum=MAX_SIDE_PARAM // 2, value=0)
        self.radius.setSpecialValueText("auto")
        self.radius.setToolTip("Taps each side of the centre; auto = int(4σ + 0.5)")
        self.width_ = QSpinBox(minimum=1, maximum=MAX_SIDE_PARAM, value=5)
        self.height_ = QSpinBox(minimum=1, maximum=MAX_SIDE_PARAM, value=5)
        self.direction = QComboBox()
        self.direction.addItems(["x", "y"])
        self.size = QComboBox()
        self.size.addItems(["3", "5", "7"])
        self.length = self._double(1.0, 257.0, 1.0, 9.0, "Length of the motion path in pixels")
        self.angle = self._double(-360.0, 360.0, 5.0, 0.0, "Degrees counter-clockwise from +x")
        self.disk_radius = self._double(0.5, 128.0, 0.5, 4.0, "Disc radius in pixels")
        self._params: dict[str, QWidget] = {
            "sigma": self.sigma,
            "radius": self.radius,
            "width": self.width_,
            "height": self.height_,
            "direction": self.direction,
            "size": self.size,
            "length": self.length,
            "angle": self.angle,
            "disk_radius": self.disk_radius,
        }
        labels = {
            "sigma": "Sigma",
            "radius": "Radius",
            "width": "Width",
            "height": "Height",
            "direction": "Direction",
            "size": "Size",
            "length": "Length",
            "angle": "Angle",
            "disk_radius": "Radius",
        }
        self.spec = QLineEdit(objectName="kernelSpec")
        self.spec.setPlaceholderText("e.g. gaussian:sigma=2, box:7x3, sobel:x, @kernel.json")
        self.spec.setToolTip("Kernel spec (press Enter to apply at once)")
        self.spec.setClearButtonEnabled(True)
        self.error = QLabel(objectName="specError")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #b2182b;")
        self.error.hide()
        self.matrix_hint = QLabel("Edit the weights in the Grid tab.")
        self.matrix_hint.setStyleSheet("color: palette(mid);")

        self.form = QFormLayout()
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form.addRow("Family", self.family)
        for key, widget in self._params.items():
            self.form.addRow(labels[key], widget)
        self.form.addRow("", self.matrix_hint)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.form)
        layout.addWidget(QLabel("Spec"))
        layout.addWidget(self.spec)
        layout.addWidget(self.error)

        self._typing = QTimer(self, singleShot=True, interval=TYPING_DEBOUNCE_MS)
        self._typing.timeout.connect(self._emit_typed)
        self.spec.textEdited.connect(lambda _t: self._typing.start())
        self.spec.returnPressed.connect(self._emit_typed_now)
        self.family.currentTextChanged.connect(self._family_changed)
        for widget in self._params.values():
            if isinstance(widget, QComboBox):
                widget.currentTextChanged.connect(self._params_changed)
            else:
                widget.valueChanged.connect(self._params_changed)
        self._show_rows("gaussian")

    @staticmethod
    def _double(lo: float, hi: float, step: float, value: float, tip: str) -> QDoubleSpinBox:
        box = QDoubleSpinBox(minimum=lo, maximum=hi, singleStep=step, decimals=2, value=value)
        box.setToolTip(tip)
        # Emitting while typing "1" of "1.5" would run a filter per keystroke; wait for Enter/focus
        box.setKeyboardTracking(False)
        box.setStepType(QAbstractSpinBox.StepType.DefaultStepType)
        return box

    # ---- widgets -> spec -----------------------------------------------------------------
    def build_spec(self) -> str:
        """The spec the family picker and its parameters describe."""
        fam = self.family.currentText()
        if fam == "gaussian" or fam == "log":
            spec = f"{fam}:sigma={_fmt(self.sigma.value())}"
            if self.radius.value() > 0:
                spec += f",radius={self.radius.value()}"
            return spec
        if fam == "box":
            w, h = self.width_.value(), self.height_.value()
            return f"box:{w}" if w == h else f"box:{w}x{h}"
        if fam == "sobel":
            size = self.size.currentText()
            return f"sobel:{self.direction.currentText()}" + (
                "" if size == "3" else f",size={size}"
            )
        if fam in ("scharr", "prewitt"):
            return f"{fam}:{self.direction.currentText()}"
        if fam == "motion":
            return f"motion:length={_fmt(self.length.value())},angle={_fmt(self.angle.value())}"
        if fam == "disk":
            return f"disk:radius={_fmt(self.disk_radius.value())}"
        return fam

    def _show_rows(self, family: str) -> None:
        wanted = FAMILY_PARAMS.get(family, ())
        for key, widget in self._params.items():
            self.form.setRowVisible(widget, key in wanted)
        self.form.setRowVisible(self.matrix_hint, family == "matrix")

    def _family_changed(self, family: str) -> None:
        self._show_rows(family)
        if not self._syncing and family != "matrix":
            self.spec_edited.emit(self.build_spec(), "params")

    def _params_changed(self, *_args: object) -> None:
        if not self._syncing and self.family.currentText() != "matrix":
            self.spec_edited.emit(self.build_spec(), "params")

    def _emit_typed(self) -> None:
        self.spec_edited.emit(self.spec.text(), "typed")

    def _emit_typed_now(self) -> None:
        self._typing.stop()
        self._emit_typed()

    # ---- kernel -> widgets ---------------------------------------------------------------
    def show_kernel(self, kernel: Kernel, *, set_text: bool = True) -> None:
        """Show a valid kernel: clear the error, set the widgets (and the text) from its spec."""
        self.error.hide()
        self.error.clear()
        self.spec.setStyleSheet("")
        self._syncing = True
        try:
            if set_text and self.spec.text() != kernel.spec:
                self.spec.setText(kernel.spec)
                self.spec.setCursorPosition(0)
            family, pos, named = split_spec(kernel.spec)
            if family not in FAMILY_PARAMS:
                family = "matrix"
            self.family.setCurrentText(family)
            self._show_rows(family)
            self._set_params(family, pos, named)
        finally:
            self._syncing = False

    def _set_params(self, family: str, pos: list[str], named: dict[str, str]) -> None:
        def num(text: str | None, default: float) -> float:
            try:
                return float(text) if text is not None else default
            except ValueError:
                return default

        if family in ("gaussian", "log"):
            sigma = named.get("sigma", pos[0] if pos else None)
            if sigma is not None and "x" not in sigma.lower():
                self.sigma.setValue(num(sigma, self.sigma.value()))
            radius = named.get("radius")
            self.radius.setValue(int(num(radius, 0)) if radius and "x" not in radius else 0)
        elif family == "box":
            size = named.get("size", pos[0] if pos else "5").lower().replace("×", "x")
            w, _, h = size.partition("x")
            self.width_.setValue(int(num(w, 5)))
            self.height_.setValue(int(num(h or w, 5)))
        elif family in ("sobel", "scharr", "prewitt"):
            direction = named.get("direction", pos[0] if pos else "x")
            self.direction.setCurrentText(direction.lower())
            if family == "sobel":
                self.size.setCurrentText(named.get("size", "3"))
        elif family == "motion":
            self.length.setValue(num(named.get("length", pos[0] if pos else None), 9))
            self.angle.setValue(num(named.get("angle"), 0))
        elif family == "disk":
            self.disk_radius.setValue(num(named.get("radius", pos[0] if pos else None), 4))

    def show_error(self, message: str) -> None:
        """Show why the typed spec is invalid; the last valid kernel stays in use."""
        self.error.setText(message)
        self.error.show()
        self.spec.setStyleSheet("QLineEdit { border: 1px solid #b2182b; }")

    def has_error(self) -> bool:
        return not self.error.isHidden()

    def flush(self) -> None:
        """Apply pending typed text now (used by tests and before exporting)."""
        if self._typing.isActive():
            self._emit_typed_now()

    def set_focus_to_spec(self) -> None:
        self.spec.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.spec.selectAll()
