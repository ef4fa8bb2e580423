"""Rodinia ports run with their benchmarks' host loops, against whole-algorithm references."""

import numpy as np
import pytest

from . import reference_rodinia as ref
from .harness import cdiv

BS = 16


@pytest.mark.parametrize("rows,cols,iterations,pyramid", [
    (16, 16, 1, 1), (20, 33, 5, 2), (64, 48, 7, 3), (37, 70, 4, 4),
])
def test_hotspot(dev, rng, rows, cols, iterations, pyramid):
    temp = (320 + 20 * rng.random((rows, cols))).astype(np.float32)
    power = (1e-3 * rng.random((rows, cols))).astype(np.float32)
    p = ref.hotspot_params(rows, cols)
    small = BS - 2 * pyramid
    grid = (cdiv(cols, small), cdiv(rows, small))
    bufs = [dev.upload(temp), dev.zeros(temp.nbytes)]
    ppower, src = dev.upload(power), 0
    for t in range(0, iterations, pyramid):
        args = [min(pyramid, iterations - t), ppower, bufs[src], bufs[1 - src], cols, rows,
                pyramid, pyramid, p["Cap"], p["Rx"], p["Ry"], p["Rz"], p["step"], 0.0]
        dev.launch("hotspot", "calculate_temp", grid, (BS, BS), args)
        src = 1 - src
    got = dev.download(bufs[src], np.float32, (rows, cols))
    np.testing.assert_allclose(got, ref.hotspot(temp, power, iterations, p), rtol=1e-5)


@pytest.mark.parametrize("n,grid", [(1, (1, 1)), (300, (2, 1)), (1000, (2, 2))])
def test_nn(dev, rng, n, grid):
    loc = np.stack([rng.uniform(-90, 90, n), rng.uniform(-180, 180, n)], 1).astype(np.float32)
    ploc, pdist = dev.upload(loc), dev.zeros(4 * n)
    dev.launch("nn", "euclid", grid, 256, [ploc, pdist, n, 30.5, -90.25])
    got = dev.download(pdist, np.float32, n)
    np.testing.assert_allclose(got, ref.nn_distances(loc, 30.5, -90.25), rtol=1e-5)


def _random_graph(rng, n, degree):
    counts = rng.integers(0, degree + 1, size=n).astype(np.int32)
    starting = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    edges = rng.integers(0, n, size=int(counts.sum()) or 1).astype(np.int32)
    return starting, counts, edges


@pytest.mark.parametrize("n,degree", [(1, 0), (100, 2), (1500, 3)])
def test_bfs(dev, rng, n, degree):
    starting, counts, edges = _random_graph(rng, n, degree)
    nodes = np.stack([starting, counts], 1)
    mask, visited = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    mask[0] = visited[0] = 1
    cost = np.full(n, -1, np.int32)
    cost[0] = 0
    pn, pe = dev.upload(nodes), dev.upload(edges)
    pm, pu, pv = dev.upload(mask), dev.zeros(n), dev.upload(visited)
    pc, pover = dev.upload(cost), dev.zeros(1)
    block = min(n, 512)
    for _ in range(n + 1):
        dev.write(pover, b"\0")
        dev.launch("bfs", "Kernel", cdiv(n, 512), block, [pn, pe, pm, pu, pv, pc, n])
        dev.launch("bfs", "Kernel2", cdiv(n, 512), block, [pm, pu, pv, pover, n])
        if dev.read(pover, 1) == b"\0":
            break
    got = dev.download(pc, np.int32, n)
    np.testing.assert_array_equal(got, ref.bfs_costs(starting, counts, edges, 0))


