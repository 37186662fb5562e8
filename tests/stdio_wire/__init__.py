"""Tests of the stdio transport: its pieces in-process and the server as a real subprocess."""
