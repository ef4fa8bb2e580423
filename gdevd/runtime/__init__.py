"""The Gdev API in-process: async verbs owned by one trio loop.

``async with GdevSystem(GdevConfig(...)) as system:`` then ``h = await gopen(system, 0)``,
``va = await gmalloc(h, n)``, ... (Gdev's names, handle first, errors as GdevError).
"""

from libgdev.kernel import GdevKernel

from .api_copy import (
    gmemcpy,
    gmemcpy_async,
    gmemcpy_from_device,
    gmemcpy_from_device_async,
    gmemcpy_to_device,
    gmemcpy_to_device_async,
)
from .api_ctx import gdevice_count, gopen, gquery, gtune, query
from .api_exec import gbarrier, glaunch, gprintf_drain, gsync
from .api_ipc import (
    gipc_close,
    gipc_event_close,
    gipc_event_new,
    gipc_event_open,
    gipc_event_record,
    gipc_event_sync,
    gipc_event_wait,
    gipc_export,
    gipc_open,
)
from .api_mem import gfree, gfree_dma, gmalloc, gmalloc_dma, gref, gunref, gvirtget
from .api_module import gmodule_data, gmodule_launch, gmodule_load, gmodule_unload
from .api_shm import gshmat, gshmctl, gshmdt, gshmget
from .api_stream import gstream_create, gstream_destroy, gstream_sync, gstream_wait
from .api_tex import gtex_create, gtex_destroy
from .api_vmm import (
    gvm_create,
    gvm_free,
    gvm_get_access,
    gvm_map,
    gvm_release,
    gvm_reserve,
    gvm_retain,
    gvm_set_access,
    gvm_size,
    gvm_unmap,
)
from .api_vmmshare import gvm_export, gvm_import
from .api_vmmshare import import_token as vmm_import_token
from .config import GdevConfig, parse_size
from .constants import *  # noqa: F403  (Gdev's GDEV_* names)
from .handle import Handle
from .heap import glimit
from .limits import limits_text
from .mm import hostmem
from .mm.hostmem import HostRange
from .mm.memory import DmaBuffer
from .mm.shm import ShmidDs
from .sched.api import gget_guest, gget_priority, gset_guest, gset_priority
from .system import Credentials, GdevSystem, PhysicalGpu, VirtualGpu
from .teardown import gclose

__all__ = [
    "GdevConfig", "GdevSystem", "GdevKernel", "Handle", "DmaBuffer", "Credentials",
    "HostRange", "hostmem",
    "PhysicalGpu", "VirtualGpu", "parse_size", "limits_text",
    "gopen", "gclose", "gquery", "query", "gtune", "glimit", "gdevice_count", "gprintf_drain",
    "gmalloc", "gfree", "gmalloc_dma", "gfree_dma", "gref", "gunref", "gvirtget",
    "gmemcpy_to_device", "gmemcpy_to_device_async", "gmemcpy_from_device",
    "gmemcpy_from_device_async", "gmemcpy", "gmemcpy_async",
    "glaunch", "gsync", "gbarrier", "gshmget", "gshmat", "gshmdt", "gshmctl", "ShmidDs",
    "gset_priority", "gget_priority", "gmodule_load", "gmodule_unload", "gmodule_launch",
    "gmodule_data",
    "gset_guest", "gget_guest",
    "gstream_create", "gstream_destroy", "gstream_wait", "gstream_sync",
    "gtex_create", "gtex_destroy",
    "gvm_reserve", "gvm_free", "gvm_create", "gvm_release", "gvm_map", "gvm_unmap",
    "gvm_set_access", "gvm_get_access", "gvm_retain", "gvm_size", "gvm_export", "gvm_import",
    "vmm_import_token", "gipc_export", "gipc_open", "gipc_close", "gipc_event_new",
    "gipc_event_open", "gipc_event_record", "gipc_event_sync", "gipc_event_wait",
    "gipc_event_close",
]
