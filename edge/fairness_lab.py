"""What the console's fairness lab runs in its worker process (edge/fairness_worker.py),
never on the edge's event loop: a scenario, or an uploaded arrivals CSV read into a crowd
(edge/fairness_crowd.py, as ``onsale fairness sweep --arrivals`` reads it), simulated
under both policies (``fairness.compare``), with the files a sweep writes
(edge/fairness_files.py) attached to the answer.

Everything crosses the process boundary pickled: the inputs (a ``Scenario``, or the
CSV's bytes and plain settings), the answer (a dict), and a refusal (``LabRefusal``,
whose arguments are all plain values, as the simulator's own errors' are not).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from onsale.edge.fairness import MAX_SECONDS, FairnessInputError, Scenario, compare, parse_scenario
from onsale.edge.fairness_crowd import CrowdError, parse_time, read_crowd
from onsale.edge.fairness_files import MEDIA_TYPES, run_files


class LabRefusal(Exception):
    """An input the lab refuses: the problem's code, its detail, the field it names and,
    for the CSV, its line (the header is line 1)."""

    def __init__(self, code: str, detail: str, field: str, line: int | None = None) -> None:
        super().__init__(code, detail, field, line)
        self.code, self.detail, self.field, self.line = code, detail, field, line


def encoded(files: Mapping[str, bytes]) -> dict[str, dict[str, str]]:
    """The files as JSON can carry them: text as UTF-8 text, a chart in base64."""
    out = {}
    for name, data in files.items():
        media = MEDIA_TYPES[name.rpartition(".")[2]]
        if media == "image/png":
            out[name] = {"media_type": media, "encoding": "base64",
                         "content": base64.b64encode(data).decode()}
        else:
            out[name] = {"media_type": media, "encoding": "utf-8", "content": data.decode()}
    return out


def run_scenario(sc: Scenario) -> dict[str, Any]:
    """``compare``'s answer, with its files."""
    doc = compare(sc)
    doc["files"] = encoded(run_files(doc))
    return doc


def upload_scenario(raw: bytes, given: Mapping[str, Any],
                    defaults: Mapping[str, Any] | None, opens_at: str | None) -> Scenario:
    """The scenario of an uploaded CSV: its crowd on the clock of ``opens_at`` (ISO 8601
    or Unix seconds; None: the first join), with the settings ``given``, else
    ``defaults`` (an event's)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise LabRefusal("invalid_arrivals", f"line {line}: not UTF-8 text", "arrivals",
                         line) from None
    try:
        crowd = read_crowd(text)
    except CrowdError as exc:
        raise LabRefusal("invalid_arrivals", str(exc), "arrivals", exc.line or None) from None
    opens = None
    if opens_at is not None:
        try:
            opens = parse_time(opens_at)
        except ValueError as exc:
            raise LabRefusal("invalid_request", f"opens_at: {exc}", "opens_at") from None
    crowd, onsale = crowd.placed(opens)
    arrivals = crowd.arrivals()
    if len(arrivals) > MAX_SECONDS:
        raise LabRefusal("invalid_arrivals", f"the joins span {len(arrivals):,} seconds "
                         f"from the opening on; the lab takes at most {MAX_SECONDS:,} "
                         "(onsale fairness sweep takes more)", "arrivals")
    try:
        sc = parse_scenario({**given, "arrivals": list(arrivals), "onsale_second": onsale},
                            defaults)
    except FairnessInputError as exc:
        raise LabRefusal("invalid_request", exc.message, exc.field) from None
    return replace(sc, crowd=crowd)


def run_upload(raw: bytes, given: Mapping[str, Any], defaults: Mapping[str, Any] | None,
               opens_at: str | None) -> dict[str, Any]:
    """An uploaded CSV's scenario (``upload_scenario``) run as ``run_scenario`` runs."""
    return run_scenario(upload_scenario(raw, given, defaults, opens_at))
