"""onsale.kernel.http_protocol subclasses uvicorn's httptools protocol and relies on how its
methods and its request cycle behave. This fails when uvicorn changes under it: a new
version, or different code in any method the bounded protocol overrides or calls.
Re-read those methods, re-run tests/integration/test_http_limits.py and bench/hostile.py,
then update the pin in pyproject.toml and the digests below together."""

from __future__ import annotations

import hashlib
import inspect
from importlib.metadata import version

from uvicorn.protocols.http import flow_control, httptools_impl

TESTED = "0.54.0"
HTTPTOOLS = "0.9.0"
PROTOCOL = {
    "__init__": "4f08999410347141",
    "connection_made": "6efb565ff3d36b91",
    "connection_lost": "c91a4c9bf2e29c55",
    "data_received": "010a7ae59a5d3b1a",
    "handle_websocket_upgrade": "179c4f769386ab89",
    "on_message_begin": "96d377fdc7c2baef",
    "on_url": "37be44e962b04ca8",
    "on_header": "65d62c044f61fdbd",
    "on_headers_complete": "1ea8589acfad92d8",
    "_start_asgi_task": "9c08c2571ae9b038",
    "on_body": "dba9c32aeba35b6a",
    "on_message_complete": "1fbad42dc31fc01f",
    "on_response_complete": "64e254f28e389e76",
    "_unset_keepalive_if_required": "00a6a4e47214e68e",
    "_should_upgrade": "8fcad1ab8e096739",
    "_unsupported_upgrade_warning": "55bbd2762b189d9a",
    "pause_writing": "17a8fd215d96a13c",
    "resume_writing": "7844bbaa8cceb1ef",
    "eof_received": "5652627579a02369",
}
CYCLE = {
    "__init__": "4d2f220910c33c12",
    "send": "abdd8601b326a8da",
    "receive": "8124ae006be71184",
    "run_asgi": "0f33f2449a444bc2",
}
FLOW = "126debcdaa894c83"


def digest(obj: object) -> str:
    return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()[:16]  # type: ignore[arg-type]


def test_uvicorn_and_httptools_are_the_tested_versions() -> None:
    assert version("uvicorn") == TESTED
    assert version("httptools") == HTTPTOOLS


def test_pyproject_pins_the_tested_version() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert f'"uvicorn[standard]=={TESTED}"' in text
    assert f'"httptools=={HTTPTOOLS}"' in text


def test_the_protocol_methods_we_build_on_are_unchanged() -> None:
    changed = {name for name, want in PROTOCOL.items()
               if digest(getattr(httptools_impl.HttpToolsProtocol, name)) != want}
    changed |= {f"RequestResponseCycle.{name}" for name, want in CYCLE.items()
                if digest(getattr(httptools_impl.RequestResponseCycle, name)) != want}
    if digest(flow_control.FlowControl) != FLOW:
        changed.add("FlowControl")
    assert not changed, f"uvicorn changed under onsale.kernel.http_protocol: {sorted(changed)}"
