"""One module per Brave endpoint family the fake answers: each route checks its own parameters and builds its body.

The router (``testkit/brave/router.py``) has already checked the token, the rate window, the quota and the plan
when a route's ``answer`` runs; a route only validates, builds the body and bills through its ``Exchange``.
"""
