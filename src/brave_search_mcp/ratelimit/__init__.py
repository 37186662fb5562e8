"""Rate limiting for every upstream: the adaptive-rate rules (learned plan, penalty, recovery), the fair queue, and
admission before each request (the quota gate, pauses an upstream demanded, fail fast when the queue outlasts
the call). It never imports ``brave``: plans are learned from headers parsed elsewhere into ``RateLimitInfo``.
"""
