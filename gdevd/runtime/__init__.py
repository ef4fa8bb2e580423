"""gdevd/runtime."""
