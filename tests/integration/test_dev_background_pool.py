"""``onsale dev`` runs the background loops beside the routes: they get a pool of their
own with the background statement timeout, not the request pool's (a relay batch
cancelled after Redis had it would be published again)."""

from __future__ import annotations

from onsale.compose import build_app
from tests.conftest import make_settings


async def test_dev_gives_the_background_loops_their_own_pool(db_url: str) -> None:
    app = build_app("dev", make_settings(db_url, db_request_timeout_ms=500,
                                         db_statement_timeout_ms=5000))
    async with app.router.lifespan_context(app):
        state = app.state.core
        assert state.background_pool is not None
        assert state.background_pool is not state.db.pool
        assert await state.background_pool.fetchval("SHOW statement_timeout") == "5s"
        assert await state.db.pool.fetchval("SHOW statement_timeout") == "500ms"
        assert state.background_pool.get_max_size() == 3


async def test_the_core_role_has_no_background_pool(db_url: str) -> None:
    app = build_app("core", make_settings(db_url))
    async with app.router.lifespan_context(app):
        assert app.state.core.background_pool is None
