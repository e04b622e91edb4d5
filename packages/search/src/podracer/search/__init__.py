"""podracer.search (in progress)."""

__version__ = "0.1.0"
