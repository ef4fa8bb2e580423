"""Per-tenant limits through a real mount, with an unprivileged tenant against root.

The unprivileged user takes its whole quota of contexts and pinned memory; its next request
fails with the limit's errno and changes nothing, root (a second tenant, and the holder of
the reserved contexts) still opens and copies, and ``/proc/gdev/limits`` shows the use.
"""

from __future__ import annotations

import errno

import numpy as np
import pytest

import libgdev
from tests.daemon.conftest import run_as, stop_gdevd, unprivileged  # noqa: F401
from tests.hostile.tenants import Bystander, start_with

pytestmark = pytest.mark.mount
MiB = 1 << 20

TENANT = """
held, out = [], []
for _ in range(4):
    try:
        held.append(libgdev.gopen(0))
        out.append(0)
    except OSError as e:
        out.append(e.errno)
h = held[0]
h.gmalloc_dma(1 << 20)
try:
    h.gmalloc_dma(3 << 19)                                    # 2.5 MiB > pinned_per_session
    out.append(0)
except OSError as e:
    out.append(e.errno)
a = h.gmalloc(1 << 20)
h.gmemcpy_to_device(a, numpy.ones(1 << 20, numpy.uint8))   # pageable: staging still fits
print(out, flush=True)
print(open(os.environ["GDEV_MOUNT"] + "/proc/gdev/limits").read(), flush=True)
"""


@pytest.fixture(scope="module")
def daemon():
    d = start_with(memory="256M", contexts_max=8, contexts_reserved=2, contexts_per_user=3,
                   pinned_per_session=2 * MiB)
    try:
        yield d
    finally:
        stop_gdevd(d)


def test_unprivileged_tenant_hits_its_limits_and_root_does_not(daemon, unprivileged) -> None:  # noqa: F811
    bystander = Bystander(daemon.mount)
    r = run_as(unprivileged, TENANT, daemon.env())
    lines = r.stdout.splitlines()
    assert lines and lines[0] == str([0, 0, 0, errno.EBUSY, errno.ENOMEM]), r.stderr
    assert any(line.startswith(f"{unprivileged[0]} 3 ") for line in lines), r.stdout
    held = [libgdev.gopen(1, daemon.mount) for _ in range(3)]   # root: 1 + 3 + 3 <= 8
    try:
        data = np.arange(MiB, dtype=np.uint8)
        held[0].gmemcpy_to_device(held[0].gmalloc(MiB), data)
        bystander.check()
    finally:
        for h in held:
            h.gclose()
        bystander.close()
