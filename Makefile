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

.PHONY: run test build deps kernels lint typecheck bench bench-quick bench-deps figures clean

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

# Every benchmark at full size; each rewrites its own section of docs/benchmarks.md (about
# 15-20 min on 2 cores, ecryptfs.py ~10 of them). `make bench-quick` runs each script's
# short mode in a few minutes and only prints (docs/benchmarks.md keeps the full numbers).
BENCH := $(PY) scripts/bench
bench-deps: build
	$(PY) -m pip install -q -e '.[bench]'  # matplotlib, for the scheduler's and ecryptfs plots

bench: bench-deps
	$(BENCH)/compute.py
	$(BENCH)/kernels.py
	$(BENCH)/memcpy_engine.py
	$(BENCH)/memcpy.py
	$(BENCH)/ioctl.py
	$(BENCH)/cuda.py
	$(BENCH)/dataflow.py --n 256,512
	$(BENCH)/swap.py
	$(BENCH)/vgpu.py
	$(BENCH)/priority.py
	$(BENCH)/ecryptfs.py --docs --plots docs/img
	$(BENCH)/grid.py --write

bench-quick: bench-deps
	$(BENCH)/compute.py --quick --no-write
	$(BENCH)/kernels.py --quick --repeat 1 --no-write
	$(BENCH)/memcpy_engine.py --size 32 --repeat 2 --addresses 1048576 --no-write
	$(BENCH)/memcpy.py --size-mib 32 --reps 2 --skip-sweeps --no-write
	$(BENCH)/ioctl.py --size 32 --calls 500 --no-write
	$(BENCH)/cuda.py --repeat 20 --no-write
	$(BENCH)/dataflow.py --n 64 --no-write
	$(BENCH)/swap.py --ks 2,8 --repeat 1 --no-write
	$(BENCH)/vgpu.py --duration 6 --no-write
	$(BENCH)/priority.py --duration 1 --reps 2000 --no-write
	$(BENCH)/ecryptfs.py --max-size 256K --repeat 1 --fig10-size 64K --loop-n 2000 --competitors 1
	$(BENCH)/grid.py --quick

figures: bench

clean:
	rm -rf build *.egg-info gdevd/gpu/_core.c gdevd/gpu/_core*.so .pytest_cache .hypothesis

# What nvcc emits for our kernels and the survey corpus, and whether the engine loads it.
.PHONY: ptx-survey
ptx-survey: build kernels
	$(PY) scripts/ptx_survey.py --build-corpus --engine --markdown docs/ptx-coverage.md kernels/*.ptx
