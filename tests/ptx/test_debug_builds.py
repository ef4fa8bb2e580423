"""The same kernels compiled with ``nvcc -G`` (no optimization, heavy local memory, debug
sections) give the same results as the -O3 builds."""

from __future__ import annotations

import pytest

from . import test_exec, test_nvcc_kernels
from .helpers import Device, load

EXEC_DEBUG = load("exec.debug")
BASIC_DEBUG = load("basic.debug")


@pytest.fixture
def dev():
    return Device()


@pytest.mark.parametrize("name", [
    "test_divergent_nested_loops_and_early_exit", "test_dynamic_shared_reduction",
    "test_generic_pointers_to_shared_local_global", "test_atomics_all_operations",
    "test_shuffles_votes_block_reductions", "test_globals_constants_struct_params",
    "test_assert_traps_and_printf_runs"])
def test_exec_kernels_debug_build(monkeypatch, dev, name):
    monkeypatch.setattr(test_exec, "MOD", EXEC_DEBUG)
    fn = getattr(test_exec, name)
    args = {"test_divergent_nested_loops_and_early_exit": (None,),
            "test_dynamic_shared_reduction": (64,),
            "test_generic_pointers_to_shared_local_global": (1,),
            "test_shuffles_votes_block_reductions": (16,)}.get(name, ())
    fn(dev, *args)


@pytest.mark.parametrize("name,args", [
    ("test_reduce_shared_memory", (77, 64)), ("test_histogram_atomics", (999, 3, 64)),
    ("test_device_function_call_divergent_loops", ()), ("test_local_memory_sort", ()),
    ("test_integer_mix", ()), ("test_warp_shuffle_and_ballot", (96,))])
def test_basic_kernels_debug_build(monkeypatch, dev, name, args):
    monkeypatch.setattr(test_nvcc_kernels, "MOD", BASIC_DEBUG)
    getattr(test_nvcc_kernels, name)(dev, *args)


@pytest.mark.parametrize("module,name,args", [
    ("test_suite_kernels", "test_matrix_mul_samples", ()),
    ("test_suite_kernels", "test_reduce6_warp_synchronous_tail", (4096, 3)),
    ("test_suite_kernels", "test_prescan_gems", (64,)),
    ("test_suite_kernels", "test_bitonic_sort", (256,)),
    ("test_suite_kernels", "test_black_scholes", ()),
    ("test_suite_kernels", "test_nbody_tiles", ()),
])
def test_suite_kernels_debug_build(monkeypatch, dev, module, name, args):
    from . import test_suite_kernels
    monkeypatch.setattr(test_suite_kernels, "MOD", load("suite.debug"))
    getattr(test_suite_kernels, name)(dev, *args)


@pytest.mark.parametrize("module,name", [
    ("test_mathlib", "test_float_math_library"), ("test_mathlib", "test_double_math_library"),
    ("test_calls", "test_function_pointers_struct_returns_many_args"),
    ("test_wmma", "test_wmma_gemm_16x16x16_f32_accumulate"),
    ("test_wmma", "test_wmma_32x8x16_shared_col_major_half_accumulator")])
def test_more_kernels_debug_build(monkeypatch, module, name):
    import importlib
    mod = importlib.import_module(f"tests.ptx.{module}")
    stem = {"test_mathlib": "mathlib", "test_calls": "calls", "test_wmma": "wmma"}[module]
    monkeypatch.setattr(mod, "MOD", load(f"{stem}.debug"))
    getattr(mod, name)()
