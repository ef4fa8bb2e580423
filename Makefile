# The developer's front door. `make run` and `make test` work on a fresh machine:
# they install the Debian packages and the Python dependencies they need.
VENV    ?= .venv
PY      := $(VENV)/bin/python
PYTEST  := $(PY) -m pytest
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
MOUNT   ?= mnt
NVCC    ?= nvcc
PTXARCH ?= compute_75
KERNELS := $(wildcard kernels/*.cu)

.PHONY: run test build deps kernels lint typecheck bench figures clean

run: build
	$(PY) scripts/run.py --mount $(MOUNT)

test: build
	$(PYTEST) -q $(PYTEST_ARGS)

build: $(VENV)/.deps-stamp
	$(PY) scripts/build_core.py

# Debian packages: libfuse3-dev and pkg-config to build pyfuse3, fuse3 for fusermount3.
deps: .deps-debian-stamp
.deps-debian-stamp:
	@if ! pkg-config --exists fuse3 2>/dev/null || ! command -v fusermount3 >/dev/null \
	    || ! command -v g++ >/dev/null; then \
	    echo "installing Debian packages: libfuse3-dev fuse3 pkg-config gcc g++"; \
	    $(SUDO) apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libfuse3-dev fuse3 pkg-config gcc g++; \
	fi
	@touch $@

$(VENV)/.deps-stamp: pyproject.toml setup.py .deps-debian-stamp
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,dev]'
	@touch $@

kernels: $(KERNELS:.cu=.ptx)
kernels/%.ptx: kernels/%.cu
	$(NVCC) -ptx -arch=$(PTXARCH) -O3 -o $@ $<

lint: build
	$(PY) -m ruff check gdevd libgdev kcuda procfs scripts tests

typecheck: build
	$(PY) -m mypy gdevd libgdev kcuda procfs

bench: build
	$(PY) scripts/bench/memcpy.py
	$(PY) scripts/bench/ioctl.py
	$(PY) scripts/bench/ecryptfs.py
	$(PY) scripts/bench/dataflow.py
	$(PY) scripts/bench/swap.py
	$(PY) -m pip install -q -e '.[bench]'  # matplotlib, for the scheduler's plots
	$(PY) scripts/bench/vgpu.py
	$(PY) scripts/bench/priority.py

figures: bench

clean:
	rm -rf build *.egg-info gdevd/gpu/_core.c gdevd/gpu/_core*.so .pytest_cache .hypothesis

# What nvcc emits for our kernels and the survey corpus, and whether the engine loads it.
.PHONY: ptx-survey
ptx-survey: build kernels
	$(PY) scripts/ptx_survey.py --build-corpus --engine --markdown docs/ptx-coverage.md kernels/*.ptx
