"""The event's shard's copy of its queue settings (docs/scaling.md#placing-an-event)."""

from __future__ import annotations

import logging

from onsale.core.event_store import sync_event_copy
from onsale.edge.runtime import Edge

log = logging.getLogger("onsale.edge")


async def copy_to_shard(edge: Edge, event_id: int) -> None:
    """The directory's queue and draw columns onto the event's shard's copy of its
    row, which the event document reads (docs/scaling.md#placing-an-event), once the
    directory's change has committed. A shard that does not answer keeps its copy until
    the next change: admission reads the directory, so only the document lags."""
    if edge.shards is None:
        return
    try:
        async with edge.db.connection() as conn:
            await sync_event_copy(conn, edge.shards, event_id)
    except Exception:
        log.warning("event %s: its shard's copy of the queue settings is behind", event_id,
                    exc_info=True)
