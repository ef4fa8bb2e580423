"""tests/programs/cuda/grids.cu on both engines: a 2D Jacobi step with a shared halo, a
3D 7-point stencil on a 3D grid of 3D blocks, a convolution whose filter is written into
``__constant__`` memory by the host, CSR SpMV (scalar, and one warp per row with
shuffles), and Rodinia-style BFS over frontier flags driven by a host loop.

The stencils and SpMV compute each output in a fixed order, so the numpy references
evaluate the same operations in the same order (with fma where nvcc contracts) and the
results must be exact; BFS costs are integers."""

from __future__ import annotations

import numpy as np
import pytest

from .runner import params, run_both

ALL = params("grids")


@pytest.mark.parametrize("variant", ALL)
def test_jacobi2d_shared_halo(variant):
    nx, ny = 45, 38
    a = np.random.default_rng(1).random((ny, nx), dtype=np.float32)

    def host(gpu, mod):
        pi, po = gpu.put(a), gpu.alloc(a.nbytes)
        gpu.run("jacobi2d", ((nx + 15) // 16, (ny + 15) // 16), (16, 16), pi, po, nx, ny)
        return {"out": gpu.get(po, nx * ny, np.float32).reshape(ny, nx)}
    ref, got = run_both(variant, host)
    want = a.copy()
    want[1:-1, 1:-1] = np.float32(0.25) * (((a[:-2, 1:-1] + a[2:, 1:-1]) + a[1:-1, :-2])
                                           + a[1:-1, 2:])
    assert np.array_equal(got["out"], want)


@pytest.mark.parametrize("variant", ALL)
def test_stencil3d_3d_grid(variant):
    nx, ny, nz = 13, 11, 9
    a = np.random.default_rng(2).standard_normal((nz, ny, nx))
    c0, c1 = 0.4, 0.1

    def host(gpu, mod):
        pi, po = gpu.put(a), gpu.put(np.zeros_like(a))
        gpu.run("stencil3d", ((nx + 7) // 8, (ny + 3) // 4, (nz + 1) // 2), (8, 4, 2), pi, po,
                nx, ny, nz, c0, c1)
        return {"out": gpu.get(po, a.size, np.float64).reshape(a.shape)}
    ref, got = run_both(variant, host)
    c = a[1:-1, 1:-1, 1:-1]
    s = a[1:-1, 1:-1, :-2] + a[1:-1, 1:-1, 2:]
    s = s + a[1:-1, :-2, 1:-1]
    s = s + a[1:-1, 2:, 1:-1]
    s = s + a[:-2, 1:-1, 1:-1]
    s = s + a[2:, 1:-1, 1:-1]
    inner = got["out"][1:-1, 1:-1, 1:-1]
    assert np.allclose(inner, c0 * c + c1 * s, rtol=1e-14, atol=1e-14)
    assert not got["out"][0].any() and not got["out"][:, :, -1].any()


@pytest.mark.parametrize("variant", ALL)
def test_convolution_constant_filter(variant):
    w, h = 40, 27
    img = np.random.default_rng(3).random((h, w), dtype=np.float32)
    filt = np.random.default_rng(4).random(25, dtype=np.float32)

    def host(gpu, mod):
        gpu.mmu.write(gpu.symbol("filter"), filt.tobytes())
        pi, po = gpu.put(img), gpu.alloc(img.nbytes)
        gpu.run("convolve2d", ((w + 15) // 16, (h + 7) // 8), (16, 8), pi, po, w, h)
        return {"out": gpu.get(po, w * h, np.float32).reshape(h, w)}
    ref, got = run_both(variant, host)
    pad = np.pad(img, 2, mode="edge").astype(np.float64)
    want = sum(float(filt[(dy + 2) * 5 + dx + 2]) * pad[2 + dy:2 + dy + h, 2 + dx:2 + dx + w]
               for dy in range(-2, 3) for dx in range(-2, 3))
    assert np.allclose(got["out"], want, rtol=25 * 2.0 ** -23, atol=0)


def _csr(rows: int, cols: int, seed: int):
    rng = np.random.default_rng(seed)
    deg = rng.integers(0, 70, rows)
    deg[::7] = 0
    rowptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int32)
    col = rng.integers(0, cols, rowptr[-1]).astype(np.int32)
    val = rng.standard_normal(rowptr[-1]).astype(np.float32)
    return rowptr, col, val


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("kernel,per_row", [("spmv_csr_scalar", 1), ("spmv_csr_vector", 32)])
def test_spmv_csr(variant, kernel, per_row):
    rows, cols = 90, 120
    rowptr, col, val = _csr(rows, cols, 5)
    x = np.random.default_rng(6).standard_normal(cols).astype(np.float32)

    def host(gpu, mod):
        args = [gpu.put(a) for a in (rowptr, col, val, x)]
        py = gpu.alloc(rows * 4)
        threads = rows * per_row
        gpu.run(kernel, ((threads + 127) // 128,), (128,), *args, py, rows)
        return {"y": gpu.get(py, rows, np.float32)}
    ref, got = run_both(variant, host)
    prod = val.astype(np.float64) * x[col]
    want = np.array([prod[rowptr[r]:rowptr[r + 1]].sum() for r in range(rows)])
    mag = np.array([np.abs(prod[rowptr[r]:rowptr[r + 1]]).sum() for r in range(rows)])
    assert np.all(np.abs(got["y"] - want) <= 70 * 2.0 ** -23 * mag)


def _bfs_ref(adj: list[list[int]], n: int) -> np.ndarray:
    cost = np.full(n, -1, np.int32)
    cost[0], frontier = 0, [0]
    while frontier:
        nxt = []
        for u in frontier:
            for v in adj[u]:
                if cost[v] < 0:
                    cost[v] = cost[u] + 1
                    nxt.append(v)
        frontier = nxt
    return cost


@pytest.mark.parametrize("variant", ALL)
def test_bfs_frontier_host_loop(variant):
    n = 700
    rng = np.random.default_rng(7)
    adj = [sorted(set(rng.integers(0, n, rng.integers(1, 5)).tolist())) for _ in range(n)]
    nodes = np.zeros((n, 2), np.int32)
    nodes[:, 1] = [len(a) for a in adj]
    nodes[1:, 0] = np.cumsum(nodes[:-1, 1])
    edges = np.array([v for a in adj for v in a], np.int32)
    start = np.zeros(n, np.uint8)
    start[0] = 1
    cost0 = np.full(n, -1, np.int32)
    cost0[0] = 0

    def host(gpu, mod):
        pn, pe = gpu.put(nodes), gpu.put(edges)
        pf, pu = gpu.put(start), gpu.put(np.zeros(n, np.uint8))
        pv, pc, po = gpu.put(start), gpu.put(cost0), gpu.alloc(4)
        grid, levels = ((n + 127) // 128,), 0
        while True:
            gpu.mmu.write(po, bytes(4))
            gpu.run("bfs_expand", grid, (128,), pn, pe, pf, pu, pv, pc, n)
            gpu.run("bfs_update", grid, (128,), pf, pu, pv, po, n)
            levels += 1
            if not gpu.get(po, 1, np.int32)[0]:
                break
        return {"cost": gpu.get(pc, n, np.int32), "levels": np.array([levels])}
    ref, got = run_both(variant, host)
    assert np.array_equal(got["cost"], _bfs_ref(adj, n))
