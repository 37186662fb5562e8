"""Everything that is Brave's: its API facts as data (endpoints, limits, enumerations, plans), its wire format
(rate-limit headers, error bodies), its answers parsed into typed results, the parameter rules of its search
endpoints, the summarizer's polling protocol, and the HTTP client that speaks to it. Nothing here formats text.
"""
