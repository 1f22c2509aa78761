"""What the chart pages weigh over the wire, and when they first paint, behind the production server (issue 38).

    .venv/bin/python benchmarks/page_weight.py [--root DIR] [--collect] [--loads 3] [--no-throttle]

Starts the product as scripts/run does, on a fresh data directory: `manage.py migrate`, `manage.py load_demo`, then
`manage.py serve` (gunicorn, DEBUG off), all run from `--root` (by default this checkout; another checkout of
evalsite, e.g. an older commit from `git archive`, measures that code with this script). `--collect` runs
`manage.py collectstatic` before serve, as scripts/serve did before serve collected by itself.

In headless Chromium (1366 x 900), signed in as the demo user, each page (Compare of the demo's batch, Trends,
Calibration, and Home, which has no chart) is loaded `--loads` times with an empty browser cache, over a link
throttled as Lighthouse's desktop profile throttles it (10 Mbit/s, 40 ms round trip; `--no-throttle` for the
bare loopback). Reported per page: requests, bytes over the wire (the Chrome DevTools protocol's
encodedDataLength: compressed bodies and headers), plotly.js's bytes, encoding and Cache-Control, then the median
of the loads' first contentful paint, load event and charts drawn (every plot's SVG on the page), in ms from
navigation start.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

from bench_django import free_port  # noqa: E402
from load_bench import Server, manage, server_environment  # noqa: E402

from tests.browser.pages import ARGS, CHROMIUM, log_in  # noqa: E402

COLLECTION = "clapnq"
DESKTOP = {"offline": False, "latency": 40, "downloadThroughput": 10 * 1024 * 1024 / 8, "uploadThroughput": 10 * 1024 * 1024 / 8}  # fmt: skip
# ms from navigation start: first contentful paint, the load event, and (once every plot on the page has its SVG)
# the moment of the check; null while the page is not there yet.
TIMES = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  if (!n || n.loadEventEnd === 0) return null;
  const plots = document.querySelectorAll('.plotly-graph-div').length;
  if (document.querySelectorAll('.plotly-graph-div .main-svg').length < plots) return null;
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  return {fcp: paint ? paint.startTime : -1, load: n.loadEventEnd, charts: plots ? performance.now() : -1};
}"""


def start(stack: contextlib.ExitStack, root: Path, collect: bool) -> tuple[str, str, str]:
    data_dir = Path(tempfile.mkdtemp(prefix="evalsite-page-weight-"))
    stack.callback(shutil.rmtree, data_dir, ignore_errors=True)
    port = free_port()
    env = server_environment(data_dir, "", argparse.Namespace(processes=None, threads=None))
    env.pop("EVALSITE_BIND")
    env["PORT"] = str(port)
    started = time.perf_counter()
    manage(env, "migrate", "--noinput", root=root)
    output = manage(env, "load_demo", root=root)
    login = re.search(r"Dashboard login: (\S+) / (\S+)", output)
    if not login:
        raise SystemExit(f"load_demo printed no login:\n{output[-2000:]}")
    if collect:
        manage(env, "collectstatic", "--noinput", "-v0", root=root)
    print(f"code from {root}; migrate + load_demo in {time.perf_counter() - started:.0f} s", flush=True)
    server = Server("serve", env, data_dir / "server.log", root=root)
    stack.callback(server.stop)
    server.start(f"127.0.0.1:{port}")
    base = f"http://127.0.0.1:{port}"
    print(f"manage.py serve ready on {base} in {server.wait_ready(base):.1f} s", flush=True)
    return base, login.group(1), login.group(2)


def pages(page, base: str) -> dict[str, str]:
    page.goto(base + "/runs/")
    batch = page.eval_on_selector_all(
        "table.runs tbody tr td.batch a", "as => as.map(a => a.getAttribute('href'))"
    )
    if not batch:
        raise SystemExit("the demo's runs are not there")
    return {
        "Compare (demo batch)": batch[-1],  # the oldest: the demo's retrieval batch
        "Trends": "/trends/",
        "Calibration": f"/collections/{COLLECTION}/calibration/",
        "Home": "/",
    }


def measure(page, cdp, url: str) -> dict:
    """One load with an empty cache: its requests, the bytes they took, plotly.js's response, its times."""
    requests: dict[str, dict] = {}

    def sent(event: dict) -> None:
        requests[event["requestId"]] = {"url": event["request"]["url"], "bytes": 0}

    def received(event: dict) -> None:
        if event["requestId"] in requests:
            requests[event["requestId"]]["headers"] = {
                k.lower(): v for k, v in event["response"]["headers"].items()
            }

    def finished(event: dict) -> None:
        if event["requestId"] in requests:
            requests[event["requestId"]]["bytes"] = event["encodedDataLength"]

    cdp.on("Network.requestWillBeSent", sent)
    cdp.on("Network.responseReceived", received)
    cdp.on("Network.loadingFinished", finished)
    cdp.send("Network.clearBrowserCache")
    page.goto(url, wait_until="load")
    times = page.wait_for_function(TIMES, timeout=120_000, polling=50).json_value()
    page.wait_for_timeout(200)  # the last loadingFinished events
    for name, handler in (("requestWillBeSent", sent), ("responseReceived", received), ("loadingFinished", finished)):  # fmt: skip
        cdp.remove_listener(f"Network.{name}", handler)
    plotly = [r for r in requests.values() if "/static/plotly/" in r["url"]]
    return {
        **times,
        "requests": len(requests),
        "bytes": sum(r["bytes"] for r in requests.values()),
        "plotly": plotly[0] if plotly else None,
    }


def median(loads: list[dict], key: str) -> str:
    values = [load[key] for load in loads if load[key] >= 0]
    return f"{statistics.median(values):.0f}" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose code serves (this one)")
    parser.add_argument("--collect", action="store_true", help="collectstatic before serve")
    parser.add_argument("--loads", type=int, default=3, help="cold loads per page (the median is printed)")
    parser.add_argument("--no-throttle", action="store_true", help="the bare loopback, no throttled link")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright  # noqa: PLC0415  (only once Chromium is known to be there)

    with contextlib.ExitStack() as stack:
        base, user, password = start(stack, args.root.resolve(), args.collect)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            context = browser.new_context(viewport={"width": 1366, "height": 900})
            page = context.new_page()
            log_in(page, base, user, password)
            cdp = context.new_cdp_session(page)
            cdp.send("Network.enable")
            if not args.no_throttle:
                cdp.send("Network.emulateNetworkConditions", DESKTOP)
            link = "loopback" if args.no_throttle else "10 Mbit/s, 40 ms"
            print(f"\n{args.loads} cold loads a page, 1366 px, {link}:\n")
            print("| page | requests | KB over the wire | plotly.js KB over the wire | plotly.js encoding, "
                  "Cache-Control | first contentful paint ms | load ms | charts drawn ms |")  # fmt: skip
            print("|---|---|---|---|---|---|---|---|")
            for name, path in pages(page, base).items():
                loads = [measure(page, cdp, base + path) for _ in range(args.loads)]
                plotly = loads[0]["plotly"]
                served = "-"
                if plotly:
                    headers = plotly.get("headers", {})
                    served = f"{headers.get('content-encoding', 'none')}, {headers.get('cache-control', '-')}"
                print(
                    f"| {name} | {loads[0]['requests']} | {loads[0]['bytes'] / 1024:,.0f} "
                    f"| {plotly['bytes'] / 1024 if plotly else 0:,.0f} | {served} | {median(loads, 'fcp')} "
                    f"| {median(loads, 'load')} | {median(loads, 'charts')} |"
                )
            browser.close()


if __name__ == "__main__":
    main()
