"""A new user's first day in a real browser (issue 28's "Numbers"): every page of the README's dashboard tour, an
import with preview, a launch followed to its comparison and a judged target, in headless Chromium at 800 and
1366 px, each page checked for console errors and sideways overflow and timed.

    .venv/bin/python benchmarks/first_day.py [--widths 800,1366] [--budget-ms 1000] [--shots /tmp/firstday-shots]
                                             [--url http://127.0.0.1:8000 --user demo --password ...]

Without `--url` it starts the product as a user does (scripts/run): a fresh data directory (EVALSITE_DATA_DIR in a
temporary folder), `manage.py migrate`, `manage.py load_demo` (its printed login is the one used), then
`manage.py serve` (gunicorn, DEBUG off) with PORT set to a free port and EVALSITE_OUTBOUND_ALLOW=127.0.0.1, so
that the target can reach the stub search service this script serves on 127.0.0.1. With `--url`, the running
server's tenant must hold the demo collection (clapnq) and allow 127.0.0.1 in EVALSITE_OUTBOUND_ALLOW.

At each width, in a browser context of its own: log in; load each tour page twice (Home, Collection, a golden
entry, Documents, Calibration, Generate questions, Review queue, Launch and its answers tab, Runs, a run, a run's
question, Compare of two runs and of the demo's batch, the rankings of a pair, Trends, an answer run and question,
Targets, New target); upload demo/formats/clapnq-sample.csv on the collection's Import page, read the preview's
rows, confirm; launch a retrieval evaluation (two configurations) and follow the job page until the comparison
opens; create an `http` target on the stub, launch it beside the built-in full-text search and open its comparison.
Every page visited is checked: console and page errors, the overflow check of tests/browser/overflow.js, and its
times from the Navigation Timing entry (navigation start to the load event; server = request to first byte) and
to charts rendered (every plotly.js `newPlot` on the page resolved). The first load is reported apart; the second
(warm: browser cache, server caches) is the one the budget applies to. Pages reached by a POST have one load.
Prints a table, then the slowest pages; screenshots of slow or broken pages go to `--shots`. Exits 1 if any page
has a console error, an overflow, or a warm load (or charts) over `--budget-ms`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

from bench_django import free_port  # noqa: E402
from load_bench import Server, manage, server_environment  # noqa: E402

from tests.browser.pages import ARGS, CHROMIUM, CLIPPED, log_in, open_page  # noqa: E402

COLLECTION = "clapnq"
SAMPLE = ROOT / "demo" / "formats" / "clapnq-sample.csv"

# Before any script runs: count plotly.js's newPlot calls and note when the last one has resolved (drawn), so
# "charts rendered" is read from the page's own clock, not from a poll.
CHART_CLOCK = """(() => {
  const charts = window.__charts = {calls: 0, pending: 0, drawn: 0};
  let plotly;
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => plotly, set: value => {
    plotly = value;
    const newPlot = value && value.newPlot;
    if (!newPlot) return;
    value.newPlot = function (...args) {
      charts.calls += 1; charts.pending += 1;
      const done = () => { charts.pending -= 1; charts.drawn = performance.now(); };
      const result = newPlot.apply(this, args);
      Promise.resolve(result).then(done, done);
      return result;
    };
  }});
})();"""
# Navigation Timing of the page, once its load event has ended; charts: the time the last one was drawn, -1 for a
# page without charts.
TIMES = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  if (!n || n.loadEventEnd === 0 || document.readyState !== 'complete') return null;
  const c = window.__charts || {calls: 0, pending: 0};
  const drawn = document.querySelectorAll('.js-plotly-plot .main-svg').length;
  if (c.pending > 0 || (document.querySelector('.plotly-graph-div') && !drawn)) return null;
  return {load: n.loadEventEnd, server: n.responseStart - n.requestStart, dom: n.domContentLoadedEventEnd,
          kb: n.transferSize / 1024, body_kb: n.decodedBodySize / 1024, charts: c.calls ? c.drawn : -1};
}"""


@dataclass
class Visit:
    page: str
    width: int
    first: dict | None = None
    warm: dict | None = None
    errors: list[str] = field(default_factory=list)
    overflow: list[str] = field(default_factory=list)

    def worst_ms(self) -> float:
        times = self.warm or self.first or {}
        return max(times.get("load", 0.0), times.get("charts", 0.0))

    def over(self, budget: float) -> bool:
        return self.warm is not None and self.worst_ms() > budget


