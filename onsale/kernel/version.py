"""onsale's version, written once: ``version`` in pyproject.toml, read back from the
installed package's metadata (``onsale --version``, the OpenAPI documents' ``info``)."""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version


@functools.cache
def onsale_version() -> str:
    try:
        return version("onsale")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
