"""The compute engine's ISA: PTX as emitted by ``nvcc -ptx``, loaded and executed (SIMT).

``load_module(text)`` (``link_units(inputs)`` for several translation units) parses,
validates and pre-decodes a module once; ``Module.launch``
prepares a grid and ``Launch.run(budget)`` executes it, resumably.  See ``executor`` for
the scheduling model and ``memory`` for how addresses reach the MMU.
"""

from .errors import PtxError
from .executor import Launch, LaunchStats
from .module import DataLayout, GlobalInfo, KernelInfo, Module, ParamInfo, load_module
from .unitlink import link_units

__all__ = ["load_module", "link_units", "PtxError", "Module", "KernelInfo", "ParamInfo",
           "GlobalInfo", "DataLayout", "Launch", "LaunchStats"]
