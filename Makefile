# Set-up and everyday commands. `make run` and `make test` are all a new machine needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.blurapp-installed
SYSDEPS := $(VENV)/.system-deps-ok
OUT := out
# Mesa warns when it has no runtime directory; give it a private one.
export XDG_RUNTIME_DIR ?= /tmp/blurapp-runtime-$(shell id -u)

.PHONY: run test setup lint format screenshot wheel-check bench clean

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
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Build the wheel and run it from outside the source tree: a shader or asset that does not
# ship fails here, not on a user's machine.
wheel-check: $(STAMP) | $(XDG_RUNTIME_DIR)
	bash packaging/wheel-check.sh $(BIN)/python

# The real window under Xvfb: docs/screenshot.png (main window), docs/compare.png (borders).
screenshot: $(STAMP) | $(XDG_RUNTIME_DIR)
	xvfb-run -a -s "-screen 0 1600x1000x24" $(BIN)/python -m blurapp.ui.screenshot --out docs

bench: $(STAMP) | $(XDG_RUNTIME_DIR)
	$(BIN)/blurapp bench

clean:
	rm -rf $(VENV) build dist *.egg-info $(OUT) .pytest_cache .ruff_cache
