"""The kernel designer: a family picker with its parameters and the spec text field, kept in
sync both ways (parameters write the spec; a typed spec sets the parameters).

Sigma and the Gaussian's radius also have a slider beside their spin box (``sigmaSlider``,
``radiusSlider``), as photographers expect: the slider moves the spin box, which writes the
spec; the spin box (typed, or set from a spec) moves the slider back without a second write."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QClipboard, QKeySequence
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from blurapp.core.errors import BlurappError, KernelSpecError
from blurapp.core.kernel import Kernel
from blurapp.core.kernel_families import (
    FAMILY_PARAMS,
    FamilyParam,
    format_spec,
    matrix_spec,
    spec_params,
)

#: Typed text that is not a valid kernel is said to be invalid after this pause in typing (not
#: on every keystroke of a spec still being written); valid text applies at once.
TYPING_DEBOUNCE_MS = 300
#: Typed text up to this length is parsed on each keystroke, and applied at once when valid;
#: longer text (a pasted matrix) waits for Enter or the pause.
LIVE_PARSE_CHARS = 4096
#: The spec box's length limit: a 513×513 matrix of one-digit weights is 526,352 characters;
#: beyond about a million, a QLineEdit takes seconds per keystroke to lay out its line.
MAX_SPEC_CHARS = 2**20
# Left to the spec field: truncate= says what radius= says, in sigmas.
TEXT_ONLY_PARAMS = frozenset({"truncate"})
# Parameters without a lower or upper bound in core (a motion's angle): a full turn either way.
_UNBOUNDED = 360.0


def _fmt(x: float) -> str:
    return f"{x:.6g}"


@dataclass(frozen=True)
class _Look:
    """How the designer edits one kind of parameter: its attribute(s) and spin-box step."""

    attrs: tuple[str, ...]  # one widget, or (columns, rows) for a WxH pair edited as two
    step: float = 1.0


# Controls shared by families whose parameter has the same name and kind (one sigma box for
# gaussian and log), with the attribute names and steps the window and tests know. Which
# families show which control, the ranges, start values and tooltips all come from core
# (FAMILY_PARAMS); a parameter not listed here gets a control of its own, ``<family>_<name>``.
_LOOKS: dict[tuple[str, str], _Look] = {
    ("sigma", "number"): _Look(("sigma",), 0.1),
    ("radius", "integer"): _Look(("radius",)),
    ("size", "integer"): _Look(("width_", "height_")),
    ("direction", "choice"): _Look(("direction",)),
    ("size", "choice"): _Look(("size",)),
    ("length", "number"): _Look(("length",)),
    ("angle", "number"): _Look(("angle",), 5.0),
    ("radius", "number"): _Look(("disk_radius",), 0.5),
}
_LABELS = {"width_": "Width", "height_": "Height", "disk_radius": "Radius"}
#: Controls with a slider: attribute -> (slider's objectName, slider units per spin-box unit,
#: the largest value the slider reaches; the spin box goes further when core allows).
_SLIDERS = {"sigma": ("sigmaSlider", 10, 30.0), "radius": ("radiusSlider", 1, 100)}


def _shown(family: str) -> tuple[tuple[FamilyParam, _Look], ...]:
    """The parameters of ``family`` the designer shows, in core's order, with their controls."""
    return tuple(
        (p, _LOOKS.get((p.name, p.kind)) or _Look((f"{family}_{p.name}",), _step(p)))
        for p in FAMILY_PARAMS.get(family, ())
        if p.name not in TEXT_ONLY_PARAMS
    )


def _step(p: FamilyParam) -> float:
    return 0.1 if p.kind == "number" else 1.0


