"""``gdevd MOUNTPOINT [--foreground] [--gpus N] [--vgpus M] [--memory SIZE] [--config FILE]
[--module KIND:key=value,...]... [--log FILE] [--log-level LEVEL] [--pidfile FILE] [--state FILE]``

Mounts the Gdev tree (``MOUNT/dev/gdevN``, ``MOUNT/proc/gdev``) and serves it until SIGINT or
SIGTERM, then unmounts.  Without ``--foreground`` it detaches once the mount is ready: the
parent prints ``gdevd: serving MOUNT (pid N)`` and exits 0 (or with the child's error), and
the daemon logs only to ``--log``.  The configuration file is :mod:`gdevd.settings`; flags
override it.  Exit status 2: refused to start (bad arguments or configuration, missing or
non-empty mount point, already a mount, a live pidfile); 1: failed while running.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import resource
import sys
import threading
from typing import Any

from gdevd import __version__, settings
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
    p.add_argument("--version", action="version", version=f"gdevd {__version__}")
    p.add_argument("-f", "--foreground", action="store_true", help="do not detach")
    p.add_argument("--gpus", type=int, help="physical GPUs (default 1)")
    p.add_argument("--vgpus", type=int, help="virtual GPUs per physical GPU (default 4)")
    p.add_argument("--memory", help="device memory per GPU, e.g. 1G, 512M (default 8G)")
    p.add_argument("--config", help="TOML file: machine, [daemon], [proc], [dev] "
                   "(docs/daemon.md; flags override it)")
    p.add_argument("--socket", help="ioctl socket path (default: a private dir in /tmp)")
    p.add_argument("--log", help="also log to this file")
    p.add_argument("--log-level", choices=settings.LOG_LEVELS,
                   help="debug, info (default), warning or error")
    p.add_argument("--debug", action="store_true", help="--log-level debug")
    p.add_argument("--pidfile", help="write the daemon's pid here (removed at exit)")
    p.add_argument("--state", help="keep chmod/chown of device files in this file across "
                                   "restarts (e.g. /var/lib/gdev/state.toml)")
    p.add_argument("--module", action="append", default=[], metavar="KIND:key=value,...",
                   help="load an in-daemon module at start, e.g. "
                   "ecryptfs:lower=DIR,passphrase_file=FILE (see docs/modules.md)")
    return p.parse_args(argv)


def load_settings(args: argparse.Namespace) -> settings.Settings:
    """The --config file (or an empty one) with the flags laid over it; Refused if invalid."""
    try:
        s = settings.load(args.config) if args.config else settings.Settings()
    except settings.ConfigError as exc:
        raise Refused(str(exc)) from None
    for name in ("gpus", "vgpus", "memory"):
        if getattr(args, name) is not None:
            s.system[name] = getattr(args, name)
    for name in ("log", "pidfile", "socket", "log_level", "state"):
        if getattr(args, name) is not None:
            s.daemon[name] = getattr(args, name)
    if args.debug:
        s.daemon["log_level"] = "debug"
    s.daemon["modules"] = [*s.daemon.get("modules", []), *args.module]
    if s.daemon.get("state"):
        try:
            s.kept = settings.load_state(s.daemon["state"])
        except settings.ConfigError as exc:
            raise Refused(str(exc)) from None
    return s


def build_config(s: settings.Settings) -> Any:
    """GdevConfig from the settings' machine fields; Refused on anything invalid."""
    from gdevd.runtime import GdevConfig, parse_size

    fields = dict(s.system)
    if unknown := set(fields) - settings.machine_fields():
        raise Refused(f"unknown configuration keys: {', '.join(sorted(unknown))} (tables: "
                      "[daemon], [proc], [dev])")
    try:
        for key in ("memory", "dma_memory", "pinned_per_session", "chunk_size"):
            if key in fields:
                fields[key] = parse_size(fields[key])
        config = GdevConfig(**fields).validate()
        settings.check_vgpus(s, config.gpus, config.vgpus)
        return config
    except GdevError as exc:
        raise Refused(str(exc)) from None
    except settings.ConfigError as exc:
        raise Refused(str(exc)) from None


