"""Tests of brave_search_mcp.brave: Brave's facts, its parameters and its answers turned into typed results."""
