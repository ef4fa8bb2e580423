"""gdevd/modules."""
