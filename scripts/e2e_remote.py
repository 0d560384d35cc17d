"""The end-to-end suite in its --base-url mode, as a QA engineer runs it against
staging (docs/qa.md): an onsale started here as a separate stack, then
``pytest e2e --base-url URL`` in another process, which knows the stack only by its URL,
its operator token and its demo event. ``make test`` runs this. It fails if a test was
skipped for any reason but needing the local stack (nothing a remote stack could run is
left out).

    .venv/bin/python scripts/e2e_remote.py [pytest arguments]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from e2e.harness import ADMIN_TOKEN_ENV, DEMO_EVENT_ENV, start_onsale, stop_onsale  # noqa: E402


def skipped_wrongly(report: Path) -> list[str]:
    """Tests skipped for another reason than needing the local stack."""
    out = []
    for case in ET.parse(report).iter("testcase"):
        for skip in case.iter("skipped"):
            if "needs the local stack" not in (skip.get("message") or ""):
                out.append(f"{case.get('classname')}.{case.get('name')}: {skip.get('message')}")
    return out


def main() -> int:
    server = start_onsale()
    print(f"e2e_remote: a separate onsale at {server.base_url}", flush=True)
    try:
        env = {**os.environ, ADMIN_TOKEN_ENV: server.admin_token,
               DEMO_EVENT_ENV: str(server.demo_event_id)}
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "e2e.xml"
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "e2e", "--base-url", server.base_url,
                 f"--junitxml={report}", *sys.argv[1:]], env=env, cwd=ROOT, check=False)
            wrong = skipped_wrongly(report) if report.exists() else []
    finally:
        stop_onsale(server)
    if wrong:
        print("e2e_remote: skipped though a remote stack could run them:\n  "
              + "\n  ".join(wrong), file=sys.stderr)
        return 1
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
