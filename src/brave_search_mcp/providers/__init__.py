"""Search providers behind one small protocol, so Brave, SearXNG and the next one are interchangeable.

``base`` holds the protocol and the request/page types, ``searxng`` the SearXNG client, ``breaker`` the
circuit breaker and ``chain`` the fallback chain that tries providers in order. Nothing is imported
here on purpose: importing the package does no work.
"""
