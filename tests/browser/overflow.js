// Every block that sticks out of itself sideways without being a scroller (overflow-x auto or scroll), and every
// element whose right edge passes its card's, the page's main column's or the window's (unless a scroller
// between them takes it in). Plotly's own layers are measured as the chart box they sit in.
() => {
  const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + (typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\s+/).join('.') : '');
  const found = [];
  if (document.documentElement.scrollWidth > window.innerWidth + 1) {
    found.push(`page ${document.documentElement.scrollWidth} > window ${window.innerWidth}`);
  }
  for (const e of document.querySelectorAll('main *')) {
    if (e.closest('.plotly-graph-div') && !e.classList.contains('plotly-graph-div')) continue;
    if (e.closest('.visually-hidden')) continue;  // clipped on purpose: for screen readers only
    const style = getComputedStyle(e);
    if (style.display === 'inline' || style.display === 'none' || style.position === 'fixed') continue;
    if (e.clientWidth > 0 && !scrolls(e) && e.scrollWidth > e.clientWidth + 1 && !['INPUT', 'SELECT', 'TEXTAREA'].includes(e.tagName)) {
      found.push(`${name(e)} content ${e.scrollWidth} > box ${e.clientWidth}`);
      continue;
    }
    const box = e.closest('.card, .table-wrap, section, main');
    const outer = box === e ? e.parentElement.closest('.card, .table-wrap, section, main') : box;
    if (!outer) continue;
    let between = e.parentElement, scrolled = false;
    while (between && between !== outer) { if (scrolls(between)) { scrolled = true; break; } between = between.parentElement; }
    if (scrolled || scrolls(outer)) continue;
    const right = e.getBoundingClientRect().right, limit = outer.getBoundingClientRect().right;
    if (e.getBoundingClientRect().width > 0 && right > limit + 1) {
      found.push(`${name(e)} right ${Math.round(right)} > ${name(outer)} ${Math.round(limit)}`);
    }
  }
  return [...new Set(found)].slice(0, 8);
}
