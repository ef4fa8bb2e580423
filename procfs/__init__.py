"""procfs."""
