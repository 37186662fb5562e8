"""Fuzzing the two doors junk comes in by: tool arguments from the agent and response bodies from Brave.

Whatever arrives, a tool answers with a v1 envelope: never a protocol error, never a traceback, never an
INTERNAL_ERROR, and text within its bounds. The MCP session (or service) is opened once per test and each
hypothesis example runs in a worker thread that calls back into the event loop (``anyio.from_thread``),
so an example costs one tool call, not one server start.
"""
