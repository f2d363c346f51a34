"""Accessibility checks run inside a Playwright page: axe-core (vendored) plus a direct contrast check.

axe-core is vendored unchanged under tests/web/vendor/axe-core/ (MPL-2.0, its licence header kept in
axe.min.js, LICENSE and LICENSE-3RD-PARTY.txt beside it). To update it: `npm pack axe-core@VERSION`,
unpack, copy package/axe.min.js, LICENSE and LICENSE-3RD-PARTY.txt there, and change AXE_VERSION.
"""
from pathlib import Path

AXE_VERSION = "4.14.1"
AXE_JS = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"

# The WCAG 2.0/2.1 A and AA rules fail a test; among them the ones the dashboard must pass above all:
# image-alt (img without alt), svg-img-alt and role-img-alt (an svg/element with role=img and no
# accessible name), label (a form field without a label), color-contrast (text below 4.5:1, or 3:1 large).
FAILING_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
MUST_RUN = ["image-alt", "svg-img-alt", "role-img-alt", "label", "color-contrast"]

RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {
    runOnly: {type: 'tag', values: tags},
    resultTypes: ['violations', 'incomplete'],
  });
  const brief = (items) => items.map((rule) => ({
    id: rule.id, impact: rule.impact, help: rule.help, tags: rule.tags,
    nodes: rule.nodes.map((node) => ({
      target: node.target.join(' '), html: node.html.slice(0, 200),
      summary: (node.failureSummary || '').replace(/\\s+/g, ' ').trim(),
    })),
  }));
  return {violations: brief(result.violations), incomplete: brief(result.incomplete),
          ran: result.passes.concat(result.violations, result.incomplete, result.inapplicable).map((r) => r.id)};
}"""

# WCAG 2.x relative luminance and contrast ratio of the computed colours of the page's main text:
# each element with a direct text node inside <main> (or <body>), SVG text (fill) included, against
# the background colours found walking up from it (axe-core leaves SVG text to a person: "incomplete").
# No background image on the way is assumed.
MAIN_TEXT_CONTRAST = """() => {
  const parse = (text) => {
    const m = text.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const parts = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return {r: parts[0], g: parts[1], b: parts[2], a: parts.length > 3 ? parts[3] : 1};
  };
  const lum = (c) => {
    const ch = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  };
  const blend = (top, bottom) => ({
    r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a),
    b: top.b * top.a + bottom.b * (1 - top.a), a: 1,
  });
  const background = (el) => {
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
      const c = parse(getComputedStyle(node).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let colour = {r: 255, g: 255, b: 255, a: 1};  // the canvas
    for (const layer of layers.reverse()) colour = blend(layer, colour);
    return colour;
  };
  const root = document.querySelector('main') || document.body;
  const found = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let text = walker.nextNode(); text; text = walker.nextNode()) {
    const el = text.parentElement;
    if (!text.textContent.trim() || seen.has(el)) continue;
    seen.add(el);
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none') continue;
    // SVG text (a chart's labels) is painted with fill, not color; other SVG content is no text.
    const inSvg = el.closest('svg') !== null;
    if (inSvg && el.tagName.toLowerCase() !== 'text' && el.tagName.toLowerCase() !== 'tspan') continue;
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0) continue;
    const fg0 = parse(inSvg ? style.fill : style.color), bg = background(el);
    if (!fg0) continue;
    const fg = fg0.a < 1 ? blend(fg0, bg) : fg0;
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight, 10) >= 700;
    const large = size >= 24 || (bold && size >= 18.66);
    found.push({
      tag: el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : ''),
      text: text.textContent.trim().slice(0, 40), color: inSvg ? style.fill : style.color,
      background: `rgb(${Math.round(bg.r)}, ${Math.round(bg.g)}, ${Math.round(bg.b)})`,
      ratio: Math.round(((hi + 0.05) / (lo + 0.05)) * 100) / 100, needed: large ? 3 : 4.5,
    });
  }
  return found;
}"""


def run_axe(page):
    """axe-core's findings on the page as it is now: {violations, incomplete, ran}."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    return page.evaluate(RUN_AXE, FAILING_TAGS)


def main_text_contrast(page):
    """Each text-bearing element of the page's main content with its contrast ratio and the one needed."""
    return page.evaluate(MAIN_TEXT_CONTRAST)


def low_contrast(page):
    return [item for item in main_text_contrast(page) if item["ratio"] < item["needed"]]


def describe(label, violations):
    """axe violations as lines a person can act on: rule, impact, what to do, and where."""
    lines = []
    for rule in violations:
        lines.append(f"{label}: [{rule['impact']}] {rule['id']}: {rule['help']}")
        for node in rule["nodes"][:8]:
            lines.append(f"    at {node['target']}: {node['html']}")
            if node["summary"]:
                lines.append(f"       {node['summary']}")
        if len(rule["nodes"]) > 8:
            lines.append(f"    ... and {len(rule['nodes']) - 8} more")
    return lines


def describe_contrast(label, items):
    return [
        f"{label}: contrast {item['ratio']}:1 < {item['needed']}:1 for {item['tag']} {item['text']!r} "
        f"({item['color']} on {item['background']})"
        for item in items
    ]
