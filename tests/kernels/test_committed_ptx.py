"""The committed PTX matches its CUDA source: same kernels, same parameter layouts."""

import re

import pytest

from gdevd.gpu.ptx import load_module

from .cpu_backend import kernel_signatures, load_cpu_module
from .harness import KERNELS

SOURCES = sorted(p.stem for p in KERNELS.glob("*.cu"))


def test_every_source_has_its_ptx():
    assert SOURCES, "no kernels found"
    assert SOURCES == sorted(p.stem for p in KERNELS.glob("*.ptx"))


@pytest.mark.parametrize("stem", SOURCES)
def test_ptx_kernels_and_parameter_layouts_match_the_source(stem):
    source = (KERNELS / f"{stem}.cu").read_text()
    ptx = (KERNELS / f"{stem}.ptx").read_text()
    sigs = kernel_signatures(source)
    assert set(sigs) == set(re.findall(r"\.entry\s+(\w+)\s*\(", ptx))
    mod = load_module(ptx, stem)
    cpu = load_cpu_module(KERNELS / f"{stem}.cu")
    for name in sigs:
        engine_layout = [(p.offset, p.size) for p in mod.kernels[name].params]
        assert engine_layout == cpu.layout(name), name
