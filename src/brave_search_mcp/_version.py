"""The package version, kept in one file so the server, CLI and manifest agree."""

__version__ = "0.1.0"