def check_mountpoint(path: str) -> str:
    """The absolute mount point; Refused if missing, not a directory, non-empty, mounted, or
    a stale mount (named as such, with the command that clears it)."""
    path = os.path.abspath(path)
    try:
        os.stat(path)
    except FileNotFoundError:
        raise Refused(f"mount point {path} does not exist") from None
    except OSError as exc:
        raise _unusable(path, exc) from None
    if not os.path.isdir(path):
        raise Refused(f"mount point {path} is not a directory")
    if os.path.ismount(path):
        if (error := _ask_mount(path)) is not None:
            raise _unusable(path, error)
        raise Refused(f"{path} is already a mount point")
    if os.listdir(path):
        raise Refused(f"mount point {path} is not empty")
    return path


def _ask_mount(path: str, wait: float = 2.0) -> OSError | None:
    """The error of a statfs of the mount at ``path`` (which always reaches its file system,
    where a stat may be answered from the kernel's cache), or None when it answers or does
    not within ``wait`` seconds (a live but busy daemon: the thread is left to finish)."""
    box: list[OSError | None] = []

    def ask() -> None:
        try:
            os.statvfs(path)
            box.append(None)
        except OSError as exc:
            box.append(exc)
    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(wait)
    return box[0] if box else None


def _unusable(path: str, exc: OSError) -> Refused:
    """Why ``path`` cannot be used: a stale FUSE mount (ENOTCONN: its daemon died) is named
    with the command that clears it."""
    if exc.errno == errno.ENOTCONN:
        return Refused(f"{path} is a stale mount (its daemon died); clear it with: "
                       f"fusermount3 -u -z {path}")
    return Refused(f"mount point {path}: {exc.strerror}")


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


def setup_logging(daemon: dict[str, Any]) -> None:
    """Logs to stderr, and to the log file, at the configured level."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if daemon.get("log"):
        handlers.append(logging.FileHandler(daemon["log"]))
    level = getattr(logging, daemon.get("log_level", "info").upper())
    logging.basicConfig(level=level, handlers=handlers, force=True,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")


def claim_pidfile(path: str) -> None:
    """Refused if ``path`` names a live process; otherwise (absent or stale) it is ours."""
    try:
        with open(path) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    except PermissionError:
        pass
    raise Refused(f"pidfile {path}: gdevd already runs as pid {pid} (stop it, or remove the "
                  "file if that process is not gdevd)")


def write_pidfile(path: str) -> None:
    """Write this process's pid to ``path`` (atomically: a reader never sees half of it)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()}\n")
    os.replace(tmp, path)


def _detach(mount: str) -> tuple[int, bool]:
    """Fork; the parent waits for the child's "ready" byte, prints the child's pid and the
    mount, and exits.  Returns (pipe fd, is_child) in the child."""
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
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
    print(f"gdevd: serving {mount} (pid {child})", flush=True)
    os._exit(0)


def run(args: argparse.Namespace, s: settings.Settings) -> int:
    """Start the daemon as asked; return the exit status."""
    import trio

    from gdevd.daemon import DaemonConfig, serve
    from gdevd.modules import check_spec

    check_privileges()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a socket + memfds per session
    modules = tuple(s.daemon["modules"])
    for spec in modules:
        try:
            check_spec(spec, args.mountpoint)
        except GdevError as exc:
            raise Refused(f"module {spec.partition(':')[0]}: {exc}") from None
    cfg = DaemonConfig(check_mountpoint(args.mountpoint), build_config(s),
                       s.daemon.get("socket"), modules, s)
    pidfile = s.daemon.get("pidfile")
    if pidfile:
        claim_pidfile(pidfile)
    pipe = -1
    if not args.foreground:
        pipe, _ = _detach(cfg.mountpoint)

    def ready() -> None:
        if pipe >= 0:
            os.write(pipe, b"1")
            os.close(pipe)

    if pidfile:
        write_pidfile(pidfile)
    try:
        trio.run(serve, cfg, ready)
    finally:
        if pidfile:
            _remove_pidfile(pidfile)
    return 0


def _remove_pidfile(path: str) -> None:
    try:
        with open(path) as f:
            if f.read().strip() != str(os.getpid()):
                return  # not ours any more
        os.unlink(path)
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point."""
    args = parse_args(argv)
    try:
        s = load_settings(args)
        setup_logging(s.daemon)
        return run(args, s)
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
