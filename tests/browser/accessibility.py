"""axe-core (the accessibility engine) in a page of a browser test: injected from tests/browser/axe/node_modules
(`scripts/setup test` installs it from the npm registry, a test-only tool), run against WCAG 2.0 and 2.1, levels
A and AA. No Django here."""

from __future__ import annotations

from pathlib import Path

AXE = Path(__file__).with_name("axe") / "node_modules" / "axe-core" / "axe.min.js"
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("critical", "serious")
# Runs axe over the whole document: per rule, its impact, how many elements, and (only when `detail`: working out
# every element's selector made the tour's axe runs take 70% longer) the first of them.
RUN = """async ([tags, detail]) => {
  const result = await axe.run(document,
    {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations'], selectors: detail, ancestry: false,
     xpath: false, elementRef: false});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    targets: detail ? v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\\n')[1]) : []}));
}"""


def axe_missing() -> str | None:
    if not AXE.exists():
        return f"{AXE} is missing (scripts/setup test installs axe-core with npm)"
    return None


def axe_violations(page, failing: tuple[str, ...] = BLOCKING) -> list[dict]:
    """The page's WCAG 2.1 A and AA violations as axe reports them: dicts of id, impact, help, count, targets (the
    first elements, named only when a violation of a `failing` impact is there to be told)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # Evaluated through the browser's debugging protocol, which the page's Content-Security-Policy does not
        # govern (a <script> tag added to the page would be refused by it, as any inline script is).
        page.evaluate(AXE.read_text() + "\n;undefined")
    violations: list[dict] = page.evaluate(RUN, [WCAG_AA, False])
    if any(v["impact"] in failing for v in violations):  # again, naming the elements
        violations = page.evaluate(RUN, [WCAG_AA, True])
    return violations


def blocking(violations: list[dict]) -> list[dict]:
    """The critical and serious ones: what the browser suite allows none of."""
    return [v for v in violations if v["impact"] in BLOCKING]


def counts(violations: list[dict]) -> dict[str, int]:
    """Elements in violation by impact, e.g. {"critical": 42, "serious": 3}."""
    found: dict[str, int] = {}
    for violation in violations:
        impact = violation["impact"] or "unknown"
        found[impact] = found.get(impact, 0) + violation["count"]
    return found
