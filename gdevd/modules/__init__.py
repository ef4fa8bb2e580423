"""In-daemon modules (Gdev's kernel modules that use the GPU through ``kcuda``).

:mod:`gdevd.modules.registry` loads, lists and unloads them; each module lives in its own
package (:mod:`gdevd.modules.ecryptfs`) and calls the GPU only through ``kcuda``'s exported
names.  ``python -m gdevd.modules MOUNT list|load SPEC|unload NAME`` is the insmod/rmmod.
"""

from gdevd.modules.registry import KINDS, ModuleRegistry, check_spec, make_module, parse_spec

__all__ = ["KINDS", "ModuleRegistry", "check_spec", "make_module", "parse_spec"]