@pytest.mark.parametrize("rows,cols,iterations", [(16, 16, 1), (32, 48, 2), (64, 32, 3)])
def test_srad(dev, rng, rows, cols, iterations):
    image = np.exp(rng.random((rows, cols))).astype(np.float32)
    lam, roi = 0.5, (0, rows // 2, 0, cols // 2)
    pj, pc = dev.upload(image), dev.zeros(image.nbytes)
    dirs = [dev.zeros(image.nbytes) for _ in range(4)]  # E, W, N, S
    want = image.astype(np.float64)
    grid = (cols // BS, rows // BS)
    for _ in range(iterations):
        j = dev.download(pj, np.float32, (rows, cols))
        q0sqr = ref.srad_q0sqr(j, *roi)
        dev.launch("srad", "srad_cuda_1", grid, (BS, BS), [*dirs, pj, pc, cols, rows, q0sqr])
        dn, ds, dw, de, c = ref.srad_1(j, q0sqr)
        got_c = dev.download(pc, np.float32, (rows, cols))
        np.testing.assert_allclose(got_c, c, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(dev.download(dirs[2], np.float32, (rows, cols)), dn,
                                   rtol=1e-5, atol=1e-6)
        dev.launch("srad", "srad_cuda_2", grid, (BS, BS),
                   [*dirs, pj, pc, cols, rows, lam, q0sqr])
        want = ref.srad_2(j, c, dn, ds, dw, de, lam)
        np.testing.assert_allclose(dev.download(pj, np.float32, (rows, cols)), want,
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dim", [16, 32, 64])
def test_lud(dev, rng, dim):
    a = (rng.random((dim, dim)) + dim * np.eye(dim)).astype(np.float32)
    pm = dev.upload(a)
    i = 0
    for i in range(0, dim - BS, BS):
        dev.launch("lud", "lud_diagonal", 1, BS, [pm, dim, i])
        nb = (dim - i) // BS - 1
        dev.launch("lud", "lud_perimeter", nb, 2 * BS, [pm, dim, i])
        dev.launch("lud", "lud_internal", (nb, nb), (BS, BS), [pm, dim, i])
    if dim > BS:
        i += BS
    dev.launch("lud", "lud_diagonal", 1, BS, [pm, dim, i])
    got = dev.download(pm, np.float32, (dim, dim))
    np.testing.assert_allclose(got, ref.lud(a), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("length,penalty", [(16, 10), (48, 1), (64, 5)])
def test_nw(dev, rng, length, penalty):
    # nvcc addresses the tiles as [%r+imm] with a 32-bit %r that is "negative" before the
    # offset: the sum must wrap modulo 2^32
    cols = length + 1
    reference = rng.integers(-4, 12, size=(cols, cols)).astype(np.int32)
    matrix = np.zeros((cols, cols), np.int32)
    matrix[0, :] = -penalty * np.arange(cols)
    matrix[:, 0] = -penalty * np.arange(cols)
    pr, pm = dev.upload(reference), dev.upload(matrix)
    width = length // BS
    for i in range(1, width + 1):
        dev.launch("nw", "needle_cuda_shared_1", i, BS, [pr, pm, cols, penalty, i, width])
    for i in range(width - 1, 0, -1):
        dev.launch("nw", "needle_cuda_shared_2", i, BS, [pr, pm, cols, penalty, i, width])
    got = dev.download(pm, np.int32, (cols, cols))
    np.testing.assert_array_equal(got, ref.nw(reference, penalty))


@pytest.mark.parametrize("n_in", [16, 64, 160])
def test_backprop(dev, rng, n_in):
    hid = 16
    inp = rng.random(n_in + 1).astype(np.float32)
    w = rng.uniform(-1, 1, (n_in + 1, hid + 1)).astype(np.float32)
    pin, pw = dev.upload(inp), dev.upload(w)
    partial = dev.zeros(4 * hid * (n_in // 16))
    dev.launch("backprop", "bpnn_layerforward_CUDA", (1, n_in // 16), (16, 16),
               [pin, 0, pw, partial, n_in, hid])
    want_partial, want_w = ref.bpnn_layerforward(inp, w)
    got = dev.download(partial, np.float32, (n_in // 16, hid))
    np.testing.assert_allclose(got, want_partial, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dev.download(pw, np.float32, w.shape), want_w, rtol=1e-5,
                               atol=1e-6)

    delta = rng.uniform(-1, 1, hid + 1).astype(np.float32)
    oldw = rng.uniform(-0.1, 0.1, w.shape).astype(np.float32)
    pd, pw, po = dev.upload(delta), dev.upload(w), dev.upload(oldw)
    dev.launch("backprop", "bpnn_adjust_weights_cuda", (1, n_in // 16), (16, 16),
               [pd, hid, pin, n_in, pw, po])
    want_w, want_old = ref.bpnn_adjust_weights(delta, inp, w, oldw)
    np.testing.assert_allclose(dev.download(pw, np.float32, w.shape), want_w, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(dev.download(po, np.float32, w.shape), want_old, rtol=1e-5,
                               atol=1e-6)


def _reduce_sums(dev, ne, sums, sums2, threads=512):
    """srad_v1's host loop of reduction passes; returns (sum, sum of squares)."""
    no, mul, blocks = ne, 1, cdiv(ne, threads)
    while True:
        dev.launch("srad_v1", "reduce", blocks, threads, [ne, no, mul, sums, sums2])
        if blocks == 1:
            break
        no, mul, blocks = blocks, mul * threads, cdiv(blocks, threads)
    return dev.download(sums, np.float32, 1)[0], dev.download(sums2, np.float32, 1)[0]


@pytest.mark.parametrize("ne", [1, 511, 513, 5000, 262145])
def test_srad_v1_reduce_passes(dev, rng, ne):
    x = rng.random(ne).astype(np.float32)
    total, total2 = _reduce_sums(dev, ne, dev.upload(x), dev.upload(x * x))
    np.testing.assert_allclose([total, total2], [x.sum(dtype=np.float64),
                                                 (x.astype(np.float64) ** 2).sum()], rtol=1e-5)


@pytest.mark.parametrize("nr,nc,iterations", [(1, 700, 1), (17, 23, 2), (64, 40, 3)])
def test_srad_v1(dev, rng, nr, nc, iterations):
    image = rng.integers(1, 256, size=(nr, nc)).astype(np.float32)
    ne, lam, threads = nr * nc, 0.5, 512
    blocks = cdiv(ne, threads)
    pi = dev.upload(image.T.copy())  # column-major, as Rodinia stores it
    rows, cols = np.arange(nr, dtype=np.int32), np.arange(nc, dtype=np.int32)
    i_n, i_s = dev.upload(np.maximum(rows - 1, 0)), dev.upload(np.minimum(rows + 1, nr - 1))
    j_w, j_e = dev.upload(np.maximum(cols - 1, 0)), dev.upload(np.minimum(cols + 1, nc - 1))
    sums, sums2, pc = dev.zeros(4 * ne), dev.zeros(4 * ne), dev.zeros(4 * ne)
    d_n, d_s, d_e, d_w = (dev.zeros(4 * ne) for _ in range(4))
    dev.launch("srad_v1", "extract", blocks, threads, [ne, pi])
    want = np.exp(image.astype(np.float64) / 255)
    for _ in range(iterations):
        dev.launch("srad_v1", "prepare", blocks, threads, [ne, pi, sums, sums2])
        total, total2 = _reduce_sums(dev, ne, sums, sums2)
        mean = total / ne
        q0sqr = (total2 / ne - mean * mean) / (mean * mean)
        idx = [i_n, i_s, j_e, j_w, d_n, d_s, d_e, d_w]
        dev.launch("srad_v1", "srad", blocks, threads, [lam, nr, nc, ne, *idx, q0sqr, pc, pi])
        dev.launch("srad_v1", "srad2", blocks, threads, [lam, nr, nc, ne, *idx, pc, pi])
        want = ref.srad_2(want, *_srad_1_reordered(want, q0sqr), lam)
    dev.launch("srad_v1", "compress", blocks, threads, [ne, pi])
    got = dev.download(pi, np.float32, (nc, nr)).T
    assert np.isfinite(want).all()
    np.testing.assert_allclose(got, np.log(want) * 255, rtol=1e-4, atol=1e-3)


def _srad_1_reordered(j, q0sqr):
    dn, ds, dw, de, c = ref.srad_1(j, q0sqr)
    return c, dn, ds, dw, de
