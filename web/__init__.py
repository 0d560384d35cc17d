"""The web tier: the shopper pages and the operator console, the read side (docs/web.md)."""

# The folder is mapped into the one onsale package (pyproject.toml package-dir): by its
# short name it would load a second copy of every module, with state of its own.
if __name__ != "onsale.web":
    raise ImportError(f"import onsale.web, not {__name__}: the web/ folder is the "
                      "onsale.web package")
