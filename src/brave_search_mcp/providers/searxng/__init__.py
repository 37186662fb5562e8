"""The SearXNG provider: a self-hosted metasearch instance as a second source, its HTTP client and the mapping of
its JSON answers onto our sections.
"""
