"""The GPU grid on Dask: donated gdevd nodes run guest work in their idle cycles.

* :class:`GdevNodePlugin` (worker side): attaches a Dask worker to its node's gdevd, keeps the
  node's state (busy, partially idle, fully idle) and runs guest pieces in the paper's
  periodic or continuous mode;
* :class:`GridClient` (client side): submits pieces (kernel launches or Python functions over
  the CUDA layer) to the best nodes and returns each piece's result exactly once.

See docs/grid.md. This package talks to gdevd only as a client (libgdev, libgdev.cuda).
"""

from __future__ import annotations

from .client import GridClient, GridError
from .matmul import matmul_kernel, matmul_pieces
from .pieces import In, InOut, Kernel, Out, Piece
from .plugin import TOPIC, GdevNodePlugin, Outcome
from .state import Mode, NodeState, Thresholds

__all__ = ["GdevNodePlugin", "GridClient", "GridError", "In", "InOut", "Kernel", "Mode",
           "NodeState", "Out", "Outcome", "Piece", "TOPIC", "Thresholds", "matmul_kernel",
           "matmul_pieces"]
