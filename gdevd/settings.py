"""gdevd's configuration file (TOML), checked whole before anything starts.

::

    gpus = 1                 # top-level keys: the machine and the runtime's initial tunables
    vgpus = 4                #   (every field of gdevd.runtime.GdevConfig)
    memory = "1G"

    [daemon]
    log_level = "info"       # debug, info, warning, error
    log = "/var/log/gdevd.log"
    pidfile = "/run/gdevd.pid"
    socket = "/run/gdevd.sock"
    state = "/var/lib/gdev/state.toml"   # chmod/chown of device files kept here
    modules = ["ecryptfs:lower=/srv/lower,passphrase_file=/etc/gdev/pass"]

    [proc]                   # any writable /proc/gdev entry, applied before the mount serves
    scheduler = "credit"
    band_wait_us = 250
    [proc.vd0]               # a vGPU's entries
    compute_bandwidth = 40

    [dev.gdev0]              # device-file mode and owner (chmod/chown that survive a restart)
    mode = 0o660
    owner = "root"
    group = "video"

Every value goes through the same parser and validator as a write to ``/proc/gdev`` (so the
file accepts exactly what ``echo`` would); bandwidth shares are checked as a whole (each
GPU's vGPUs total at most 100 %), and applied decreases first so that no step exceeds it.
Anything wrong raises :class:`ConfigError` naming the key, and nothing starts.
"""

from __future__ import annotations

import dataclasses
import grp
import pwd
import tomllib
from dataclasses import dataclass, field
from typing import Any

from gdevd.errors import GdevError
from procfs import GLOBAL, PER_VGPU, write_entry
from procfs.entry import Entry

LOG_LEVELS = ("debug", "info", "warning", "error")
DAEMON_KEYS = {"log_level": str, "log": str, "pidfile": str, "socket": str, "modules": list,
               "state": str}
