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

.PHONY: run test build deps kernels lint typecheck bench bench-quick bench-deps figures clean \
        clib abi-header

run: build
	$(PY) scripts/run.py --mount $(MOUNT)

test: build
	$(PYTEST) -q $(PYTEST_ARGS)

build: $(VENV)/.deps-stamp clib
	$(PY) scripts/build_core.py

# The C client libraries (docs/clib.md): build/clib/libgdev.so; CLIB_CFLAGS adds flags
# (tests build an ASan/UBSan copy with CLIB_DIR=... CLIB_CFLAGS='-fsanitize=...').
CC         ?= cc
CLIB_DIR   ?= build/clib
CLIB_CFLAGS ?=
CLIB_SRC   := libgdev/csrc
CLIB_WARN  := -std=c11 -Wall -Wextra -Werror=implicit-function-declaration
CLIB_FLAGS := $(CLIB_WARN) -O2 -g -fPIC -fvisibility=hidden -pthread -I$(CLIB_SRC) $(CLIB_CFLAGS)
LIBGDEV_C  := $(addprefix $(CLIB_SRC)/,conn.c copy.c error.c gate.c handle.c module.c \
                moddata.c verbs.c vmm.c ipc.c)
CLIB_HDRS  := $(wildcard $(CLIB_SRC)/*.h)

CUDA_HOME  ?= /usr/local/cuda
CUDA_INC   := $(firstword $(wildcard $(CUDA_HOME)/include/cuda.h))
LIBCUDA_C  := $(wildcard $(CLIB_SRC)/cuda/*.c)

# libcuda.so.1 is compiled against NVIDIA's cuda.h (the prototypes and versioned names it
# must match); without the CUDA toolkit only libgdev.so is built.
ifneq ($(CUDA_INC),)
clib: $(CLIB_DIR)/libgdev.so $(CLIB_DIR)/libcuda.so.1 $(CLIB_DIR)/libcudart.so.13 \
      $(CLIB_DIR)/libcudart.so.12
else
clib: $(CLIB_DIR)/libgdev.so
	@echo "no $(CUDA_HOME)/include/cuda.h: libcuda.so.1 not built (set CUDA_HOME)"
endif

$(CLIB_DIR)/libcuda.so.1: $(LIBCUDA_C) $(LIBGDEV_C) $(CLIB_HDRS) $(wildcard $(CLIB_SRC)/cuda/*.h)
	@mkdir -p $(CLIB_DIR)
	$(CC) $(CLIB_FLAGS) -I$(CUDA_HOME)/include -shared -Wl,-soname,libcuda.so.1 \
	    -DGDEV_EXPORT= -o $@ $(LIBCUDA_C) $(LIBGDEV_C) -ldl
	ln -sf libcuda.so.1 $(CLIB_DIR)/libcuda.so

# libcudart.so.13: the soname (and symbol version) `nvcc -cudart shared` links to.
LIBCUDART_C := $(wildcard $(CLIB_SRC)/cudart/*.c)
$(CLIB_DIR)/libcudart.so.13: $(LIBCUDART_C) $(wildcard $(CLIB_SRC)/cudart/*.h) \
                             $(CLIB_SRC)/cudart/libcudart.map $(CLIB_DIR)/libcuda.so.1
	$(CC) $(CLIB_FLAGS) -I$(CUDA_HOME)/include -shared -Wl,-soname,libcudart.so.13 \
	    -Wl,--version-script=$(CLIB_SRC)/cudart/libcudart.map -o $@ $(LIBCUDART_C) \
	    -L$(CLIB_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'
	ln -sf libcudart.so.13 $(CLIB_DIR)/libcudart.so

# CUDA 12's soname and symbol version: the same runtime for programs built by nvcc 12.
$(CLIB_DIR)/libcudart.so.12: $(LIBCUDART_C) $(wildcard $(CLIB_SRC)/cudart/*.h) \
                             $(CLIB_SRC)/cudart/libcudart.map $(CLIB_DIR)/libcuda.so.1
	sed 's/libcudart.so.13/libcudart.so.12/' $(CLIB_SRC)/cudart/libcudart.map > $@.map
	$(CC) $(CLIB_FLAGS) -DRT_CUDA12_ABI -I$(CUDA_HOME)/include -shared -Wl,-soname,libcudart.so.12 \
	    -Wl,--version-script=$@.map -o $@ $(LIBCUDART_C) \
	    -L$(CLIB_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'

$(CLIB_DIR)/libgdev.so: $(LIBGDEV_C) $(CLIB_HDRS)
	@mkdir -p $(CLIB_DIR)
	$(CC) $(CLIB_FLAGS) -shared -Wl,-soname,libgdev.so -o $@ $(LIBGDEV_C)

abi-header:
	$(PY) scripts/gen_abi_header.py

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
	$(PY) -m pip install -q --upgrade pip 'setuptools>=77'  # cffi's build reads pyproject's SPDX license
	$(PY) -m pip install -q -e '.[test,dev]'
	@touch $@

kernels: $(KERNELS:.cu=.ptx)
kernels/%.ptx: kernels/%.cu
	$(NVCC) -ptx -arch=$(PTXARCH) -O3 -o $@ $<

lint: build
	$(PY) -m ruff check gdevd libgdev kcuda procfs scripts tests

typecheck: build
	$(PY) -m mypy gdevd libgdev kcuda procfs

# Every benchmark at full size; each rewrites its own section of docs/benchmarks.md because
# `make bench` passes --write-docs (about 15-20 min on 2 cores, ecryptfs.py ~10 of them).
# Without --write-docs a script only prints: `make bench-quick` runs each script's short
# mode in a few minutes (docs/benchmarks.md keeps the full numbers).
BENCH := $(PY) scripts/bench
bench-deps: build
	$(PY) -m pip install -q -e '.[bench]'  # matplotlib, for the scheduler's and ecryptfs plots

bench: bench-deps
	$(BENCH)/compute.py --write-docs
	$(BENCH)/kernels.py --write-docs
	$(BENCH)/memcpy_engine.py --write-docs
	$(BENCH)/memcpy.py --write-docs
	$(BENCH)/ioctl.py --write-docs
	$(BENCH)/cuda.py --write-docs
	$(BENCH)/dataflow.py --n 256,512,1024 --write-docs
	$(BENCH)/swap.py --write-docs
	$(BENCH)/vgpu.py --write-docs
	$(BENCH)/priority.py --write-docs
	$(BENCH)/ecryptfs.py --write-docs --plots docs/img
	$(BENCH)/control_latency.py --write-docs
	$(BENCH)/grid.py --write-docs
	$(BENCH)/clib.py --write-docs
	$(BENCH)/eaters.py --write-docs
	$(BENCH)/guests.py --write-docs
	$(BENCH)/streams.py --write-docs

bench-quick: bench-deps
	$(BENCH)/compute.py --quick
	$(BENCH)/kernels.py --quick --repeat 1
	$(BENCH)/memcpy_engine.py --size 32 --repeat 2 --addresses 1048576
	$(BENCH)/memcpy.py --size-mib 32 --reps 2 --skip-sweeps
	$(BENCH)/ioctl.py --size 32 --calls 500
	$(BENCH)/cuda.py --repeat 20
	$(BENCH)/dataflow.py --n 64
	$(BENCH)/swap.py --ks 2,8 --repeat 1
	$(BENCH)/vgpu.py --duration 6
	$(BENCH)/priority.py --duration 1 --reps 2000
	$(BENCH)/ecryptfs.py --max-size 256K --repeat 1 --fig10-size 64K --loop-n 2000 --competitors 1
	$(BENCH)/control_latency.py --calls 50 --rounds 1
	$(BENCH)/grid.py --quick
	$(BENCH)/clib.py --calls 300 --mib 32 --reps 2 --rounds 1
	$(BENCH)/eaters.py --iters 20000 --lat-iters 2000 --duration 1 --slices 10000
	$(BENCH)/guests.py --duration 2
	$(BENCH)/streams.py --iters 5000 --copy-mib 16

figures: bench

clean:
	rm -rf build *.egg-info gdevd/gpu/_core.c gdevd/gpu/_core*.so .pytest_cache .hypothesis

# What nvcc emits for our kernels and the survey corpus, and whether the engine loads it.
.PHONY: ptx-survey
ptx-survey: build kernels
	$(PY) scripts/ptx_survey.py --build-corpus --engine --markdown docs/ptx-coverage.md kernels/*.ptx
