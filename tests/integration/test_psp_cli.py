"""``onsale psp``: serves once bound, stops cleanly on SIGTERM, keeps its state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from onsale.embedded import free_port

ONSALE = str(Path(sys.executable).parent / "onsale")
KEY = "sk_test_psp_0123456789"


def start(data_dir: Path, port: int, **extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "ONSALE_PSP_API_KEY": KEY, **extra}
    for name in ("ONSALE_PSP_WEBHOOK_URL", "ONSALE_PSP_DATA_DIR", "ONSALE_PSP_PUBLIC_URL"):
        env.pop(name, None)
    return subprocess.Popen([ONSALE, "psp", "--port", str(port), "--data-dir", str(data_dir)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float = 30) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        seen += line
        if needle in line:
            return line.strip()
    proc.kill()
    raise AssertionError(f"{needle!r} not printed; output:\n{seen}")


def stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    return proc.returncode, out


def test_serve_stop_and_restart_with_the_same_data_dir(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start(tmp_path / "psp", port)
    try:
        assert wait_for_line(proc, "serving on") == f"onsale psp: serving on {url}/"
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as http:
            assert http.get("/healthz").json() == {"status": "ok"}
            r = http.post("/v1/payment_intents", headers={"Idempotency-Key": "op-cli"}, data={
                "amount": "100", "currency": "usd",
                "payment_method": "pm_card_threeDSecureRequired", "capture_method": "manual",
                "confirm": "true",
                "metadata[operation_id]": "op-cli"})
            intent = r.json()
            assert intent["next_action"]["redirect_to_url"]["url"] == f"{url}/3ds/{intent['id']}"
    finally:
        code, out = stop(proc)
    assert code == 0, out
    assert "onsale psp: stopped" in out
    assert (tmp_path / "psp" / "psp.sqlite3").exists()

    proc = start(tmp_path / "psp", port)
    try:
        wait_for_line(proc, "serving on")
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as http:
            assert http.get(f"/v1/payment_intents/{intent['id']}").json() == intent
    finally:
        code, out = stop(proc)
    assert code == 0, out


def test_bad_configuration_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "ONSALE_PSP_API_KEY": "short"}
    done = subprocess.run([ONSALE, "psp", "--data-dir", str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == ("onsale psp: ONSALE_PSP_SECRET_KEY must start with sk_ and be at least "
                           "16 characters\n")
    env = {**os.environ, "ONSALE_PSP_API_KEY": KEY, "ONSALE_PSP_WEBHOOK_URL": "http://x/h"}
    env.pop("ONSALE_PSP_WEBHOOK_SECRET", None)
    done = subprocess.run([ONSALE, "psp"], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.count("\n")) == (2, 1)
    assert "ONSALE_PSP_WEBHOOK_SECRET is required" in done.stderr


def test_metrics_answer_on_their_own_port_only(tmp_path: Path) -> None:
    port, metrics_port = free_port(), free_port()
    proc = start(tmp_path / "psp", port, ONSALE_PSP_METRICS_PORT=str(metrics_port))
    try:
        wait_for_line(proc, "serving on")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}",
                          headers={"Authorization": f"Bearer {KEY}"}) as http:
            made = http.post("/v1/payment_intents", headers={"Idempotency-Key": "op-m"}, data={
                "amount": "100", "currency": "usd", "payment_method": "pm_card_visa",
                "capture_method": "manual", "confirm": "true"})
            assert made.status_code == 200, made.text
            assert http.get("/metrics").status_code == 404  # not on the API's port
        scraped = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text
        assert 'onsale_psp_intents{status="requires_capture"} 1.0' in scraped
        assert ('onsale_http_request_duration_seconds_count{method="POST",'
                'route="/v1/payment_intents",status="200"} 1.0') in scraped
        assert "process_cpu_seconds_total" in scraped
    finally:
        code, out = stop(proc)
    assert code == 0, out
