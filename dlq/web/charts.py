"""Server-side SVG charts: no JavaScript, no library. Every label goes through format_html,
so a queue named like markup is shown as text."""

from datetime import datetime

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from dlq.messages.display import visible

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 28
COLOURS = ("#1f5fbf", "#b3261e", "#1d7a3a", "#8a5a00", "#6a3fb5", "#0f7c86", "#c2185b",
           "#4e5b6e")  # fmt: skip
MAX_SERIES = len(COLOURS)


def _top_series(series: dict[str, list[int]]) -> list[tuple[str, list[int]]]:
    """The busiest queues, their names with every hidden character (control, bidi control)
    as its escape: SVG text and titles take no markup to set them apart."""
    ranked = sorted(series.items(), key=lambda item: (-sum(item[1]), item[0]))
    return [(visible(name), counts) for name, counts in ranked[:MAX_SERIES]]


def _points(counts: list[int], peak: int) -> str:
    step = (WIDTH - LEFT - RIGHT) / max(1, len(counts) - 1)
    span = HEIGHT - TOP - BOTTOM
    return " ".join(
        f"{LEFT + i * step:.1f},{TOP + span - span * n / peak:.1f}" for i, n in enumerate(counts)
    )


def _axes(buckets: list[datetime], peak: int) -> SafeString:
    base, step = HEIGHT - BOTTOM, (WIDTH - LEFT - RIGHT) / max(1, len(buckets) - 1)
    ticks = format_html_join(
        "",
        '<text x="{}" y="{}" text-anchor="middle" class="tick" data-at="{}">{}</text>',
        ((f"{LEFT + i * step:.1f}", HEIGHT - 8, b.isoformat(), f"{b:%H}:00 UTC")
         for i, b in enumerate(buckets) if i % 4 == 0),
    )  # fmt: skip
    return format_html(
        '<line x1="{l}" y1="{b}" x2="{r}" y2="{b}" class="axis"/>'
        '<line x1="{l}" y1="{t}" x2="{l}" y2="{b}" class="axis"/>'
        '<text x="{lx}" y="{ty}" text-anchor="end" class="tick">{peak}</text>'
        '<text x="{lx}" y="{b}" text-anchor="end" class="tick">0</text>{ticks}',
        l=LEFT, r=WIDTH - RIGHT, t=TOP, b=base, lx=LEFT - 6, ty=TOP + 4, peak=peak, ticks=ticks,
    )  # fmt: skip


def _lines(ranked, peak: int) -> SafeString:
    return format_html_join(
        "",
        '<polyline points="{}" fill="none" stroke="{}" stroke-width="2">'
        "<title>{}: {} arrivals</title></polyline>",
        ((_points(counts, peak), COLOURS[i], name, sum(counts))
         for i, (name, counts) in enumerate(ranked)),
    )  # fmt: skip


def _legend(ranked) -> SafeString:
    items = format_html_join(
        "",
        '<li><svg class="swatch" width="12" height="12" aria-hidden="true">'
        '<rect width="12" height="12" fill="{}"/></svg>{} <span class="muted">({})</span></li>',
        ((COLOURS[i], name, sum(counts)) for i, (name, counts) in enumerate(ranked)),
    )
    return format_html('<ul class="legend">{}</ul>', items)


def arrivals_chart(buckets: list[datetime], series: dict[str, list[int]]) -> SafeString:
    """Arrivals per hour, one line per queue (the busiest few), with a title and a text
    description for screen readers, and a legend."""
    ranked = _top_series(series)
    if not ranked:
        return mark_safe('<p class="muted">No arrivals in the last 24 hours.</p>')
    peak = max(1, max(max(counts) for _, counts in ranked))
    summary = "; ".join(f"{name}: {sum(counts)}" for name, counts in ranked)
    svg = format_html(
        '<svg class="chart" viewBox="0 0 {w} {h}" role="img" '
        'aria-labelledby="arrivals-title arrivals-desc">'
        '<title id="arrivals-title">Arrivals per hour, last 24 hours</title>'
        '<desc id="arrivals-desc">Arrivals per queue in the last 24 hours: {summary}. '
        "The busiest hour had {peak}.</desc>{axes}{lines}</svg>",
        w=WIDTH, h=HEIGHT, summary=summary, peak=peak, axes=_axes(buckets, peak),
        lines=_lines(ranked, peak),
    )  # fmt: skip
    # The hours are UTC as served; static/dlq/localtime.js turns them and this note local.
    zone = '<figcaption class="muted">Hours in <span class="chart-zone">UTC</span></figcaption>'
    return format_html("<figure>{}{}{}</figure>", svg, mark_safe(zone), _legend(ranked))