class SpecField(QLineEdit):
    """The spec box: a QLineEdit that refuses a paste (keys, context menu, middle click or a
    drop) longer than :data:`MAX_SPEC_CHARS` with a message naming its real length, before Qt
    inserts it: Qt's own limit cuts the text, slowly (minutes for a few million characters),
    and the parser then reports the cut text's size."""

    too_long = Signal(int)  # the characters offered

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.setMaxLength(MAX_SPEC_CHARS)

    def _fits(self, text: str) -> bool:
        room = MAX_SPEC_CHARS - len(self.text()) + len(self.selectedText())
        if len(text) <= room:
            return True
        self.too_long.emit(len(text))
        return False

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if event.matches(QKeySequence.StandardKey.Paste) and not self._fits(
            QApplication.clipboard().text()
        ):
            event.accept()
            return
        super().keyPressEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if event.button() == Qt.MouseButton.MiddleButton:  # X11's selection paste
            selection = QApplication.clipboard().text(QClipboard.Mode.Selection)
            if not self._fits(selection):
                event.accept()
                return
        super().mouseReleaseEvent(event)

    def dropEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if event.mimeData().hasText() and not self._fits(event.mimeData().text()):
            event.ignore()
            return
        super().dropEvent(event)

    def contextMenuEvent(self, event) -> None:  # noqa: N802 (Qt override)
        menu = self.createStandardContextMenu()
        for action in menu.actions():
            if action.objectName() == "edit-paste":
                action.triggered.disconnect()
                action.triggered.connect(self.paste_checked)
        menu.exec(event.globalPos())
        menu.deleteLater()

    def paste_checked(self) -> None:
        """Paste the clipboard unless it is too long (then :attr:`too_long`)."""
        if self._fits(QApplication.clipboard().text()):
            self.paste()


