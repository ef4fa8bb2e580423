"""kcuda."""