STEP_HEIGHT, BAR_GAP = 160, 6
STEP_COLOURS = {"published": COLOURS[0], "returned": COLOURS[1]}


def _step_bars(i: int, row: dict, slot: float, peak: int) -> SafeString:
    """One step's two bars, side by side, each with its count as a title and a label."""
    span, base = STEP_HEIGHT - TOP - BOTTOM, STEP_HEIGHT - BOTTOM
    width = max(2.0, (slot - BAR_GAP) / 2)
    bars = []
    for j, kind in enumerate(("published", "returned")):
        n, x = row[kind], LEFT + i * slot + BAR_GAP / 2 + j * width
        h = span * n / peak
        bars.append(format_html(
            '<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{c}" class="step-{kind}"'
            ' data-step="{s}" data-n="{n}"><title>step {s}: {n} {kind}</title></rect>'
            '<text x="{tx}" y="{ty}" text-anchor="middle" class="tick">{n}</text>',
            x=f"{x:.1f}", y=f"{base - h:.1f}", w=f"{width:.1f}", h=f"{h:.1f}",
            c=STEP_COLOURS[kind], kind=kind, s=row["step"], n=n, tx=f"{x + width / 2:.1f}",
            ty=f"{base - h - 3:.1f}",
        ))  # fmt: skip
    label = format_html(
        '<text x="{}" y="{}" text-anchor="middle" class="tick">step {}</text>',
        f"{LEFT + (i + 0.5) * slot:.1f}",
        STEP_HEIGHT - 8,
        row["step"],
    )
    return format_html("{}{}", mark_safe("".join(bars)), label)


def steps_chart(rows: list[dict]) -> SafeString:
    """Published and returned messages per step of a replay job (steps.per_step), as bars,
    with a text description for screen readers and a legend."""
    if not rows:
        return mark_safe('<p class="muted" id="steps-chart">No step begun yet.</p>')
    peak = max(1, max(max(r["published"], r["returned"]) for r in rows))
    slot = (WIDTH - LEFT - RIGHT) / max(len(rows), 4)  # a lone canary is not one wide bar
    summary = "; ".join(
        f"step {r['step']}: {r['published']} published, {r['returned']} returned" for r in rows
    )
    base = STEP_HEIGHT - BOTTOM
    svg = format_html(
        '<svg class="chart steps-chart" viewBox="0 0 {w} {h}" role="img" '
        'aria-labelledby="steps-title steps-desc">'
        '<title id="steps-title">Published and returned per step</title>'
        '<desc id="steps-desc">{summary}.</desc>'
        '<line x1="{l}" y1="{b}" x2="{r}" y2="{b}" class="axis"/>'
        '<text x="{lx}" y="{ty}" text-anchor="end" class="tick">{peak}</text>'
        '<text x="{lx}" y="{b}" text-anchor="end" class="tick">0</text>{bars}</svg>',
        w=WIDTH, h=STEP_HEIGHT, summary=summary, l=LEFT, r=WIDTH - RIGHT, b=base, lx=LEFT - 6,
        ty=TOP + 4, peak=peak,
        bars=mark_safe("".join(_step_bars(i, row, slot, peak) for i, row in enumerate(rows))),
    )  # fmt: skip
    legend = format_html_join(
        "",
        '<li><svg class="swatch" width="12" height="12" aria-hidden="true">'
        '<rect width="12" height="12" fill="{}"/></svg>{}</li>',
        ((colour, kind) for kind, colour in STEP_COLOURS.items()),
    )
    return format_html(
        '<figure id="steps-chart">{}<ul class="legend">{}</ul></figure>', svg, legend
    )