class Tour:
    """One browser page at one width; each visit measured, checked, and kept."""

    def __init__(self, page, base: str, width: int, shots: Path, budget: float) -> None:
        self.page, self.base, self.width, self.shots, self.budget = page, base, width, shots, budget
        self.visits: list[Visit] = []

    def measure(self, visit: Visit, number: int) -> dict:
        handle = self.page.wait_for_function(TIMES, timeout=60_000, polling=50)
        times = handle.json_value()
        if number == 0:
            visit.first = times
            visit.overflow = self.page.evaluate(CLIPPED)
        else:
            visit.warm = times
        return times

    def record(self, name: str, visit: Visit, errors_before: int) -> Visit:
        visit.errors = self.page.errors[errors_before:]
        self.visits.append(visit)
        if visit.errors or visit.overflow or visit.over(self.budget):
            self.shot(name)
        return visit

    def shot(self, name: str) -> None:
        self.shots.mkdir(parents=True, exist_ok=True)
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        self.page.screenshot(path=str(self.shots / f"{slug}-{self.width}.png"), full_page=True)

    def visit(self, name: str, path: str, loads: int = 2) -> Visit:
        """GET the page `loads` times (the first reported apart), checked after the first."""
        visit, before = Visit(name, self.width), len(self.page.errors)
        for number in range(loads):
            response = self.page.goto(self.base + path, wait_until="load")
            if response is None or not response.ok:
                self.page.errors.append(f"{path}: HTTP {response and response.status}")
                break
            self.measure(visit, number)
        return self.record(name, visit, before)

    def arrived(self, name: str, url_pattern: str, timeout: float = 60_000) -> Visit:
        """A page reached by a click (a POST's answer, a redirect): one load, measured and checked."""
        visit, before = Visit(name, self.width), len(self.page.errors)
        self.page.wait_for_url(re.compile(url_pattern), timeout=timeout, wait_until="load")
        self.measure(visit, 0)
        return self.record(name, visit, before)

    def links(self, path: str, selector: str) -> list[str]:
        self.page.goto(self.base + path)
        hrefs: list[str] = self.page.eval_on_selector_all(
            selector, "as => as.map(a => a.getAttribute('href'))"
        )
        return hrefs


def discover(tour: Tour) -> dict[str, str]:
    """The tour's pages (name -> path), found on the dashboard as a user finds them."""
    tour.page.goto(tour.base + "/runs/")
    found = tour.page.eval_on_selector_all(
        "table.runs tbody tr",
        """trs => trs.map(tr => ({id: tr.querySelector('input[name=run]').value,
            kind: tr.querySelector('.kind').textContent.trim(),
            batch: (tr.querySelector('td.batch a') || {}).getAttribute?.('href') || ''}))""",
    )
    retrieval = [r for r in found if r["kind"] == "retrieval"]
    answers = [r for r in found if r["kind"] == "answers"]
    if len(retrieval) < 2 or not answers:
        raise SystemExit(f"the demo's runs are not there (runs page: {found[:3]})")
    entry = tour.links(f"/collections/{COLLECTION}/", "table a[href*='/golden/']")
    entry = [h for h in entry if re.search(r"/golden/[0-9a-f-]{36}/$", h)]
    a, b = retrieval[-1]["id"], retrieval[-2]["id"]  # the oldest: the demo's batch
    return {
        "Home": "/",
        "Collection": f"/collections/{COLLECTION}/",
        "Golden entry": entry[0],
        "Documents": f"/collections/{COLLECTION}/documents/",
        "Calibration": f"/collections/{COLLECTION}/calibration/",
        "Generate questions": f"/collections/{COLLECTION}/golden/generate/",
        "Review queue": f"/collections/{COLLECTION}/golden/review/",
        "Launch": "/launch/",
        "Launch: answers": "/launch/answers/",
        "Runs": "/runs/",
        "Run detail": f"/runs/{a}/",
        "Run question": f"/runs/{a}/questions/1/",
        "Compare (2 runs)": f"/compare/?run={a}&run={b}",
        "Compare (demo batch)": retrieval[-1]["batch"],
        "Rankings of a pair": f"/compare/rankings/?a={a}&b={b}",
        "Trends": "/trends/",
        "Answer run": f"/runs/{answers[0]['id']}/",
        "Answer question": f"/runs/{answers[0]['id']}/questions/1/",
        "Compare (answer batch)": answers[0]["batch"],
        "Targets": "/targets/",
        "New target": "/targets/new/",
    }


