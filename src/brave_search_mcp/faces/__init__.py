"""The faces of the product: the MCP server, its stdio and HTTP transports, the CLI, the Python library and the
skill installer. Each turns the one tool registry into what its users see (MCP tools, sub-commands, typed
methods) and holds no business logic and no tool list of its own; they open everything through ``compose``.
"""
