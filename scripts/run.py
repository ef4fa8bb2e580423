"""``make run``: the main job on the default emulated GPU (filled in as layers land)."""

import sys

print("gdev-py: nothing to run yet")
sys.exit(0)
