# Two commands set up a fresh machine: `make run` and `make test`.
# Each creates or updates .venv, installs llama-cpp-python from a wheel built once per
# machine with portable flags (scripts/llama-wheel.sh says why), then the project itself.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.hearth-installed

.PHONY: run test bench bundle install-desktop clean

$(STAMP): pyproject.toml scripts/llama-wheel.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$$(scripts/llama-wheel.sh $(PY))"
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

run: $(STAMP)
	$(PY) -m app

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) build dist
