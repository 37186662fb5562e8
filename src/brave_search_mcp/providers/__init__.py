"""Search providers behind one small protocol, so Brave, SearXNG and the next one are interchangeable.

``protocol`` holds the protocol and the request/page types, ``brave`` adapts the Brave client to it,
``searxng/`` is the SearXNG client and its JSON mapping, ``cache`` caches a provider's answers under its
own name, ``breaker`` is the circuit breaker and ``chain`` the fallback chain that tries providers in
order. Providers know nothing of tools; importing the package does no work.
"""
