"""Warp collectives whose member masks differ between the lanes of one warp (data/
warp_groups.cu): each lane gets the result of its own group, the lanes of its member mask
that execute the instruction, as on a GPU.  The groups are labeled_partition's (one mask per
label, from match.any); redux, vote (ballot, all, any, uni) and match.all are checked
against a per-lane model, on both engines (conftest), with lanes that do not take part."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import Device, load

N = 64     # two warps


@pytest.fixture(scope="module")
def mod():
    return load("warp_groups")


def _model(key, val):
    """Per lane (None where it does not take part): max, sum, ballot, flags, match.all."""
    out = []
    for t in range(N):
        if key[t] < 0:
            out.append(None)
            continue
        w0 = t - t % 32
        grp = [j for j in range(w0, w0 + 32) if key[j] == key[t]]
        v = [int(val[j]) for j in grp]
        mask = sum(1 << (j - w0) for j in grp)
        odd = sum(1 << (j - w0) for j in grp if val[j] & 1)
        uni = odd in (0, mask)
        same = len({x >> 8 for x in v}) == 1
        flags = all(x > 0 for x in v) | any(x > 900 for x in v) << 1 | uni << 2 | same << 3
        out.append((max(v), sum(v) % 2**32, odd, flags, mask if same else 0))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_lane_gets_its_groups_result(mod, engine, seed):
    if engine == "jit":
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("groups") == "jit", mod.jit.compiled.rejected
    rng = np.random.default_rng(seed)
    key = rng.integers(-1, 4, N).astype(np.int32)       # -1: the lane returns at once
    val = rng.integers(-50, 1000, N).astype(np.int32)
    val[key == 2] = 256 + (val[key == 2] & 1)           # one label whose values agree >> 8
    dev = Device()
    outs = [dev.alloc(4 * N) for _ in range(6)]
    dev.launch(mod, "groups", 1, N, dev.put(key), dev.put(val), *outs)
    mx, sm, bal, flags, allm, cgm = (dev.get(o, N, np.uint32) for o in outs)
    for t, want in enumerate(_model(key, val)):
        if want is None:
            continue
        got = (int(mx[t].view(np.int32)), int(sm[t]), int(bal[t]), int(flags[t]), int(allm[t]))
        assert got == want, (t, key[t])
        assert int(cgm[t].view(np.int32)) == want[0], t
