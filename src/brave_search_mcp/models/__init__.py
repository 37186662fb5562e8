"""Pure data every layer speaks: strict tool inputs, the v1 envelopes (one module per tool's envelope) and the typed
errors with their advice. No I/O.
"""
