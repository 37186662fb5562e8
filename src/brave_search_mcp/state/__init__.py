"""Shared state — rate limiter, response cache, small records — behind one interface: memory, sqlite, redis.

``location.open_state(url, ...)`` returns a ``StateBackend``; ``None`` means the default: SQLite files shared by
every stdio server, CLI and library process of that user, the counters in their state directory and the response
cache in their cache directory.

Why not pyrate-limiter (evaluated for issue 14): its SQLite and Redis buckets store a fixed list of
``Rate`` objects chosen at construction, so (1) the plan rate learned from Brave's headers and the
halving after a contradicting 429 would have to be rebuilt per process and could not be shared
through the store; (2) it has no "earliest possible start" query, so a call cannot fail fast with
``retry_after`` when its deadline comes first (only a blocking wait with a timeout, or a plain
refusal); (3) it has no shared pause (``block_until``) for a Brave "Remaining: 0". Adding all three
means writing the store logic anyway; the whole reservation is one SQLite transaction and one Lua
script here, so a dependency would save nothing and constrain the adaptive rules.
"""
