"""Command-line tools around a running gdevd (``gmonitor``)."""
