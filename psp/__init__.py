"""A Stripe-like payment provider simulator, reached by the core only over HTTP.

Pure logic (no I/O): ``cards``, ``intents``, ``params``, ``errors``, ``idempotency``,
``signature``, ``faults``, ``events``. I/O adapters: ``store`` (SQLite),
``service`` (operations in one transaction each), ``webhooks`` (delivery),
``middleware`` (fault injection), ``app`` (Starlette routes), ``cli``.
The contract is in docs/psp.md.
"""
