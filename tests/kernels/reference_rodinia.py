"""numpy references for the Rodinia ports (kernels/{hotspot,nn,bfs,srad,lud,nw,backprop}.cu).

Each models what the whole benchmark computes (the host loop included), written directly from
the algorithm rather than from the kernels' tiling, so tiling and edge bugs show up. Floats
are float64; the tests compare with a tolerance.
"""

from __future__ import annotations

from collections import deque

import numpy as np

# hotspot.cu constants, as in Rodinia's hotspot.cu host code
T_CHIP, CHIP_HEIGHT, CHIP_WIDTH = 0.0005, 0.016, 0.016
FACTOR_CHIP, SPEC_HEAT_SI, K_SI, MAX_PD, PRECISION = 0.5, 1.75e6, 100.0, 3.0e6, 0.001
AMB_TEMP = 80.0


def hotspot_params(rows: int, cols: int) -> dict[str, float]:
    """Cap, Rx, Ry, Rz and step for a rows x cols chip, as Rodinia's host computes them."""
    gh, gw = CHIP_HEIGHT / rows, CHIP_WIDTH / cols
    cap = FACTOR_CHIP * SPEC_HEAT_SI * T_CHIP * gw * gh
    rx = gw / (2.0 * K_SI * T_CHIP * gh)
    ry = gh / (2.0 * K_SI * T_CHIP * gw)
    rz = T_CHIP / (K_SI * gh * gw)
    max_slope = MAX_PD / (FACTOR_CHIP * T_CHIP * SPEC_HEAT_SI)
    f32 = np.float32
    return {"Cap": f32(cap), "Rx": f32(rx), "Ry": f32(ry), "Rz": f32(rz),
            "step": f32(PRECISION / max_slope)}


def hotspot(temp, power, iterations: int, p: dict[str, float]) -> np.ndarray:
    """Temperatures after ``iterations`` explicit steps; a missing neighbour at the chip's
    edge is the cell itself."""
    t = temp.astype(np.float64)
    pw = power.astype(np.float64)
    sdc = float(p["step"]) / float(p["Cap"])
    rx1, ry1, rz1 = 1 / float(p["Rx"]), 1 / float(p["Ry"]), 1 / float(p["Rz"])
    for _ in range(iterations):
        e = np.pad(t, 1, mode="edge")
        north, south = e[:-2, 1:-1], e[2:, 1:-1]
        west, east = e[1:-1, :-2], e[1:-1, 2:]
        t = t + sdc * (pw + (south + north - 2.0 * t) * ry1 + (east + west - 2.0 * t) * rx1
                       + (AMB_TEMP - t) * rz1)
    return t


def nn_distances(locations: np.ndarray, lat: float, lng: float) -> np.ndarray:
    """Euclidean distance of every (lat, lng) record to the target."""
    loc = locations.astype(np.float64)
    return np.sqrt((lat - loc[:, 0]) ** 2 + (lng - loc[:, 1]) ** 2)


def bfs_costs(starting: np.ndarray, counts: np.ndarray, edges: np.ndarray, source: int):
    """BFS levels from ``source`` over a CSR graph; -1 for unreachable nodes."""
    cost = np.full(len(starting), -1, dtype=np.int32)
    cost[source] = 0
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v in edges[starting[u]:starting[u] + counts[u]]:
            if cost[v] < 0:
                cost[v] = cost[u] + 1
                queue.append(v)
    return cost


def srad_q0sqr(j: np.ndarray, r1: int, r2: int, c1: int, c2: int) -> float:
    """Speckle scale q0^2 = var / mean^2 over rows r1..r2 and columns c1..c2 (inclusive)."""
    roi = j[r1:r2 + 1, c1:c2 + 1].astype(np.float64)
    mean = roi.mean()
    return float(((roi ** 2).mean() - mean * mean) / (mean * mean))