SHARES = ("compute_bandwidth", "memory_bandwidth")
_GLOBAL = {e.name: e for e in GLOBAL if e.writable}
_PER_VGPU = {e.name: e for e in PER_VGPU if e.writable}


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key and why."""


@dataclass(frozen=True)
class DeviceAccess:
    """Mode and owner of one device file (None: leave the default)."""

    mode: int | None = None
    uid: int | None = None
    gid: int | None = None


@dataclass
class Settings:
    """The file's content, checked: the machine, the daemon's options, /proc writes, devices."""

    system: dict[str, Any] = field(default_factory=dict)  # GdevConfig fields
    daemon: dict[str, Any] = field(default_factory=dict)  # DAEMON_KEYS
    proc: list[tuple[str, int | None, bytes]] = field(default_factory=list)  # (name, vd, value)
    devices: dict[int, DeviceAccess] = field(default_factory=dict)
    kept: dict[int, DeviceAccess] = field(default_factory=dict)  # the state file's [dev]


def load(path: str) -> Settings:
    """Read and check ``path`` (the machine's fields are checked by :func:`check_machine`)."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config {path}: {exc}") from None
    s = Settings()
    s.daemon = _daemon(doc.pop("daemon", {}))
    s.proc = _proc(doc.pop("proc", {}))
    s.devices = {minor: _device(f"dev.gdev{minor}", spec)
                 for minor, spec in _vgpu_keys(doc.pop("dev", {}), "dev", "gdev").items()}
    s.system = doc
    return s


def load_state(path: str) -> dict[int, DeviceAccess]:
    """The device files' modes and owners kept in the state file (``gdevd.fuse.devstate``);
    {} if there is none yet.  ConfigError naming the file if it cannot be used."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"state file {path}: {exc} (fix it, or remove it to start from "
                          "the config's [dev] tables)") from None
    if set(doc) - {"dev"}:
        raise ConfigError(f"state file {path}: only [dev.gdevN] tables belong there")
    return {minor: _device(f"{path}: dev.gdev{minor}", spec)
            for minor, spec in _vgpu_keys(doc.get("dev", {}), "dev", "gdev").items()}


def _daemon(table: Any) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigError("[daemon] must be a table")
    for key, value in table.items():
        if key not in DAEMON_KEYS:
            raise ConfigError(f"daemon.{key}: unknown key; one of {', '.join(DAEMON_KEYS)}")
        if not isinstance(value, DAEMON_KEYS[key]):
            raise ConfigError(f"daemon.{key}: want a {DAEMON_KEYS[key].__name__}: {value!r}")
    if table.get("log_level", "info") not in LOG_LEVELS:
        raise ConfigError(f"daemon.log_level: {table['log_level']!r} not one of "
                          f"{', '.join(LOG_LEVELS)}")
    if not all(isinstance(m, str) for m in table.get("modules", [])):
        raise ConfigError("daemon.modules: want a list of 'KIND:key=value,...' strings")
    return dict(table)


def _vgpu_keys(table: Any, section: str, prefix: str) -> dict[int, Any]:
    """``{"gdev0": ...}`` -> ``{0: ...}``; ConfigError for any other key."""
    if not isinstance(table, dict):
        raise ConfigError(f"[{section}] must be a table")
    out = {}
    for key, value in table.items():
        number = key.removeprefix(prefix)
        if not key.startswith(prefix) or not number.isdigit() or not isinstance(value, dict):
            raise ConfigError(f"{section}.{key}: want a table named {prefix}N")
        out[int(number)] = value
    return out


def _proc(table: Any) -> list[tuple[str, int | None, bytes]]:
    vds = {k: v for k, v in table.items() if isinstance(v, dict)} if isinstance(table, dict) \
        else {}
    writes = [_proc_value(name, None, value, _GLOBAL)
              for name, value in _plain(table).items()]
    for minor, entries in _vgpu_keys(vds, "proc", "vd").items():
        writes += [_proc_value(name, minor, value, _PER_VGPU) for name, value in entries.items()]
    return writes


def _plain(table: Any) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigError("[proc] must be a table")
    return {k: v for k, v in table.items() if not isinstance(v, dict)}


def _proc_value(name: str, minor: int | None, value: Any,
                entries: dict[str, Entry]) -> tuple[str, int | None, bytes]:
    where = f"proc.{name}" if minor is None else f"proc.vd{minor}.{name}"
    if name not in entries:
        raise ConfigError(f"{where}: not a writable /proc/gdev entry; one of "
                          f"{', '.join(sorted(entries))}")
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{where}: want an integer or a word: {value!r}")
    data = str(value).encode()
    try:
        entries[name].validate(entries[name].parse(data))
    except GdevError as exc:
        raise ConfigError(f"{where}: {exc.detail.removeprefix(name + ': ')}") from None
    return name, minor, data


def _device(where: str, spec: dict[str, Any]) -> DeviceAccess:
    if unknown := set(spec) - {"mode", "owner", "group"}:
        raise ConfigError(f"{where}: unknown keys {', '.join(sorted(unknown))} (mode, owner, "
                          "group)")
    mode = spec.get("mode")
    if mode is not None and (isinstance(mode, bool) or not isinstance(mode, int)
                             or not 0 <= mode <= 0o777):
        raise ConfigError(f"{where}.mode: want permission bits such as 0o660: {mode!r}")
    return DeviceAccess(mode, _id(where, "owner", spec.get("owner"), pwd.getpwnam),
                        _id(where, "group", spec.get("group"), grp.getgrnam))


def _id(where: str, key: str, value: Any, by_name: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and
                         0 <= value < 1 << 32):
        return value
    try:
        return int(by_name(value)[2])
    except (KeyError, TypeError):
        raise ConfigError(f"{where}.{key}: no such {'user' if key == 'owner' else 'group'}: "
                          f"{value!r}") from None


def check_vgpus(s: Settings, gpus: int, vgpus: int) -> None:
    """The vGPUs named exist, and each GPU's bandwidth shares total at most 100 %."""
    total = gpus * vgpus
    named = {m for _, m, _ in s.proc if m is not None} | set(s.devices)
    if missing := sorted(m for m in named if m >= total):
        raise ConfigError(f"vd{missing[0]}/gdev{missing[0]}: there are {total} vGPUs "
                          f"(0-{total - 1})")
    for attr in SHARES:
        shares = [100 // vgpus] * total
        for name, minor, data in s.proc:
            if name == attr and minor is not None:
                shares[minor] = int(data)
        for g in range(gpus):
            if (sum_ := sum(shares[g * vgpus:(g + 1) * vgpus])) > 100:
                raise ConfigError(f"proc.vdN.{attr}: gpu{g}'s vGPUs would total {sum_}% "
                                  "(> 100%)")


def apply_proc(s: Settings, system: Any) -> None:
    """Write every [proc] value through procfs; share decreases before increases."""
    def change(item: tuple[str, int | None, bytes]) -> int:
        name, minor, data = item
        if minor is None or name not in SHARES:
            return 0
        return int(data) - getattr(system.virtual[minor], name)
    for name, minor, data in sorted(s.proc, key=change):
        if minor is None:
            write_entry(_GLOBAL[name], system, 0, data)
        else:
            write_entry(_PER_VGPU[name], system.virtual[minor], 0, data)


def machine_fields() -> set[str]:
    """The top-level keys the file may hold (GdevConfig's fields)."""
    from gdevd.runtime import GdevConfig

    return {f.name for f in dataclasses.fields(GdevConfig)}
