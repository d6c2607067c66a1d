# Two commands set up a fresh machine: `make run` and `make test`.
# Each creates or updates .venv, installs llama-cpp-python from a wheel built once per
# machine with portable flags (scripts/llama-wheel.sh says why), then the project itself.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.hearth-installed
BUNDLE_STAMP := $(VENV)/.hearth-bundle-tools

.PHONY: run test bench bundle install-desktop clean

$(STAMP): pyproject.toml scripts/llama-wheel.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$$(scripts/llama-wheel.sh $(PY))"
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

run: $(STAMP)
	$(PY) -m app

# The whole suite, the bundle build and its offline self-test included, in two worker processes
# (each test file stays in one; the bundle is built once, beside them: tests/bundle_build.py).
test: $(STAMP)
	QT_QPA_PLATFORM=offscreen HEARTH_SLOW_TESTS=$${HEARTH_SLOW_TESTS:-1} $(PY) -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	$(PY) bench/run_all.py

$(BUNDLE_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[bundle]"
	touch $@

# dist/hearth/hearth: a one-folder bundle (build.spec says what is in it and why), with the
# default model copied into dist/hearth/models/, where a frozen Hearth looks for it.
bundle: $(BUNDLE_STAMP)
	$(PY) -m PyInstaller --noconfirm --log-level WARN build.spec
	mkdir -p dist/hearth/models
	model="$$($(PY) -c 'from app.library.default_model import ensure_default_model; print(ensure_default_model() or "")')" && \
	  { test -n "$$model" || { echo "make bundle: the default model is unavailable" >&2; exit 1; }; } && \
	  cp "$$model" dist/hearth/models/
	@du -sh --exclude=models dist/hearth && du -sh dist/hearth/models

# The application-menu entry and icon for the current user (XDG_DATA_HOME is respected);
# Exec is the bundle if built, else the venv's hearth.
install-desktop:
	scripts/install-desktop.sh

clean:
	rm -rf $(VENV) build dist
