"""One module per tool: what the tool does, over ports the composition root hands in (the Brave client's small
callables, the provider chain, a clock). Use cases return envelopes and their compact text; they never import
``tools`` or a face, so the same code serves MCP, the CLI and the library.
"""
