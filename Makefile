# penstock: `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: demo test install gpu-test bench clean differential

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# The pinned test set, then core (compiles csrc/ into penstock._engine) and the three plugins.
$(STAMP): $(VENV)/bin/python requirements-ci.txt pyproject.toml setup.py $(shell find csrc -name '*.cpp' -o -name '*.h')
	$(PIP) install -q -r requirements-ci.txt
	$(PIP) install -q --no-build-isolation --no-deps -e .
	$(PIP) install -q --no-build-isolation --no-deps -e plugins/pytorch -e plugins/jax -e plugins/tensorflow
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests

# penstock against real NVIDIA DALI 2.4 (CPU only), case by case: needs `nvidia.dali` importable,
# installed in the venv ($(PIP) install nvidia-dali-cuda130==2.4.0) or in another site-packages of
# the same Python named by DALI_SITE. Prints how many cases ran and how many differ.
DALI_SITE ?=
differential: $(STAMP)
	PYTHONPATH=$(DALI_SITE) $(PY) -m pytest -q -p no:cacheprovider --tb=line tests/differential

gpu-test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m gpu tests

bench: $(STAMP)
	$(PY) bench/engine_overhead.py

clean:
	rm -rf build $(VENV) core/penstock/*.so core/*.egg-info plugins/*/*.egg-info