def import_with_preview(tour: Tour) -> str:
    page, before = tour.page, len(tour.page.errors)
    tour.visit("Import", f"/collections/{COLLECTION}/golden/import/", loads=2)
    page.set_input_files("input[name=file]", str(SAMPLE))
    page.click("button:has-text('Preview')")
    tour.arrived("Import: preview", r"/golden/import/")
    page.wait_for_selector("section.preview")
    rows = page.locator("section.preview table.preview-rows tbody tr").count()
    counts = {k: page.inner_text(f"section.preview dd.{k}") for k in ("created", "updated", "unchanged")}
    page.click("section.preview button[type=submit]")
    tour.arrived("Import: confirmed", rf"/collections/{COLLECTION}/$")
    message = page.inner_text(".messages") if page.locator(".messages").count() else "(no message)"
    if len(page.errors) > before:
        return f"import: errors {page.errors[before:]}"
    return f"import: preview of {rows} rows ({counts}); {message.strip()[:100]}"


def launch(tour: Tour, name: str, rows: list[int], target: str | None = None) -> tuple[str, float]:
    """Tick `rows` of Launch's configurations (the row whose system is `target`, if given), start, follow the
    job page until the comparison opens; the comparison's path and the seconds it took."""
    page = tour.page
    page.goto(tour.base + "/launch/")
    boxes = page.locator("table.configs tbody tr input[name$='-enabled']")
    if target:
        rows = [*rows, *[i for i in range(boxes.count())
                         if page.locator(f"select[name=configs-{i}-target]").input_value() == target]]  # fmt: skip
    for i in range(boxes.count()):
        boxes.nth(i).set_checked(i in rows)
    started = time.perf_counter()
    page.click("button:has-text('Start evaluation')")
    tour.arrived(f"{name}: job page", r"/jobs/[0-9a-f-]+/$")
    tour.arrived(f"{name}: comparison opened", r"/compare/\?", timeout=300_000)
    seconds = time.perf_counter() - started
    path = page.url.removeprefix(tour.base)
    tour.visit(f"{name}: comparison", path)
    return path, seconds


def create_target(tour: Tour, name: str, stub_url: str) -> None:
    page = tour.page
    page.goto(tour.base + "/targets/new/")
    page.fill("input[name=name]", name)
    page.select_option("select[name=kind]", "http")
    page.fill("input[name=base_url]", stub_url)
    page.fill("textarea[name=options]", json.dumps({"request_template": {"query": "{{query}}", "limit": "{{top_k}}"},
                                                    "response_mapping": {"ids": "hits[].id"}}))  # fmt: skip
    page.click("button:has-text('Create target')")
    tour.arrived("Target: created", rf"/targets/{name}/$")
    page.fill("input[name=query]", "who invented the printing press")
    page.click("button:has-text('Send one query')")
    page.wait_for_selector(".test-result")
    if "OK:" not in page.inner_text(".test-result"):
        page.errors.append(f"target test query: {page.inner_text('.test-result')[:200]}")
    tour.visit("Target", f"/targets/{name}/")


def first_day(browser, base: str, user: str, password: str, width: int, args, stub_url: str) -> list[Visit]:
    with open_page(browser, {"width": width, "height": 900}) as page:
        page.add_init_script(CHART_CLOCK)
        tour = Tour(page, base, width, args.shots, args.budget_ms)
        log_in(page, base, user, password)
        for name, path in discover(tour).items():
            tour.visit(name, path)
        notes = [import_with_preview(tour)]
        _, seconds = launch(tour, "Launch", rows=[0, 1])
        notes.append(f"launch of 2 configurations: comparison open after {seconds:.1f} s")
        target = f"first-day-{width}-{int(time.time())}"
        create_target(tour, target, stub_url)
        _, seconds = launch(tour, "Target launch", rows=[0], target=target)
        notes.append(f"launch of target {target} beside full text: comparison open after {seconds:.1f} s")
        print(f"[{width} px] " + "; ".join(notes), flush=True)
        return tour.visits


