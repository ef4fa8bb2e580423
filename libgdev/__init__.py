"""libgdev."""
