"""Pure text: the one sanitizer for upstream strings and URLs, the key scrub of JSON values, and envelopes rendered
into the compact text a model reads, within line and byte budgets. No I/O.
"""
