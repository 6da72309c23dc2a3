# Set-up and everyday commands. `make run` and `make test` are all a new machine needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.blurapp-installed
DIST_STAMP := $(VENV)/.dist-tools-installed
SYSDEPS := $(VENV)/.system-deps-ok
OUT := out
# Mesa warns when it has no runtime directory; give it a private one.
export XDG_RUNTIME_DIR ?= /tmp/blurapp-runtime-$(shell id -u)

.PHONY: run test test-adapters setup lint format screenshot wheel wheel-check dist bundle-check bench clean

setup: $(STAMP)

$(SYSDEPS): packaging/system-deps.sh
	@PYTHON=$(PYTHON) bash packaging/system-deps.sh
	@mkdir -p $(VENV) && touch $@

$(STAMP): pyproject.toml $(SYSDEPS)
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $@

$(XDG_RUNTIME_DIR):
	@mkdir -p -m 700 $@

# Open the desktop application on the bundled sample; without a screen, filter the sample
# headlessly and say where the result is.
run: $(STAMP) | $(XDG_RUNTIME_DIR)
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  $(BIN)/blurapp; \
	else \
	  mkdir -p $(OUT); \
	  echo "no screen (DISPLAY is unset): filtering the bundled sample headlessly instead"; \
	  $(BIN)/blurapp apply assets/samples/astronaut.png -o $(OUT)/astronaut-blurred.png \
	    --kernel gaussian:sigma=3 --overwrite --timing && \
	  echo "wrote $(OUT)/astronaut-blurred.png"; \
	fi

test: $(STAMP) | $(XDG_RUNTIME_DIR)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

# The GPU, ndimage (scipy's own tests among them) and Dask tests again on every other adapter
# the machine lists (here llvmpipe through wgpu's OpenGL backend: another shader compiler;
# 3-6 minutes). CI runs it after `make test`.
test-adapters: $(STAMP) | $(XDG_RUNTIME_DIR)
	QT_QPA_PLATFORM=offscreen $(BIN)/python tests/other_adapters.py

# lint-imports: the layers of DESIGN.md, as contracts in pyproject.toml ([tool.importlinter]).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

$(DIST_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dist]'
	@touch $@

# The wheel in dist/. setuptools packs whatever build/lib holds, so an earlier build's leftovers
# (a file since moved or deleted) would ship: start from an empty build/lib.
wheel: $(STAMP)
	rm -rf build/lib build/bdist.* dist/blurapp-*.whl
	$(BIN)/python -m pip wheel -q --no-deps -w dist .

# The wheel and the one-folder bundle dist/blurapp/ (GUI and CLI in one executable);
# packaging/README.md says what is in it.
dist: wheel $(DIST_STAMP) | $(XDG_RUNTIME_DIR)
	$(BIN)/pyinstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller \
	  packaging/blurapp.spec

# The built bundle run from outside the source tree against the source tree's blurapp.
bundle-check: dist | $(XDG_RUNTIME_DIR)
	bash packaging/bundle-check.sh dist/blurapp $(BIN)/blurapp

# The wheel installed with its dependencies into a fresh venv and run from outside the source
# tree: a shader or asset that does not ship fails here, not on a user's machine.
wheel-check: wheel | $(XDG_RUNTIME_DIR)
	bash packaging/wheel-check.sh dist/blurapp-*-py3-none-any.whl $(BIN)/python

# The real window under Xvfb: docs/screenshot.png (main window), docs/compare.png (borders).
screenshot: $(STAMP) | $(XDG_RUNTIME_DIR)
	xvfb-run -a -s "-screen 0 1600x1000x24" $(BIN)/python -m blurapp.ui.screenshot --out docs

bench: $(STAMP) | $(XDG_RUNTIME_DIR)
	$(BIN)/blurapp bench

clean:
	rm -rf $(VENV) build dist *.egg-info $(OUT) .pytest_cache .ruff_cache
