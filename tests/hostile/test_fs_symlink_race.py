"""D2: ecryptfs runs as root on a lower directory the tenant can also write to; no symlink the
tenant swaps in may carry a root operation outside the lower directory.

The attacker (an unprivileged user) owns ``lower/att``.  For every operation it opens its own
directory ``d`` and file ``d/f`` through the plaintext view, then replaces ``lower/att/d``
with a symlink to a root-owned directory and performs the operation through the descriptors
it holds (so the kernel's cached attributes say "yours" and the request reaches the daemon):
fchmod, fchown, futimens, ftruncate, create, mkdir, unlink, rmdir, rename, readdir.  A second
part flips ``d`` between directory and symlink in a thread while path operations run.  The
root-owned tree must come out unchanged and nothing of it may be listed.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.daemon.conftest import run_as
from tests.hostile.conftest import HostileFs, snapshot

pytestmark = pytest.mark.mount

ATTACK = r'''
VIEW, LOWER, VICTIM, UID, GID = {view!r}, {lower!r}, {victim!r}, {uid}, {gid}
out = {{}}

def put(path, data=b"mine\n"):
    with open(path, "wb") as f:
        f.write(data)

os.mkdir(VIEW + "/d")
for name in ("f", "f2", "f3"):
    put(VIEW + "/d/" + name)
os.mkdir(VIEW + "/d/sub")

def swap(target):
    os.rename(LOWER + "/d", LOWER + "/d.real")
    os.symlink(target, LOWER + "/d")

def restore():
    os.unlink(LOWER + "/d")
    os.rename(LOWER + "/d.real", LOWER + "/d")

def attempt(name, target, fn):
    dfd = os.open(VIEW + "/d", os.O_RDONLY | os.O_DIRECTORY)
    ffd = os.open(VIEW + "/d/f", os.O_RDWR)
    os.fstat(dfd)
    swap(target)
    try:
        r = fn(dfd, ffd)
        out[name] = "done" if r is None else r
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
    finally:
        restore()
        os.close(ffd)
        os.close(dfd)

ROOTONLY = VICTIM + "/rootonly"
attempt("fchmod", VICTIM, lambda d, f: os.fchmod(f, 0o666))
attempt("fchown", VICTIM, lambda d, f: os.fchown(f, UID, GID))
attempt("futimens", VICTIM, lambda d, f: os.utime(f, ns=(0, 0)))
attempt("ftruncate", VICTIM, lambda d, f: os.ftruncate(f, 0))
CREAT = os.O_CREAT | os.O_WRONLY
attempt("create", ROOTONLY, lambda d, f: os.close(os.open("new", CREAT, 0o666, dir_fd=d)))
attempt("mkdir", ROOTONLY, lambda d, f: os.mkdir("newdir", dir_fd=d))
attempt("unlink", VICTIM, lambda d, f: os.unlink("f2", dir_fd=d))
attempt("rmdir", VICTIM, lambda d, f: os.rmdir("sub", dir_fd=d))
attempt("rename", VICTIM, lambda d, f: os.rename("f3", "f3.moved", src_dir_fd=d, dst_dir_fd=d))
attempt("readdir", VICTIM, lambda d, f: "leaked" if "rootonly" in os.listdir(d) else "done")

# the race: a thread flips d between the real directory and a symlink to the victim
stop = time.monotonic() + 1.5
def flipper():
    while time.monotonic() < stop:
        swap(VICTIM)
        restore()
t = threading.Thread(target=flipper)
t.start()
race = {{}}
i = 0
while time.monotonic() < stop:
    i += 1
    for op, fn in (("chmod", lambda: os.chmod(VIEW + "/d/f", 0o666)),
                   ("chown", lambda: os.chown(VIEW + "/d/f", UID, GID)),
                   ("create", lambda: put(VIEW + "/d/c%d" % i)),
                   ("mkdir", lambda: os.mkdir(VIEW + "/d/m%d" % i)),
                   ("unlink", lambda: os.unlink(VIEW + "/d/f2")),
                   ("rename", lambda: os.rename(VIEW + "/d/f3", VIEW + "/d/f3x"))):
        try:
            fn()
            key = "ok"
        except OSError as e:
            key = errno.errorcode.get(e.errno, str(e.errno))
        race[op + ":" + key] = race.get(op + ":" + key, 0) + 1
t.join()
out["race"] = race
print(json.dumps(out))
'''


def test_symlink_swaps_change_nothing_outside_the_lower_dir(hfs: HostileFs) -> None:
    before = snapshot(hfs.victim)
    lower_att = os.path.join(hfs.lower, "att")
    code = ATTACK.format(view=os.path.join(hfs.view, "att"), lower=lower_att,
                         victim=hfs.victim, uid=hfs.user[0], gid=hfs.user[1])
    r = run_as(hfs.user, code, hfs.d.env(), timeout=120,
               preload="import json, threading\n")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    print(json.dumps(out, indent=1))  # the campaign's counts, shown with -s
    assert snapshot(hfs.victim) == before
    assert out["readdir"] != "leaked"
    for op in ("fchmod", "fchown", "futimens", "create", "mkdir", "unlink", "rmdir", "rename"):
        assert out[op] != "done", (op, out)
    # the race did reach the daemon: some operations went through on the real directory
    assert any(k.endswith(":ok") for k in out["race"]), out["race"]
    assert os.path.isdir(os.path.join(lower_att, "d")) and not os.path.islink(
        os.path.join(lower_att, "d"))
    assert hfs.d.proc.poll() is None
