"""A Stripe-like payment provider simulator, reached by the core only over HTTP.

Pure logic (no I/O): ``cards``, ``intents``, ``params``, ``errors``, ``idempotency``,
``signature``, ``faults``, ``events``, ``pages``. I/O adapters: ``store`` (SQLite),
``service`` (operations, one transaction each), ``webhooks`` and ``http_post``
(delivery), ``middleware`` (fault injection), ``app`` (Starlette routes), ``cli``.
``testing`` has helpers for tests that run it on a real socket.
The contract is in docs/psp.md.
"""

# The folder is mapped into the one onsale package (pyproject.toml package-dir): by its
# short name it would load a second copy of every module, with state of its own.
if __name__ != "onsale.psp":
    raise ImportError(f"import onsale.psp, not {__name__}: the psp/ folder is the "
                      "onsale.psp package")
