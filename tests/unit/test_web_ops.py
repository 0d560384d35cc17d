"""web/ops_pages.py and the console's static files, without servers."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.routing import Mount

from onsale.core.read_model import event_json
from onsale.web import ops_pages
from onsale.web.ops_pages import event_view, when
from onsale.web.templating import HERE, templates

JS = HERE / "static" / "js"
OPS_JS = ["ops.js", "ops_event.js", "fairness.js", "charts.js"]


def event(**overrides: object) -> dict[str, Any]:
    """The event document the console reads (the API's, shaped from an events row)."""
    onsale = datetime(2026, 12, 1, 14, 30, tzinfo=UTC)
    row: dict[str, object] = {
        "event_id": 7, "name": "Spring tour", "venue_name": "Main Arena",
        "time_zone": "Europe/Berlin", "seat_count": 50_000,
        "queue_policy": "random", "onsale_at": onsale, "starts_at": onsale + timedelta(days=20),
        "prequeue_at": onsale - timedelta(minutes=30), "max_tickets_per_account": 4,
        "currency": "USD", "hold_ttl_seconds": 300, "max_seats_per_hold": 6, "tiers": [],
        "pow_difficulty": 0, "draw_commitment": None, "draw_seed": None, "drawn_at": None}
    row.update(overrides)
    return event_json(row)


def test_when_reads_like_a_date_in_utc() -> None:
    assert when(datetime(2026, 12, 1, 14, 30, tzinfo=UTC)) == "Tue 1 Dec 2026, 14:30 UTC"
    assert when(None) == "not set"


def test_event_view_says_the_policy_and_the_sale_state_in_words() -> None:
    before = event_view(event(), datetime(2026, 12, 1, 14, 0, tzinfo=UTC))
    assert before["policy_words"].startswith("random draw")
    assert before["sale_open"] is False and before["over"] is False
    assert before["prequeue_seconds"] == 1800
    during = event_view(event(queue_policy="fifo", prequeue_at=None),
                        datetime(2026, 12, 2, tzinfo=UTC))
    assert during["policy_words"] == "first come, first served"
    assert during["sale_open"] is True and during["prequeue_seconds"] == 0
    assert during["prequeue_when"] == "as soon as the event exists"


def test_the_console_says_times_at_the_venue() -> None:
    view = event_view(event(), datetime(2026, 12, 1, 14, 0, tzinfo=UTC))
    assert view["onsale_when"] == "Tue 1 Dec 2026, 15:30 CET"  # 14:30 UTC in Berlin
    assert view["time_zone"] == "Europe/Berlin"
    assert view["onsale_iso"].startswith("2026-12-01T14:30")


def test_the_console_lives_under_one_mount() -> None:
    [mount] = ops_pages.routes
    assert isinstance(mount, Mount) and mount.path == "/ops"
    paths = {getattr(r, "path", None) for r in mount.routes}
    assert paths == {"/", "/signin", "/fairness", "/events/{event_id}"}


def test_every_module_a_console_page_or_script_imports_exists_and_exports_the_names() -> None:
    # The pages load /static/js/<entry>.js; the modules import each other by relative
    # path only (./x.js: one style, which Node's test runner resolves too, tests/js/).
    pages = [p.read_text() for p in (HERE / "templates" / "ops").glob("*.html")]
    entries = {m for page in pages
               for m in re.findall(r'<script type="module" src="/static/js/([\w.]+)"', page)}
    assert entries == {"ops_signin_page.js", "ops_index_page.js", "ops_event_page.js",
                       "fairness_page.js"}
    sources = [(name, (JS / name).read_text()) for name in sorted(entries) + OPS_JS]
    checked = 0
    for name, text in sources:
        for names, path in re.findall(r'import \{([^}]*)\} from "\./([\w.]+)"', text):
            target = (JS / path).read_text()
            for imported in (n.strip() for n in names.split(",") if n.strip()):
                assert re.search(rf"export (async )?(function|class|const) {imported}\b",
                                 target), (name, path, imported)
                checked += 1
    assert checked > 15


def test_every_browser_module_imports_its_siblings_by_relative_path() -> None:
    specifiers = [(p.name, spec) for p in sorted(JS.glob("*.js"))
                  for spec in re.findall(r'^import [^;]*?from "([^"]+)";', p.read_text(),
                                         re.MULTILINE)]
    assert len(specifiers) > 20
    for name, spec in specifiers:
        assert re.fullmatch(r"\./[\w.]+\.js", spec), (name, spec)
        assert (JS / spec).is_file(), (name, spec)


def test_the_event_page_template_has_every_figure_the_script_draws() -> None:
    script = (JS / "ops_event.js").read_text()
    figures = set(re.findall(r"^  (\w+): \{ read:", script, re.MULTILINE))
    assert len(figures) == 10
    page = templates.get_template("ops/event.html").render(
        event=event_view(event(), datetime(2026, 12, 1, tzinfo=UTC)), messages_json="{}",
        account=None)
    assert {m for m in re.findall(r'data-figure="(\w+)"', page)} == figures
    for element_id in re.findall(r'\$\("([\w-]+)"\)', script):
        assert f'id="{element_id}"' in page, element_id


def test_the_lab_template_has_every_field_the_script_reads() -> None:
    script = (JS / "fairness.js").read_text()
    page = templates.get_template("ops/fairness.html").render(
        events=[event_view(event(), datetime(2026, 12, 1, tzinfo=UTC))], chosen=7,
        messages_json="{}", account=None)
    numbers = re.search(r"const NUMBERS = \[([^\]]*)\]", script)
    assert numbers is not None
    for name in re.findall(r'"(\w+)"', numbers.group(1)):
        assert f'name="{name}"' in page, name
    for element_id in re.findall(r'getElementById\("([\w-]+)"\)', script):
        assert f'id="{element_id}"' in page, element_id
    assert 'value="7" data-seats="50000"' in page and "selected" in page


def test_the_console_css_section_is_marked() -> None:
    css = Path(HERE / "static" / "onsale.css").read_text()
    assert "/* ---- operator console and fairness lab" in css
