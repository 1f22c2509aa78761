"""What every browser test (and benchmarks/first_day.py) does with a page: launch Chromium, open a page that records
its errors, watch its requests, assert it is clean, sign in, measure overflow. No Django here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

LOCAL_HOSTS = {"localhost", "127.0.0.1"}
PHONE = {"width": 390, "height": 844}
# Debian's Chromium (apt), never `playwright install`, and how it is launched.
CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# A function for page.evaluate: what sticks out sideways on the page, as short descriptions (empty: nothing).
# Its comment lines say what it checks.
CLIPPED = "\n".join(
    line
    for line in (Path(__file__).with_name("overflow.js")).read_text().splitlines()
    if not line.startswith("//")
)


@contextmanager
def open_page(browser, viewport: dict[str, int]) -> Iterator:
    """A page in a browser context of its own at this size; `page.errors` collects its JavaScript errors and the
    console's error messages (a Content-Security-Policy violation among them). The context is closed afterwards.
    Under the pages' policy (no 'unsafe-eval'), `page.wait_for_function` takes a function ("() => ..."): a bare
    expression is compiled with eval inside the page, and refused."""
    context = browser.new_context(viewport=viewport, device_scale_factor=1)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.errors = errors
        yield page
    finally:
        context.close()


def watch_requests(page) -> list[str]:
    """Every URL the page requests, to assert that nothing leaves the live server (no CDN, no fonts...)."""
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    return urls


def is_local(url: str) -> bool:
    return urlsplit(url).hostname in LOCAL_HOSTS


def assert_clean(page, urls: list[str], where: str) -> None:
    """No JavaScript error or failed load on the page so far, and no request to a non-local host."""
    assert page.errors == [], f"{where}: {page.errors}"
    remote = [u for u in urls if urlsplit(u).scheme not in ("data", "blob", "about") and not is_local(u)]
    assert remote == [], f"{where}: requests to non-local hosts {remote}"


def log_in(page, base: str, username: str, password: str, screenshot=None) -> None:
    page.goto(f"{base}/")
    page.wait_for_url(re.compile(r"/accounts/login/"))  # the dashboard asks to sign in first
    if screenshot:
        screenshot(page, "01-login")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("form.stacked button[type=submit]")
    page.wait_for_url(f"{base}/")
    assert page.locator("header .user").inner_text() == username


def overflow(page) -> dict:
    """How far the page is wider than the window, and the first elements sticking out (tables scroll inside)."""
    return page.evaluate(
        "({scroll: document.documentElement.scrollWidth, inner: window.innerWidth,"
        " wide: Array.from(document.querySelectorAll('body *')).filter(e => {"
        "   const r = e.getBoundingClientRect(); return r.right > window.innerWidth + 1 && !e.closest('.table-wrap');"
        " }).slice(0, 5).map(e => e.tagName + (e.className ? '.' + e.className : ''))})"
    )
