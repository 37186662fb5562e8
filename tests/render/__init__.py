"""Tests of brave_search_mcp.render: envelopes to the compact text a model reads, within its bounds."""