def _neighbours(a: np.ndarray):
    e = np.pad(a, 1, mode="edge")
    return e[:-2, 1:-1], e[2:, 1:-1], e[1:-1, :-2], e[1:-1, 2:]  # north, south, west, east


def srad_1(j: np.ndarray, q0sqr: float):
    """Derivatives (dN, dS, dW, dE) of J, edge-clamped, and the diffusion coefficient c in
    [0, 1] (SRAD equations 33 and 35)."""
    jc = j.astype(np.float64)
    dn, ds, dw, de = (x - jc for x in _neighbours(jc))
    g2 = (dn * dn + ds * ds + dw * dw + de * de) / (jc * jc)
    lap = (dn + ds + dw + de) / jc
    num = 0.5 * g2 - (1.0 / 16.0) * lap * lap
    den = 1 + 0.25 * lap
    qsqr = num / (den * den)
    den = (qsqr - q0sqr) / (q0sqr * (1 + q0sqr))
    c = np.clip(1.0 / (1.0 + den), 0.0, 1.0)
    return dn, ds, dw, de, c


def srad_2(j, c, dn, ds, dw, de, lam: float) -> np.ndarray:
    """Image update: J + lam/4 * (c*dN + c_south*dS + c*dW + c_east*dE), edge-clamped."""
    _, cs, _, ce = _neighbours(c)
    return j.astype(np.float64) + 0.25 * lam * (c * dn + cs * ds + c * dw + ce * de)


def lud(a: np.ndarray) -> np.ndarray:
    """In-place Doolittle LU without pivoting: unit-lower L below the diagonal, U above."""
    m = a.astype(np.float64).copy()
    for k in range(len(m)):
        m[k + 1:, k] /= m[k, k]
        m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k, k + 1:])
    return m


def nw(reference: np.ndarray, penalty: int) -> np.ndarray:
    """Needleman-Wunsch score matrix over a (n+1) x (n+1) substitution matrix ``reference``;
    row and column 0 start at -k * penalty."""
    n1 = reference.shape[0]
    f = np.zeros((n1, n1), dtype=np.int64)
    f[0, :] = -penalty * np.arange(n1)
    f[:, 0] = -penalty * np.arange(n1)
    for i in range(1, n1):
        for k in range(1, n1):
            f[i, k] = max(f[i - 1, k - 1] + reference[i, k], f[i, k - 1] - penalty,
                          f[i - 1, k] - penalty)
    return f.astype(np.int32)


def bpnn_layerforward(inp: np.ndarray, w: np.ndarray, hid: int = 16):
    """``bpnn_layerforward_CUDA``: (hidden_partial_sum as (in/16, hid), the weights afterwards,
    which hold each block's reduction tree: row 16*by+ty+1 keeps the tree node at ty)."""
    n_in = len(inp) - 1
    wm = (w[1:, 1:hid + 1].astype(np.float64) * inp[1:, None]).reshape(n_in // 16, 16, hid)
    for p in (2, 4, 8, 16):
        for ty in range(0, 16, p):
            wm[:, ty] += wm[:, ty + p // 2]
    w_after = w.astype(np.float64).copy()
    w_after[1:, 1:hid + 1] = wm.reshape(n_in, hid)
    return wm[:, 0, :], w_after


ETA, MOMENTUM = 0.3, 0.3


def bpnn_adjust_weights(delta, ly, w, oldw):
    """``bpnn_adjust_weights_cuda``: step = ETA*delta[j]*ly[r] + MOMENTUM*oldw[r][j]
    (ly taken as 1 for the bias row 0); w += step, oldw = step, for columns j >= 1."""
    w, oldw = w.astype(np.float64).copy(), oldw.astype(np.float64).copy()
    lyb = ly.astype(np.float64).copy()
    lyb[0] = 1.0
    step = ETA * delta[None, 1:].astype(np.float64) * lyb[:, None] + MOMENTUM * oldw[:, 1:]
    w[:, 1:] += step
    oldw[:, 1:] = step
    return w, oldw
