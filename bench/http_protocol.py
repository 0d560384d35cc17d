"""onsale's bounded, corked HTTP protocol beside uvicorn's own, on one tiny endpoint.

    .venv/bin/python bench/http_protocol.py            # needs wrk (apt-get install wrk)
    .venv/bin/python bench/http_protocol.py --duration 10 --connections 64
    .venv/bin/python bench/http_protocol.py --smoke    # 1 s each

Serves the same minimal Starlette JSON endpoint twice, one server at a time, on
uvicorn + httptools + uvloop: first with uvicorn's ``HttpToolsProtocol`` (the
ceiling: no limits, no cork), then through ``onsale.kernel.http_server.uvicorn_config``
(every limit of docs/security.md#bounded-http on, writes corked). wrk drives
each with keep-alive connections; a second onsale run pipelines 16 requests per
connection. Prints requests/s and p99 for each and the ratio to the ceiling
(figure lines: bench/figures.py).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure

SERVER = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
sys.path.insert(0, {root!r})

async def poll(request):
    return JSONResponse({{"state": "waiting", "position": 1234, "eta_seconds": 56}})

app = Starlette(routes=[Route("/", poll)])
if sys.argv[1] == "uvicorn":
    config = uvicorn.Config(app, port={port}, http="httptools", loop="uvloop",
                            log_level="warning", access_log=False, lifespan="off")
else:
    from onsale.kernel.http_limits import HttpLimits
    from onsale.kernel.http_server import uvicorn_config
    config = uvicorn_config(app, "127.0.0.1", {port}, HttpLimits(), loop="uvloop",
                            log_level="warning", access_log=False, lifespan="off")
uvicorn.Server(config).run()
"""

PIPELINE_LUA = """
init = function(args)
  local r = {}
  for i = 1, 16 do r[i] = wrk.format(nil, "/") end
  req = table.concat(r)
end
request = function() return req end
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_listening(port: int) -> None:
    for _ in range(200):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"the server on port {port} did not start")


def run_wrk(port: int, args: argparse.Namespace, script: str | None = None) -> tuple[float, str]:
    cmd = ["wrk", "-t", "1", "-c", str(args.connections), "-d", f"{args.duration}s",
           "--latency", f"http://127.0.0.1:{port}/"]
    if script:
        cmd[1:1] = ["-s", script]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"99%\s+(\S+)", out)
    return rps, p99.group(1) if p99 else "?"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(kind: str, args: argparse.Namespace,
            script: str | None = None) -> tuple[float, str, float]:
    """(requests/s, p99, server CPU microseconds per request)."""
    port = free_port()
    root = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.Popen([sys.executable, "-c", SERVER.format(root=root, port=port), kind])
    try:
        wait_listening(port)
        run_wrk(port, argparse.Namespace(connections=args.connections, duration=1))  # warm
        cpu = cpu_seconds(proc.pid)
        rps, p99 = run_wrk(port, args, script)
        used = cpu_seconds(proc.pid) - cpu
        return rps, p99, used / (rps * args.duration) * 1e6
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--smoke", action="store_true",
                   help="1 s per server: does it run (bench/smoke.py)")
    args = p.parse_args()
    if args.smoke:
        args.duration, args.connections = 1, 16
    if shutil.which("wrk") is None:
        raise SystemExit("bench/http_protocol.py needs wrk, which is not installed: "
                         "apt-get install wrk (the Debian package is wrk)")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(PIPELINE_LUA)
    rows = [("uvicorn HttpToolsProtocol (ceiling)", measure("uvicorn", args)),
            ("onsale bounded + corked", measure("onsale", args)),
            ("onsale, 16 pipelined per connection", measure("onsale", args, f.name))]
    print(f"http protocol: one endpoint, {args.connections} keep-alive connections, "
          f"{args.duration}s each, wrk; ratio = requests/s against the ceiling, "
          "CPU = server CPU per request")
    base_rps, _, base_cpu = rows[0][1]
    for name, (rps, p99, cpu) in rows:
        print(f"  {name:<37} {rps:9,.0f} req/s  p99 {p99:>8}  CPU {cpu:5.1f} us  "
              f"ratio {rps / base_rps:.2f}  CPU ratio {cpu / base_cpu:.2f}")
    (_, (rps, _, cpu)), (_, (piped, _, piped_cpu)) = rows[1], rows[2]
    figure("http.uvicorn_rps", round(base_rps, 1), "/s")
    figure("http.onsale_rps", round(rps, 1), "/s", ceiling=round(base_rps, 1))
    figure("http.onsale_pipelined_rps", round(piped, 1), "/s", ceiling=round(base_rps, 1))
    figure("http.uvicorn_cpu_per_request", round(base_cpu, 2), "us")
    figure("http.onsale_cpu_per_request", round(cpu, 2), "us", ceiling=round(base_cpu, 2))
    figure("http.onsale_pipelined_cpu_per_request", round(piped_cpu, 2), "us",
           ceiling=round(base_cpu, 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
