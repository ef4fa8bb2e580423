"""Thread block clusters (data/clusters.cu, built for sm_90): a launch here is a grid of
clusters of one block, so cooperative groups' cluster API sees each block alone in its
cluster (rank 0 of 1, the block's own threads), %clusterid is the block's index,
``cluster.sync()`` (barrier.cluster.arrive/wait) is the block's barrier, and a kernel that
requires larger clusters (``__cluster_dims__``) is refused at launch with the reason.
conftest runs each test on both engines."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.errors import GdevError

from .helpers import Device, load

BLOCKS, THREADS = 3, 64


@pytest.fixture(scope="module")
def mod():
    return load("clusters")


def test_each_block_is_a_cluster_of_one(mod, engine):
    if engine == "jit":
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("cluster_view") == "jit", mod.jit.compiled.rejected
    dev = Device()
    out = dev.alloc(4 * 10 * BLOCKS * THREADS)
    dev.launch(mod, "cluster_view", BLOCKS, THREADS, out)
    got = dev.get(out, 10 * BLOCKS * THREADS, np.uint32).reshape(BLOCKS, THREADS, 10)
    t = np.arange(THREADS)
    for b in range(BLOCKS):
        assert (got[b, :, :4] == [0, 1, 0, 1]).all()
        np.testing.assert_array_equal(got[b, :, 4], t)
        assert (got[b, :, 5] == THREADS).all()
        assert (got[b, :, 6] == 4 * THREADS).all()      # the block's shared memory
        assert (got[b, :, 7:9] == [b, BLOCKS]).all()
        np.testing.assert_array_equal(got[b, :, 9], b * THREADS + THREADS - 1 - t)


def test_a_kernel_needing_larger_clusters_is_refused(mod):
    dev = Device()
    with pytest.raises(GdevError, match="pairs needs clusters of 2 blocks"):
        dev.launch(mod, "pairs", 2, 32, dev.alloc(8))
