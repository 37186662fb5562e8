"""What every upstream client shares: the retry rule and Retry-After parsing, transport failures mapped to typed
errors, and bodies read under a byte cap (gzip bombs included) and decoded as JSON. It knows no provider's JSON.
"""
