"""Every ABI command has exactly one daemon handler and one client wrapper (trio's
test_exports idea)."""

from __future__ import annotations

import inspect
import typing

import libgdev
import libgdev.loader
import libgdev.vmm
from gdevd.ioctl import dispatch
from libgdev import abi
from libgdev.handle import COMMAND_WRAPPERS


def test_every_command_has_exactly_one_handler() -> None:
    assert set(dispatch.HANDLERS) == {c.number for c in abi.COMMANDS}
    assert len(set(dispatch.HANDLERS.values())) == len(abi.COMMANDS)


def test_inline_handlers_are_plain_functions_and_the_rest_coroutines() -> None:
    for number, fn in dispatch.HANDLERS.items():
        assert inspect.iscoroutinefunction(fn) == (number not in dispatch.INLINE), fn
    assert {abi.BY_NUMBER[n].name for n in dispatch.INLINE} >= {"GQUERY", "GET_VERSION"}


def test_every_command_has_one_client_wrapper_that_sends_it() -> None:
    assert set(COMMAND_WRAPPERS) == {c.name for c in abi.COMMANDS}
    assert len({id(f) for f in COMMAND_WRAPPERS.values()}) == len(abi.COMMANDS)
    sources = inspect.getsource(libgdev.handle) + inspect.getsource(libgdev.transfer) + \
        inspect.getsource(libgdev.loader) + inspect.getsource(libgdev.vmm) + \
        inspect.getsource(libgdev.ipc)
    for name, fn in COMMAND_WRAPPERS.items():
        assert callable(fn)
        assert f"abi.{name}" in sources, name


def test_module_level_verbs_match_handle_methods() -> None:
    for verb in libgdev.VERBS:
        assert getattr(libgdev, verb).__doc__ == getattr(libgdev.Handle, verb).__doc__


def test_every_handler_takes_its_commands_request_and_returns_its_reply() -> None:
    for number, fn in dispatch.HANDLERS.items():
        cmd = abi.BY_NUMBER[number]
        hints = typing.get_type_hints(fn)
        assert hints["req"] is cmd.request.cls, cmd.name
        assert typing.get_args(hints["return"]) == (cmd.reply.cls,), cmd.name


def test_every_struct_is_a_typed_class_whose_annotations_give_the_wire_format() -> None:
    for cmd in abi.COMMANDS:
        for lay in (cmd.request, cmd.reply):
            hints = typing.get_type_hints(lay.cls, include_extras=True)
            assert list(hints) == list(lay.cls._fields), lay.name
            public = [(n, f) for n, f in lay.fields if not n.startswith("_pad")]
            assert public == [(n, hints[n].__metadata__[0]) for n in hints], lay.name
