"""The API contract against a live stack: schemathesis runs every phase (examples,
coverage, fuzzing, stateful) over every operation of the public document
(``/api/reference/openapi.json``) of a separately started ``onsale dev``, as a shopper who
is signed in and admitted to the demo event, with the operator token, and every check on:
no server error, every status and problem documented, every answer valid against its
schema, every schema-valid request accepted and every invalid one refused. 0 failures.

What the checks accept besides is in ``api_contract.toml`` beside this file, each with its
reason. By hand, against a running ``onsale dev`` (its token in .onsale/secrets.json):

    .venv/bin/st --config-file tests/integration/api_contract.toml run \\
        http://127.0.0.1:8000/api/reference/openapi.json --url http://127.0.0.1:8000 \\
        -H "Cookie: onsale_session=…; onsale_admission_1=…" \\
        -H "Authorization: Bearer $ONSALE_ADMIN_TOKEN" -H "Origin: http://127.0.0.1:8000"
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from e2e.harness import Onsale, start_onsale, stop_onsale

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "api_contract.toml"
# Reproducible in CI; ONSALE_CONTRACT_SEED explores other inputs.
SEED = os.environ.get("ONSALE_CONTRACT_SEED", "1")
EXAMPLES = os.environ.get("ONSALE_CONTRACT_EXAMPLES", "20")


@pytest.fixture(scope="module")
def stack() -> Iterator[Onsale]:
    saved = dict(os.environ)
    # The run sends thousands of requests from one address, many with a wrong token on
    # purpose: the throttles stay on, with limits that let the logic behind them be tested.
    os.environ.update({"ONSALE_ADMIN_LIMIT_FAILURES": "1000000",
                       "ONSALE_DRAW_LIMIT_IP": "1000000"})
    try:
        server = start_onsale(seats=2000)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        yield server
    finally:
        stop_onsale(server)


def admitted_shopper(server: Onsale) -> dict[str, str]:
    """The cookies and admission token of a new account admitted to the demo event."""
    with httpx.Client(base_url=server.base_url, timeout=30) as c:
        email = f"contract-{uuid.uuid4().hex[:10]}@example.com"
        signed_up = c.post("/api/accounts", json={"email": email,
                                                  "password": "correct horse battery"})
        assert signed_up.status_code == 201, signed_up.text
        path = f"/api/events/{server.demo_event_id}/queue"
        answer = c.post(path)
        assert answer.status_code == 200, answer.text
        deadline = time.monotonic() + 120
        while "admission_token" not in answer.json() and time.monotonic() < deadline:
            time.sleep(float(answer.json().get("poll_after_seconds", 1)))
            answer = c.get(path)
        token = answer.json().get("admission_token")
        assert token, f"not admitted: {answer.text}"
        cookies = "; ".join(f"{k}={v}" for k, v in c.cookies.items())
    return {"Cookie": cookies, "Admission-Token": token}


def test_every_operation_keeps_the_contract(stack: Onsale, tmp_path: Path) -> None:
    shopper = admitted_shopper(stack)
    headers = {**shopper, "Authorization": f"Bearer {stack.admin_token}",
               "Origin": stack.base_url}
    command = [
        str(Path(sys.executable).with_name("st")), "--config-file", str(CONFIG), "run",
        f"{stack.base_url}/api/reference/openapi.json", "--url", stack.base_url,
        *(arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")),
        "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", EXAMPLES, "--seed", SEED, "--request-timeout", "60",
        # Signing out would end the session the rest of the run uses; both routes are
        # tested in tests/integration/test_sessions.py.
        "--exclude-operation-id", "deleteSession",
        "--exclude-operation-id", "deleteSessions",
        "--no-color", "--output-truncate", "true",
        "--report", "junit", "--report-dir", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1500,
                          check=False, cwd=tmp_path)  # its example database stays there
    summary = done.stdout[-6000:]
    assert done.returncode == 0, f"schemathesis found failures:\n{summary}\n{done.stderr}"
    selected = re.search(r"Selected: (\d+)/(\d+)", done.stdout)
    tested = re.search(r"Tested: (\d+)", done.stdout)
    assert selected and tested, summary
    # every operation but the two sign-outs, each tested
    assert int(selected[1]) == int(selected[2]) - 2 == int(tested[1]), summary
    assert list(tmp_path.glob("junit*.xml")), "no report: nothing ran"
