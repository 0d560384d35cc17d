"""The authoritative core: inventory, holds, accounts, migrations."""

# The folder is mapped into the one onsale package (pyproject.toml package-dir): by its
# short name it would load a second copy of every module, with state of its own.
if __name__ != "onsale.core":
    raise ImportError(f"import onsale.core, not {__name__}: the core/ folder is the "
                      "onsale.core package")
