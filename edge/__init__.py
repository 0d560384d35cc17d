"""The edge tier: the waiting room, its admitter and the gate (docs/edge.md)."""

# The folder is mapped into the one onsale package (pyproject.toml package-dir): by its
# short name it would load a second copy of every module, with state of its own.
if __name__ != "onsale.edge":
    raise ImportError(f"import onsale.edge, not {__name__}: the edge/ folder is the "
                      "onsale.edge package")
