"""The tool layer every face calls: the registry (the tuple of tool specs, filtered by the settings), the boundary
each call crosses (argument validation, deadline, envelope, unknown tool, key scrub, call log), and the help
and status tools, which receive the registry as an argument. It knows no HTTP and no provider JSON.
"""
