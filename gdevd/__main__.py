"""``gdevd MOUNTPOINT [--foreground] [--gpus N] [--vgpus M] [--memory SIZE] [--config FILE]
[--module KIND:key=value,...]...``

Mounts the Gdev tree (``MOUNT/dev/gdevN``, ``MOUNT/proc/gdev``) and serves it until SIGINT or
SIGTERM, then unmounts.  Without ``--foreground`` it detaches once the mount is ready (the
parent exits 0 then, or with the child's error) and logs only to ``--log``.
Exit status 2: refused to start (bad arguments, missing or non-empty mount point, already a
mount); 1: failed while running.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import resource
import sys
import tomllib
from typing import Any

from gdevd.errors import GdevError

EXIT_REFUSED = 2
EXIT_FAILED = 1


class Refused(Exception):
    """A reason not to start, printed as ``gdevd: <reason>`` with exit status 2."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog="gdevd", description="Gdev: GPU resources as an OS service "
                                "(FUSE daemon serving /dev/gdevN and /proc/gdev).")
    p.add_argument("mountpoint", help="empty directory to mount the tree on")
    p.add_argument("-f", "--foreground", action="store_true", help="do not detach")
    p.add_argument("--gpus", type=int, help="physical GPUs (default 1)")
    p.add_argument("--vgpus", type=int, help="virtual GPUs per physical GPU (default 4)")
    p.add_argument("--memory", help="device memory per GPU, e.g. 1G, 512M (default 1G)")
    p.add_argument("--config", help="TOML file of GdevConfig fields (flags override it)")
    p.add_argument("--socket", help="ioctl socket path (default: a private dir in /tmp)")
    p.add_argument("--log", help="also log to this file")
    p.add_argument("--debug", action="store_true", help="log every session and error")
    p.add_argument("--module", action="append", default=[], metavar="KIND:key=value,...",
                   help="load an in-daemon module at start, e.g. "
                   "ecryptfs:lower=DIR,passphrase_file=FILE (see docs/modules.md)")
    return p.parse_args(argv)


def build_config(args: argparse.Namespace) -> Any:
    """GdevConfig from --config then the flags; Refused on anything invalid."""
    from gdevd.runtime import GdevConfig, parse_size

    fields: dict[str, Any] = {}
    if args.config:
        try:
            with open(args.config, "rb") as f:
                fields.update(tomllib.load(f))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise Refused(f"config {args.config}: {exc}") from None
    for name in ("gpus", "vgpus", "memory"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    known = {f.name for f in dataclasses.fields(GdevConfig)}
    if unknown := set(fields) - known:
        raise Refused(f"unknown configuration keys: {', '.join(sorted(unknown))}")
    try:
        for key in ("memory", "dma_memory"):
            if key in fields:
                fields[key] = parse_size(fields[key])
        return GdevConfig(**fields).validate()
    except GdevError as exc:
        raise Refused(str(exc)) from None


def check_mountpoint(path: str) -> str:
    """The absolute mount point; Refused if missing, not a directory, non-empty or mounted."""
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise Refused(f"mount point {path} does not exist")
    if not os.path.isdir(path):
        raise Refused(f"mount point {path} is not a directory")
    if os.path.ismount(path):
        raise Refused(f"{path} is already a mount point")
    if os.listdir(path):
        raise Refused(f"mount point {path} is not empty")
    return path


def check_privileges(fuse_conf: str = "/etc/fuse.conf") -> None:
    """Refused unless we may mount with allow_other (root, or user_allow_other set)."""
    if os.geteuid() == 0:
        return
    try:
        with open(fuse_conf) as f:
            if any(line.strip() == "user_allow_other" for line in f):
                return
    except OSError:
        pass
    raise Refused("mounting for all users (allow_other) needs root or 'user_allow_other' "
                  f"in {fuse_conf}")


def setup_logging(args: argparse.Namespace) -> None:
    """Logs to stderr, and to --log FILE."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if args.log:
        handlers.append(logging.FileHandler(args.log))
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO, handlers=handlers,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")


def _detach() -> tuple[int, bool]:
    """Fork; the parent waits for the child's "ready" byte.  Returns (pipe fd, is_child)."""
    r, w = os.pipe()
    if os.fork() == 0:
        os.close(r)
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # logs go to --log only from here on
            os.dup2(null, fd)
        os.close(null)
        return w, True
    os.close(w)
    if os.read(r, 1) != b"1":
        print("gdevd: the daemon failed to start (use --foreground or --log FILE to see why)",
              file=sys.stderr)
        os._exit(EXIT_FAILED)
    os._exit(0)


def run(args: argparse.Namespace) -> int:
    """Start the daemon as asked; return the exit status."""
    import trio

    from gdevd.daemon import DaemonConfig, serve
    from gdevd.modules import check_spec

    check_privileges()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a socket + memfds per session
    for spec in args.module:
        try:
            check_spec(spec, args.mountpoint)
        except GdevError as exc:
            raise Refused(f"module {spec.partition(':')[0]}: {exc}") from None
    cfg = DaemonConfig(check_mountpoint(args.mountpoint), build_config(args), args.socket,
                       tuple(args.module))
    pipe = -1
    if not args.foreground:
        pipe, _ = _detach()

    def ready() -> None:
        if pipe >= 0:
            os.write(pipe, b"1")
            os.close(pipe)

    trio.run(serve, cfg, ready)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point."""
    args = parse_args(argv)
    setup_logging(args)
    try:
        return run(args)
    except Refused as exc:
        print(f"gdevd: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 0
    except GdevError as exc:  # e.g. a --module that failed to load
        print(f"gdevd: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Exception:
        logging.getLogger("gdevd").exception("gdevd failed")
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
