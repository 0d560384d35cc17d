"""The roles a process can serve (docs/operations.md#processes): named once, for the
app factory (onsale/compose.py) and the command line."""

ROLES = ("core", "worker", "edge", "cdc", "seatmap")
SECRETLESS_ROLES = ("worker", "cdc")  # they sign and verify nothing
