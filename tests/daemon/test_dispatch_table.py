"""Every ABI command has exactly one daemon handler and one client wrapper, and the client's
constants equal the runtime's (trio's test_exports idea)."""

from __future__ import annotations

import inspect

import libgdev
from gdevd import runtime
from gdevd.ioctl import dispatch
from libgdev import abi, constants
from libgdev.handle import COMMAND_WRAPPERS


def test_every_command_has_exactly_one_handler() -> None:
    assert set(dispatch.HANDLERS) == {c.number for c in abi.COMMANDS}
    assert len(set(dispatch.HANDLERS.values())) == len(abi.COMMANDS)


def test_every_command_has_one_client_wrapper_that_sends_it() -> None:
    assert set(COMMAND_WRAPPERS) == {c.name for c in abi.COMMANDS}
    assert len({id(f) for f in COMMAND_WRAPPERS.values()}) == len(abi.COMMANDS)
    sources = inspect.getsource(libgdev.handle) + inspect.getsource(libgdev.transfer)
    for name, fn in COMMAND_WRAPPERS.items():
        assert callable(fn)
        assert f'"{name}"' in sources, name


def test_module_level_verbs_match_handle_methods() -> None:
    for verb in libgdev.VERBS:
        assert getattr(libgdev, verb).__doc__ == getattr(libgdev.Handle, verb).__doc__


def test_client_constants_equal_the_runtimes() -> None:
    names = [n for n in dir(constants) if n.startswith("GDEV_")]
    assert names
    for n in names:
        assert getattr(constants, n) == getattr(runtime, n), n
