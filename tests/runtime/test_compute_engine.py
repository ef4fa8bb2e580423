"""The compute engine thread and the decode cache, without the runtime around them."""

from __future__ import annotations

import errno
import threading

from gdevd.errors import GdevError, KernelFault
from gdevd.gpu.compute import ComputeEngine, LaunchJob, ModuleCache

from .conftest import raises_errno


class Steps:
    """A launch that needs ``n`` slices and logs each one."""

    def __init__(self, name: str, n: int, log: list[str], fail: Exception | None = None):
        self.name, self.n, self.log, self.fail = name, n, log, fail

    def run(self, budget: int | None = None) -> bool:
        self.log.append(f"{self.name}:{budget}")
        if self.fail is not None:
            raise self.fail
        self.n -= 1
        return self.n == 0


def _job(launch: Steps, done: list[LaunchJob], all_done: threading.Event | None = None,
         last: bool = False) -> LaunchJob:
    def notify(job: LaunchJob) -> None:
        done.append(job)
        if last and all_done is not None:
            all_done.set()
    return LaunchJob(launch, notify)


def test_fifo_slices_and_errors_do_not_stop_the_engine() -> None:
    engine = ComputeEngine("t", slice_budget=7)
    log: list[str] = []
    done: list[LaunchJob] = []
    finished = threading.Event()
    jobs = [_job(Steps("a", 3, log), done),
            _job(Steps("b", 1, log, fail=KernelFault(errno.EFAULT, "bad")), done),
            _job(Steps("c", 1, log, fail=ZeroDivisionError()), done),
            _job(Steps("d", 2, log), done, finished, last=True)]
    for j in jobs:
        engine.submit(j)
    assert finished.wait(5)
    engine.close()
    assert log == ["a:7", "a:7", "a:7", "b:7", "c:7", "d:7", "d:7"]
    assert done == jobs and engine.launches == 4
    assert jobs[0].error is None and jobs[3].error is None
    assert jobs[1].error.errno == errno.EFAULT                       # type: ignore[union-attr]
    assert isinstance(jobs[2].error, KernelFault) and jobs[2].error.errno == errno.EIO
    assert all(j.started is not None and j.finished >= j.started for j in jobs)  # type: ignore


def test_cancel_stops_at_a_slice_boundary_and_hold_pauses() -> None:
    engine = ComputeEngine("t", slice_budget=1)
    log: list[str] = []
    done: list[LaunchJob] = []
    finished = threading.Event()
    engine.hold.clear()                                   # a scheduler holds the engine
    forever = _job(Steps("f", 10**9, log), done)
    after = _job(Steps("g", 1, log), done, finished, last=True)
    engine.submit(forever)
    engine.submit(after)
    assert not finished.wait(0.05) and log == []          # nothing ran while held
    forever.cancel()
    engine.hold.set()
    assert finished.wait(5)
    engine.close()
    assert forever.error is not None and forever.error.errno == errno.ECANCELED
    assert log == ["g:1"] and after.error is None
    with raises_errno(errno.ENODEV):
        engine.submit(after)


def test_a_failing_notify_does_not_kill_the_engine() -> None:
    engine = ComputeEngine("t", slice_budget=1)
    finished = threading.Event()

    def bad_notify(job: LaunchJob) -> None:
        raise RuntimeError("the loop is gone")
    engine.submit(LaunchJob(Steps("x", 1, []), bad_notify))
    engine.submit(LaunchJob(Steps("y", 1, []), lambda job: finished.set()))
    assert finished.wait(5)
    engine.close()
    engine.close()                                         # idempotent


def test_module_cache_is_lru_by_content() -> None:
    cache = ModuleCache(2)
    k1, k2, k3 = (ModuleCache.key(t) for t in (b"one", b"two", b"three"))
    assert k1 == ModuleCache.key(b"one") and k1 != k2
    assert cache.lookup(k1) is None
    cache.insert(k1, "m1")
    cache.insert(k2, "m2")
    assert cache.lookup(k1) == "m1"                        # k2 is now least recent
    cache.insert(k3, "m3")
    assert cache.lookup(k2) is None and cache.lookup(k3) == "m3"
    assert (cache.hits, cache.misses) == (2, 2)
    assert GdevError  # the module's error type is importable alongside


class Weighed(Steps):
    """A Steps launch that declares its step weight and kernel to the engine."""

    def __init__(self, name: str, n: int, log: list[str], scale: int = 1, key=None):
        super().__init__(name, n, log)
        self.budget_scale, self.budget_key = scale, key


def _run_all(engine: ComputeEngine, launches: list[Steps]) -> None:
    done: list[LaunchJob] = []
    finished = threading.Event()
    for k, launch in enumerate(launches):
        engine.submit(_job(launch, done, finished, last=k == len(launches) - 1))
    assert finished.wait(5)
    engine.close()


def test_the_slice_cap_is_scaled_by_the_launchs_step_weight() -> None:
    # quantum_s of 10 s: every fake quantum is "short", so the budget doubles up to the cap
    engine = ComputeEngine("t", slice_budget=64, quantum_s=10.0)
    log: list[str] = []
    _run_all(engine, [Weighed("a", 7, log, scale=4), Steps("b", 4, log)])
    assert log == ["a:16", "a:32", "a:64", "a:128", "a:256", "a:256", "a:256",
                   "b:16", "b:32", "b:64", "b:64"]


def test_a_launch_of_a_known_kernel_starts_at_its_last_budget() -> None:
    engine = ComputeEngine("t", slice_budget=1 << 20, quantum_s=10.0)
    log: list[str] = []
    _run_all(engine, [Weighed("a", 4, log, key="k"), Weighed("b", 2, log, key="k"),
                      Weighed("c", 1, log, key="other")])
    # a's last quantum finished it (no doubling on a finished launch): b starts at 128
    assert log == ["a:16", "a:32", "a:64", "a:128", "b:128", "b:256", "c:16"]


def test_the_engine_thread_runs_nicer_than_the_daemon() -> None:
    """The emulated GPU computes on the CPUs that serve every tenant's calls: its thread
    runs ENGINE_NICE nicer than the thread that made it (at most 19)."""
    import os

    from gdevd.gpu.compute import ENGINE_NICE

    class Nice:
        def run(self, budget: int | None = None) -> bool:
            self.nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            return True
    engine = ComputeEngine("t", slice_budget=1)
    launch, finished = Nice(), threading.Event()
    engine.submit(LaunchJob(launch, lambda job: finished.set()))
    assert finished.wait(5)
    engine.close()
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert launch.nice == min(19, mine + ENGINE_NICE)


def test_the_engines_niceness_can_be_changed_within_bounds() -> None:
    """``set_nice`` (the /proc/gdev/compute_nice tunable) moves the running engine thread;
    out of 0..19 is EINVAL; a less nice value than the thread has is EPERM unless the
    process may raise priorities (root here: it succeeds)."""
    import os

    engine = ComputeEngine("t", slice_budget=1)
    try:
        mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        engine.set_nice(9)
        assert os.getpriority(os.PRIO_PROCESS, engine._thread.native_id) == min(19, mine + 9)
        assert engine.nice == 9
        for bad in (-1, 20):
            with raises_errno(errno.EINVAL):
                engine.set_nice(bad)
        if os.geteuid() == 0:
            engine.set_nice(2)
            assert os.getpriority(os.PRIO_PROCESS, engine._thread.native_id) == min(19, mine + 2)
        else:
            with raises_errno(errno.EPERM):
                engine.set_nice(2)
    finally:
        engine.close()