class StubSearch(BaseHTTPRequestHandler):
    """The system a first-day user evaluates: a JSON search service answering any query with the demo's
    passages p1..p<limit>, in order (a poor system, but a real HTTP round trip)."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        limit = int(body.get("limit") or 10)
        reply = json.dumps({"hits": [{"id": f"p{n}"} for n in range(1, limit + 1)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args) -> None:  # quiet
        pass


def stub_search(stack: contextlib.ExitStack) -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StubSearch)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stack.callback(server.server_close)
    stack.callback(server.shutdown)
    return f"http://127.0.0.1:{server.server_port}/search"


def start_demo(stack: contextlib.ExitStack) -> tuple[str, str, str]:
    """The product as scripts/run starts it, on a fresh data directory; (base URL, user, password)."""
    data_dir = Path(tempfile.mkdtemp(prefix="evalsite-first-day-"))
    stack.callback(shutil.rmtree, data_dir, ignore_errors=True)
    port = free_port()
    env = server_environment(data_dir, "", argparse.Namespace(processes=None, threads=None))
    env.pop("EVALSITE_BIND")
    env.update({"PORT": str(port), "EVALSITE_OUTBOUND_ALLOW": "127.0.0.1"})
    started = time.perf_counter()
    manage(env, "migrate", "--noinput")
    output = manage(env, "load_demo")
    login = re.search(r"Dashboard login: (\S+) / (\S+)", output)
    if not login:
        raise SystemExit(f"load_demo printed no login:\n{output[-2000:]}")
    print(
        f"data directory {data_dir}; migrate + load_demo in {time.perf_counter() - started:.0f} s", flush=True
    )
    server = Server("serve", env, data_dir / "server.log")
    stack.callback(server.stop)
    server.start(f"127.0.0.1:{port}")
    base = f"http://127.0.0.1:{port}"
    print(f"manage.py serve ready on {base} in {server.wait_ready(base):.1f} s", flush=True)
    return base, login.group(1), login.group(2)


def ms(times: dict | None, key: str) -> str:
    if not times or times.get(key, -1) < 0:
        return "-"
    return f"{times[key]:.0f}"


def report(visits: list[Visit], budget: float) -> list[str]:
    """Print the table and the slowest pages; the failures."""
    print("\n| page | width | first load ms | warm load ms | warm charts ms | warm server ms | KB (HTML) "
          "| console errors | overflow |\n|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    for v in visits:
        first, warm = v.first, v.warm
        print(f"| {v.page} | {v.width} | {ms(first, 'load')} | {ms(warm, 'load')} | {ms(warm or first, 'charts')} "
              f"| {ms(warm or first, 'server')} | {ms(warm or first, 'body_kb')} | {len(v.errors) or ''} "
              f"| {'; '.join(v.overflow)} |")  # fmt: skip
    print("\nSlowest pages (warm, or the one load of a page reached by a POST; load or charts, the later):")
    for v in sorted(visits, key=Visit.worst_ms, reverse=True)[:6]:
        print(f"  {v.worst_ms():6.0f} ms  {v.page} at {v.width} px")
    failures = []
    for v in visits:
        where = f"{v.page} at {v.width} px"
        failures += [f"{where}: console: {e[:300]}" for e in v.errors]
        failures += [f"{where}: overflow: {o}" for o in v.overflow]
        if v.over(budget):
            failures.append(f"{where}: warm {v.worst_ms():.0f} ms > {budget:.0f} ms")
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="800,1366", help="window widths in px, comma-separated")
    parser.add_argument("--budget-ms", type=float, default=1000.0, help="the most a warm page may take")
    parser.add_argument("--shots", type=Path, default=Path("/tmp/firstday-shots"), help="screenshots go here")
    parser.add_argument("--url", help="a running server (instead of starting the demo)")
    parser.add_argument("--user", default="demo")
    parser.add_argument("--password")
    args = parser.parse_args()
    if args.url and not args.password:
        parser.error("--url needs --password (the one load_demo printed)")
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright  # noqa: PLC0415  (only once Chromium is known to be there)

    with contextlib.ExitStack() as stack:
        base, user, password = (
            (args.url.rstrip("/"), args.user, args.password) if args.url else start_demo(stack)
        )
        stub_url = stub_search(stack)
        visits: list[Visit] = []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            for width in [int(w) for w in args.widths.split(",")]:
                visits += first_day(browser, base, user, password, width, args, stub_url)
            browser.close()
        failures = report(visits, args.budget_ms)
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"\nevery page clean, no overflow, every warm page under {args.budget_ms:.0f} ms")


if __name__ == "__main__":
    main()
