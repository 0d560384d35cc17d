"""The seat-map tier: change capture from PostgreSQL (pgoutput) to per-event Redis streams,
and the fan-out of versioned snapshots and deltas over WebSockets (docs/seatmap.md)."""
