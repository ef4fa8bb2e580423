"""The pre-authentication ledger and the accept back-off, in process."""

from __future__ import annotations

import errno
from types import SimpleNamespace

import pytest
import trio
import trio.testing

from gdevd.ioctl.admission import AcceptBackoff, Admission, AdmissionStats


def test_per_uid_and_total_limits_and_release() -> None:
    adm = Admission(SimpleNamespace(preauth_max=5, preauth_per_uid=3, preauth_timeout_s=1.0))
    assert [adm.admit(1000) for _ in range(4)] == [True, True, True, False]
    assert [adm.admit(1001) for _ in range(3)] == [True, True, False]   # 5 in all
    assert adm.stats.preauth == 5 and adm.stats.refused == 2
    adm.release(1000)
    assert adm.admit(1001) and not adm.admit(1002)
    for uid in (1000, 1000, 1001, 1001, 1001):
        adm.release(uid)
    assert adm.stats.preauth == 0 and adm.admit(1002)


def test_accept_backoff_waits_on_exhaustion_and_reraises_the_rest() -> None:
    async def main() -> None:
        stats = AdmissionStats()
        backoff = AcceptBackoff(stats)
        start = trio.current_time()
        for _ in range(10):
            await backoff.failed(OSError(errno.EMFILE, "Too many open files"))
        waited = trio.current_time() - start
        assert backoff.delay == 1.0 and 1.0 < waited < 10.0   # doubling, capped at 1 s
        await backoff.failed(OSError(errno.ECONNABORTED, "aborted"))  # retried at once
        assert stats.accept_errors == 11
        with pytest.raises(OSError):
            await backoff.failed(OSError(errno.EBADF, "listener closed"))
        backoff.succeeded()
        assert backoff.delay == 0.0
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
