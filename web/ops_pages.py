"""Pages: (being built)."""

from __future__ import annotations

from starlette.routing import BaseRoute

routes: list[BaseRoute] = []
