"""The seat-map tier: change capture from PostgreSQL (pgoutput) to per-event Redis streams,
and the fan-out of versioned snapshots and deltas over WebSockets (docs/seatmap.md)."""

# The folder is mapped into the one onsale package (pyproject.toml package-dir): by its
# short name it would load a second copy of every module, with state of its own.
if __name__ != "onsale.seatmap":
    raise ImportError(f"import onsale.seatmap, not {__name__}: the seatmap/ folder is the "
                      "onsale.seatmap package")
