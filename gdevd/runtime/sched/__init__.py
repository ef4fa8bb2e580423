"""Gdev's scheduler: API-driven queues (MRQ/SDQ), priorities, vGPU policies, accounting.

See :mod:`.scheduler` for the theory of operation and docs/scheduling.md for the user's view.
"""

from .policies import POLICIES, POLICY_NAMES, BandPolicy, CreditPolicy, FifoPolicy, NullPolicy
from .priority import PRIO_DEFAULT, PRIO_MAX, PRIO_MIN, check_priority, task_priority
from .scheduler import QUEUEING, Scheduler
from .state import COMPUTE, MEMORY, Entity, Usage

__all__ = [
    "Scheduler", "QUEUEING", "POLICIES", "POLICY_NAMES", "BandPolicy", "CreditPolicy",
    "FifoPolicy", "NullPolicy", "PRIO_MIN", "PRIO_MAX", "PRIO_DEFAULT", "check_priority",
    "task_priority", "COMPUTE", "MEMORY", "Entity", "Usage",
]
