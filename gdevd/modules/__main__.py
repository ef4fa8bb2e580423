"""``python -m gdevd.modules MOUNT list | load KIND:key=value,... | unload NAME``

insmod/rmmod/lsmod for gdevd: commands are written to ``MOUNT/proc/gdev/modules`` (root
only, by its mode), the listing is read from it.  Exit status 1 with the reason on failure.
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the exit status."""
    p = argparse.ArgumentParser(prog="python -m gdevd.modules", description=__doc__)
    p.add_argument("mount", help="the gdevd mount point")
    p.add_argument("command", choices=["list", "load", "unload"])
    p.add_argument("arg", nargs="?", help="the spec (load) or the module name (unload)")
    args = p.parse_args(argv)
    control = os.path.join(args.mount, "proc", "gdev", "modules")
    try:
        if args.command != "list":
            if not args.arg:
                p.error(f"{args.command} needs an argument")
            fd = os.open(control, os.O_WRONLY)
            try:
                os.write(fd, f"{args.command} {args.arg}\n".encode())
            finally:
                os.close(fd)
        with open(control) as f:
            listing = f.read()
    except OSError as exc:
        print(f"gdevd.modules: {args.command}: {exc.strerror}", file=sys.stderr)
        try:
            with open(control) as f:
                last = [ln for ln in f if ln.startswith("# last error")]
            print(*last, sep="", end="", file=sys.stderr)
        except OSError:
            pass
        return 1
    print(listing, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