class KernelDesigner(QWidget):
    """Family + parameters + spec field (objectName ``kernelSpec``) + an inline error line.

    It does not decide what a valid kernel is: it emits :attr:`spec_edited` with candidate text
    and the window answers with :meth:`show_kernel` or :meth:`show_error`. Typed text that
    parses is emitted on the keystroke that makes it (as a slider step is); text that does not
    is emitted after a pause in typing or on Enter, so the error shows once the user stops.
    """

    # (spec text, source): source is "typing" (a keystroke), "typed" (Enter, pause) or "params"
    spec_edited = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._syncing = False
        self.family = QComboBox(objectName="familyCombo")
        self.family.addItems(list(FAMILY_PARAMS))
        self.family.setToolTip("Kernel family (DESIGN.md spec grammar)")
        # attribute -> widget, in the order their rows appear; built from core's parameters.
        self._params: dict[str, QWidget] = {}
        labels: dict[str, str] = {}
        for family in FAMILY_PARAMS:
            for p, look in _shown(family):
                self._add_control(p, look)
                for attr in look.attrs:
                    labels.setdefault(attr, _LABELS.get(attr, p.name.capitalize()))
        self.spec = SpecField(objectName="kernelSpec")
        self.spec.setPlaceholderText("e.g. gaussian:sigma=2, box:7x3, sobel:x, @kernel.json")
        self.spec.setToolTip("Kernel spec (press Enter to apply at once)")
        self.spec.setClearButtonEnabled(True)
        # Qt's default of 32,767 characters cut a pasted 513×513 matrix and the parser then
        # counted the weights left ("16377 given"): room for any 513×513 matrix of short
        # weights, and a longer paste is refused with its real length.
        self.spec.too_long.connect(self._too_long)
        self.error = QLabel(objectName="specError")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #b2182b;")
        self.error.hide()
        self.matrix_hint = QWidget()
        column = QVBoxLayout(self.matrix_hint)
        column.setContentsMargins(0, 0, 0, 0)
        note = QLabel("Edit the weights in the Grid tab.")
        note.setStyleSheet("color: palette(mid);")
        column.addWidget(note)
        hint = QHBoxLayout()
        column.addLayout(hint)
        start = QLabel("Start from")
        # GIMP's Convolution Matrix starts from what is there or from the identity.
        self.from_current = QPushButton("these weights", objectName="matrixFromCurrent")
        self.from_current.setToolTip("The current kernel's weights as a matrix")
        self.from_identity = QPushButton("identity", objectName="matrixFromIdentity")
        self.from_identity.setToolTip("A 3×3 identity matrix (the image unchanged)")
        for widget in (start, self.from_current, self.from_identity):
            hint.addWidget(widget)
        hint.addStretch(1)
        self.from_current.clicked.connect(self._matrix_from_current)
        self.from_identity.clicked.connect(
            lambda: self.spec_edited.emit("matrix:3x3:0,0,0,0,1,0,0,0,0", "params")
        )
        self._kernel: Kernel | None = None

        self.form = QFormLayout()
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form.addRow("Family", self.family)
        self._rows: dict[str, QWidget] = {}  # attribute -> the widget of its form row
        for key, widget in self._params.items():
            row = self._with_slider(key, widget) if key in _SLIDERS else widget
            self._rows[key] = row
            self.form.addRow(labels[key], row)
        self.form.addRow("", self.matrix_hint)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.form)
        layout.addWidget(QLabel("Spec"))
        layout.addWidget(self.spec)
        layout.addWidget(self.error)

        self._typing = QTimer(self, singleShot=True, interval=TYPING_DEBOUNCE_MS)
        self._typing.timeout.connect(self._emit_typed)
        self.spec.textEdited.connect(self._text_edited)
        self.spec.returnPressed.connect(self._emit_typed_now)
        self.family.currentTextChanged.connect(self._family_changed)
        for widget in self._params.values():
            if isinstance(widget, QComboBox):
                widget.currentTextChanged.connect(self._params_changed)
            else:
                widget.valueChanged.connect(self._params_changed)
        self._show_rows("gaussian")

    def _with_slider(self, key: str, spin: QWidget) -> QWidget:
        """``spin`` and a slider in one row, each moving the other."""
        name, units, top = _SLIDERS[key]
        slider = QSlider(Qt.Orientation.Horizontal, objectName=name)
        lo = spin.minimum()  # type: ignore[attr-defined]
        hi = min(spin.maximum(), top)  # type: ignore[attr-defined]
        slider.setRange(round(lo * units), round(hi * units))
        slider.setSingleStep(1)
        slider.setPageStep(max(1, round(units)))
        slider.setToolTip(spin.toolTip())
        slider.setValue(round(spin.value() * units))  # type: ignore[attr-defined]
        setattr(self, f"{key}_slider", slider)

        def from_slider(value: int) -> None:
            target = value / units
            if round(spin.value() * units) != value:  # type: ignore[attr-defined]
                spin.setValue(target if units != 1 else int(target))  # type: ignore[attr-defined]

        def from_spin(value: float) -> None:
            slider.blockSignals(True)
            slider.setValue(round(value * units))
            slider.blockSignals(False)

        slider.valueChanged.connect(from_slider)
        spin.valueChanged.connect(from_spin)  # type: ignore[attr-defined]
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(spin)
        layout.addWidget(slider, 1)
        spin.setMaximumWidth(90)
        return row

    def _add_control(self, p: FamilyParam, look: _Look) -> None:
        """Create the widget(s) of ``p``, or widen the range of those another family made."""
        if look.attrs[0] in self._params:
            for attr in look.attrs:
                self._widen(self._params[attr], p, look.step)
            return
        for attr in look.attrs:
            widget = self._new_widget(p, look.step)
            widget.setToolTip(p.help)
            setattr(self, attr, widget)
            self._params[attr] = widget

    @staticmethod
    def _bounds(p: FamilyParam, step: float) -> tuple[float, float]:
        lo = -_UNBOUNDED if p.minimum is None else p.minimum + (step if p.exclusive_minimum else 0)
        hi = _UNBOUNDED if p.maximum is None else p.maximum
        return lo, hi

    def _new_widget(self, p: FamilyParam, step: float) -> QWidget:
        if p.kind == "choice":
            box = QComboBox()
            box.addItems(list(p.choices))
            box.setCurrentText(p.example or p.default or p.choices[0])
            return box
        lo, hi = self._bounds(p, step)
        start = p.example or p.default
        if p.kind == "integer":
            spin = QSpinBox(minimum=int(lo), maximum=int(hi))
            spin.setValue(int(start) if start else int(lo))
            if start is None and not p.required:
                spin.setSpecialValueText("auto")  # left out: core computes it (radius from σ)
            return spin
        box = QDoubleSpinBox(minimum=lo, maximum=hi, singleStep=step, decimals=2)
        box.setValue(float(start) if start else lo)
        # Emitting while typing "1" of "1.5" would run a filter per keystroke; wait for Enter/focus
        box.setKeyboardTracking(False)
        box.setStepType(QAbstractSpinBox.StepType.DefaultStepType)
        return box

    def _widen(self, widget: QWidget, p: FamilyParam, step: float) -> None:
        """One control for the same parameter of several families: the union of their ranges."""
        if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
            lo, hi = self._bounds(p, step)
            widget.setRange(min(widget.minimum(), lo), max(widget.maximum(), hi))

    # ---- widgets -> spec -----------------------------------------------------------------
    def build_spec(self) -> str:
        """The spec the family picker and its parameters describe (core writes the text)."""
        fam = self.family.currentText()
        if fam == "matrix":
            return fam
        values: dict[str, str | None] = {}
        for p, look in _shown(fam):
            text = self._read(look)
            values[p.name] = None if text == p.default else text
        return format_spec(fam, values)

    def _read(self, look: _Look) -> str | None:
        """The value a control shows, as spec text (``None``: left to core)."""
        widgets = [self._params[attr] for attr in look.attrs]
        texts = []
        for widget in widgets:
            if isinstance(widget, QComboBox):
                texts.append(widget.currentText())
            elif isinstance(widget, QSpinBox):
                if widget.specialValueText() and widget.value() == widget.minimum():
                    return None
                texts.append(str(widget.value()))
            else:
                texts.append(_fmt(widget.value()))  # type: ignore[attr-defined]
        if len(texts) == 2 and texts[0] == texts[1]:
            return texts[0]
        return "x".join(texts)

    def _show_rows(self, family: str) -> None:
        wanted = {attr for _p, look in _shown(family) for attr in look.attrs}
        for key, row in self._rows.items():
            self.form.setRowVisible(row, key in wanted)
        self.form.setRowVisible(self.matrix_hint, family == "matrix")

    def _family_changed(self, family: str) -> None:
        self._show_rows(family)
        if not self._syncing and family != "matrix":
            self.spec_edited.emit(self.build_spec(), "params")

    def _params_changed(self, *_args: object) -> None:
        if not self._syncing and self.family.currentText() != "matrix":
            self.spec_edited.emit(self.build_spec(), "params")

    def _matrix_from_current(self) -> None:
        """The current kernel's exact weights as a ``matrix:`` spec (the grid edits them)."""
        if self._kernel is not None:
            self.spec_edited.emit(matrix_spec(self._kernel.weights), "params")

    def _too_long(self, size: int) -> None:
        self.show_error(
            f"the spec pasted is {size:,} characters, more than the {MAX_SPEC_CHARS:,} the spec "
            "box holds: save the weights as a kernel JSON file and load it (@file.json)"
        )

    def _text_edited(self, text: str) -> None:
        """A keystroke in the spec field: valid text applies at once, as a slider step does (the
        preview's scheduler drops what a newer edit supersedes before it starts, so no debounce
        is needed); text that does not parse waits for the pause, then says why."""
        if len(text) <= LIVE_PARSE_CHARS:
            try:
                Kernel.parse(text)
            except BlurappError:
                pass
            else:
                self._typing.stop()
                self.spec_edited.emit(text, "typing")
                return
        self._typing.start()

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
        self._kernel = kernel
        self._syncing = True
        try:
            if set_text and self.spec.text() != kernel.spec:
                self.spec.setText(kernel.spec)
                self.spec.setCursorPosition(0)
            try:
                family, named = spec_params(kernel.spec)
            except KernelSpecError:  # not a family spec (a loaded file): its weights only
                family, named = "matrix", {}
            self.family.setCurrentText(family)
            self._show_rows(family)
            for p, look in _shown(family):
                self._write(p, look, named.get(p.name, p.default))
        finally:
            self._syncing = False

    def _write(self, p: FamilyParam, look: _Look, text: str | None) -> None:
        """Show ``text`` (spec text, ``None``: left out) in the control of ``p``.

        A value the control cannot show (an XxY pair in a single box) leaves it as it is.
        """
        attrs = look.attrs
        raw = (text or "").strip().lower()
        parts = [t.strip() for t in raw.replace("×", "x").split("x")] if p.pair else [raw]
        if len(attrs) == 2 and len(parts) == 1:
            parts *= 2
        if text is not None and len(parts) != len(attrs):
            return
        for attr, part in zip(attrs, parts, strict=True):
            widget = self._params[attr]
            if isinstance(widget, QComboBox):
                widget.setCurrentText(part)
                continue
            try:
                value = float(part) if text is not None else None
            except ValueError:
                continue
            if isinstance(widget, QSpinBox):
                widget.setValue(widget.minimum() if value is None else int(value))
            elif value is not None and isinstance(widget, QDoubleSpinBox):
                widget.setValue(value)

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
