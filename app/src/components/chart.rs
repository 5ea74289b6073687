//! Bar charts drawn on the server as SVG (seen before any script runs): a value axis with round
//! ticks, time ticks labelled in the viewer's zone, each bar's values in a `<title>` shown on
//! hover, and the whole chart in words for assistive technology. Failures are red and hatched,
//! so they stand apart without colour too. The overview's volume and errors ([`VolumeChart`])
//! and a destination's success rate and latency ([`AttemptCharts`]) are drawn with [`BarChart`].

use crate::model::{AttemptBar, DestinationSeries, Volume, VolumeBar};
use leptos::prelude::*;

/// One part of a bar: its value and its CSS class; hatched ones are failures.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub value: f64,
    pub class: &'static str,
    pub hatched: bool,
}

/// One period of a chart: its tick label (none: no tick), what hovering it says, its parts.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub tick: Option<String>,
    pub title: String,
    pub segments: Vec<Segment>,
}

/// How a column's segments are drawn: on top of each other (parts of a whole), or each from
/// the axis, the later ones in front (p95 behind p50).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Stacked,
    Overlaid,
}

/// A round step for about four ticks up to `max`: 1, 2 or 5 times a power of ten, at least 1.
pub fn tick_step(max: f64) -> f64 {
    let raw = (max / 4.0).max(1.0);
    let power = 10f64.powi(raw.log10().floor() as i32);
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| raw <= m * power)
        .unwrap_or(10.0);
    step * power
}

/// A tick's value as the axis shows it: `40`, `2.5k`, `120k`.
pub fn tick_text(value: f64, unit: &str) -> String {
    let number = if value >= 10_000.0 {
        format!("{}k", value / 1000.0)
    } else if value >= 1000.0 && value % 1000.0 != 0.0 {
        format!("{:.1}k", value / 1000.0)
    } else if value >= 1000.0 {
        format!("{}k", value / 1000.0)
    } else {
        format!("{value}")
    };
    format!("{number}{unit}")
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 200.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 24.0;

/// A bar chart of `columns`, oldest first. `id` makes its element ids unique on the page;
/// `title` names it and `description` says all of it in words; the value axis goes from 0 to
/// `max` (or a round number above the tallest column), each tick followed by `unit`.
#[component]
pub fn BarChart(
    id: &'static str,
    title: String,
    description: String,
    columns: Vec<Column>,
    layout: Layout,
    unit: &'static str,
    #[prop(optional_no_strip)] max: Option<f64>,
    /// (CSS class, hatched, text) of each kind of segment.
    legend: Vec<(&'static str, bool, String)>,
) -> impl IntoView {
    let (top, step) = scale(&columns, layout, max);
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let y = move |v: f64| y_of(v, top);
    let slot = plot_w / columns.len().max(1) as f64;
    let bar = slot * 0.72;
    let hatch = format!("{id}-hatch");
    // A hatched segment is filled by the chart's pattern through the `fill` attribute (an inline
    // `style` would break the page's `style-src 'self'`), under a class of its own that no
    // stylesheet rule fills: a rule's colour would win over the attribute.
    let paint_of = {
        let hatch = hatch.clone();
        move |s: &Segment| match s.hatched {
            true => ("hatched-bar", Some(format!("url(#{hatch})"))),
            false => (s.class, None),
        }
    };
    let bars = columns
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let x = LEFT + i as f64 * slot;
            let mut base = 0.0;
            let rects = c
                .segments
                .iter()
                .filter(|s| s.value > 0.0)
                .map(|s| {
                    let (from, to) = match layout {
                        Layout::Stacked => {
                            base += s.value;
                            (base - s.value, base)
                        }
                        Layout::Overlaid => (0.0, s.value),
                    };
                    let (class, fill) = paint_of(s);
                    view! {
                        <rect class=class fill=fill x=x + (slot - bar) / 2.0 y=y(to)
                            width=bar height=(y(from) - y(to)).max(0.5)/>
                    }
                })
                .collect_view();
            let tick = c.tick.map(|label| {
                view! {
                    <line class="axis" x1=x + slot / 2.0 x2=x + slot / 2.0 y1=TOP + plot_h y2=TOP + plot_h + 4.0/>
                    <text x=x + slot / 2.0 y=HEIGHT - 6.0 text-anchor="middle">{label}</text>
                }
            });
            view! {
                <g class="column" data-testid="chart-column">
                    <title>{c.title}</title>
                    <rect class="hit" x=x y=TOP width=slot height=plot_h/>
                    {rects}
                    {tick}
                </g>
            }
        })
        .collect_view();
    let described_by = format!("{id}-description");
    view! {
        <figure class="chart-figure" data-testid=id>
            <svg class="chart" viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img" aria-label=title
                aria-describedby=described_by.clone()>
                <defs>
                    <pattern id=hatch.clone() width="6" height="6" patternUnits="userSpaceOnUse">
                        <rect class="hatch-ground" width="6" height="6"/>
                        <path class="hatch-line" d="M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2"/>
                    </pattern>
                </defs>
                {ticks(top, step, unit)}
                <line class="axis" x1=LEFT x2=LEFT y1=TOP y2=TOP + plot_h/>
                <line class="axis" x1=LEFT x2=WIDTH - RIGHT y1=TOP + plot_h y2=TOP + plot_h/>
                {bars}
            </svg>
            <figcaption class="legend">
                {legend.into_iter().map(|(class, hatched, text)| view! {
                    <span class=format!("swatch {class}{}", if hatched { " hatched" } else { "" })></span>{text}" "
                }).collect_view()}
            </figcaption>
            <p class="visually-hidden" id=described_by>{description}</p>
        </figure>
    }
}

/// The value axis: its top (`max`, or a round number above the tallest column) and its step.
fn scale(columns: &[Column], layout: Layout, max: Option<f64>) -> (f64, f64) {
    let tallest = columns
        .iter()
        .map(|c| match layout {
            Layout::Stacked => c.segments.iter().map(|s| s.value).sum::<f64>(),
            Layout::Overlaid => c.segments.iter().map(|s| s.value).fold(0.0, f64::max),
        })
        .fold(0.0, f64::max);
    match max {
        Some(max) => (max, tick_step(max)),
        None => {
            let step = tick_step(tallest);
            (((tallest / step).ceil() * step).max(step), step)
        }
    }
}

/// Where value `v` is drawn on an axis from 0 to `top`.
fn y_of(v: f64, top: f64) -> f64 {
    let plot_h = HEIGHT - TOP - BOTTOM;
    TOP + plot_h - (v / top).min(1.0) * plot_h
}

/// The value axis's ticks and grid lines, every `step` up to `top`.
fn ticks(top: f64, step: f64, unit: &'static str) -> impl IntoView {
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= top + step / 1000.0)
        .map(|v| {
            let y = y_of(v, top);
            view! {
                <g class="tick">
                    <line class="grid" x1=LEFT x2=WIDTH - RIGHT y1=y y2=y/>
                    <text x=LEFT - 6.0 y=y + 3.5 text-anchor="end">{tick_text(v, unit)}</text>
                </g>
            }
        })
        .collect_view()
}

/// `12 processed, 0 skipped, 3 failed`.
fn counts(b: &VolumeBar) -> String {
    format!(
        "{} processed, {} skipped, {} failed",
        b.processed, b.skipped, b.failed
    )
}

/// When a period of a series is, for a title: `13:00–14:00`, `13:00–now` (hours), the label
/// itself (days).
fn period(labels: &[String], i: usize, hours: bool) -> String {
    match (hours, labels.get(i + 1)) {
        (false, _) => labels[i].clone(),
        (true, Some(next)) => format!("{}–{next}", labels[i]),
        (true, None) => format!("{}–now", labels[i]),
    }
}

/// The overview's chart: deliveries senders made by status, by hour over 24 hours or by day over
/// 7 days (`days`), in the viewer's zone; replays are not counted.
#[component]
pub fn VolumeChart(volume: Volume, days: bool) -> impl IntoView {
    let bars = if days { volume.days } else { volume.hours };
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let span = if days {
        "by day over the last 7 days"
    } else {
        "by hour over the last 24 hours"
    };
    let busy: Vec<String> = bars
        .iter()
        .enumerate()
        .filter(|(_, b)| b.total() > 0)
        .map(|(i, b)| format!("{}: {}", period(&labels, i, !days), counts(b)))
        .collect();
    let description = format!(
        "Deliveries from senders {span}, times in {}. {}",
        volume.zone,
        if busy.is_empty() {
            "None in this period.".to_string()
        } else {
            format!(
                "{}; none in the other {}.",
                busy.join("; "),
                if days { "days" } else { "hours" }
            )
        }
    );
    let columns = bars
        .iter()
        .enumerate()
        .map(|(i, b)| Column {
            // Every day is labelled; every third hour.
            tick: (days || i.is_multiple_of(3)).then(|| b.label.clone()),
            title: format!("{}: {}", period(&labels, i, !days), counts(b)),
            segments: vec![
                Segment {
                    value: b.processed as f64,
                    class: "bar-processed",
                    hatched: false,
                },
                Segment {
                    value: b.skipped as f64,
                    class: "bar-skipped",
                    hatched: false,
                },
                Segment {
                    value: b.failed as f64,
                    class: "bar-failed",
                    hatched: true,
                },
            ],
        })
        .collect();
    view! {
        <BarChart id=if days { "volume-days" } else { "volume-hours" }
            title=format!("Deliveries {span} ({})", volume.zone) description columns
            layout=Layout::Stacked unit=""
            legend=vec![
                ("processed", false, "processed".to_string()),
                ("skipped", false, "skipped".to_string()),
                ("failed", true, "failed".to_string()),
            ]/>
    }
}

/// `38 of 40 attempts answered 2xx (95.0 %)`.
fn success_words(b: &AttemptBar) -> String {
    match b.success_percent() {
        None => "no attempts".to_string(),
        Some(p) => format!(
            "{} of {} attempts answered 2xx ({p:.1} %)",
            b.succeeded, b.attempts
        ),
    }
}

/// `p50 120 ms, p95 340 ms`.
fn latency_words(b: &AttemptBar) -> String {
    match (b.p50_ms, b.p95_ms) {
        (Some(p50), Some(p95)) => {
            format!("p50 {p50} ms, p95 {p95} ms over {} attempts", b.attempts)
        }
        _ => "no attempts".to_string(),
    }
}

/// One chart of a destination's attempts by hour: its heading, its element id, what it shows
/// (the start of its title and of its description), each hour in words and as segments, and
/// its axis and legend.
struct HourlyFigure {
    heading: &'static str,
    id: &'static str,
    title: &'static str,
    shows: &'static str,
    words: fn(&AttemptBar) -> String,
    segments: fn(&AttemptBar) -> Vec<Segment>,
    layout: Layout,
    unit: &'static str,
    max: Option<f64>,
    /// (CSS class, hatched, text) of each kind of segment.
    legend: [(&'static str, bool, &'static str); 2],
}

/// The share answered 2xx; the rest red and hatched.
const SUCCESS: HourlyFigure = HourlyFigure {
    heading: "Success rate by hour",
    id: "success-hours",
    title: "Attempts answered 2xx",
    shows: "Share of attempts answered 2xx",
    words: success_words,
    segments: |b| {
        let ok = b.success_percent();
        vec![
            Segment {
                value: ok.unwrap_or(0.0),
                class: "bar-processed",
                hatched: false,
            },
            Segment {
                value: ok.map_or(0.0, |p| 100.0 - p),
                class: "bar-failed",
                hatched: true,
            },
        ]
    },
    layout: Layout::Stacked,
    unit: " %",
    max: Some(100.0),
    legend: [
        ("processed", false, "answered 2xx"),
        ("failed", true, "failed"),
    ],
};

/// The median and the 95th percentile of the durations, p95 behind p50.
const LATENCY: HourlyFigure = HourlyFigure {
    heading: "Latency by hour",
    id: "latency-hours",
    title: "Attempt durations",
    shows: "Median (p50) and 95th percentile (p95) of attempt durations",
    words: latency_words,
    segments: |b| {
        vec![
            Segment {
                value: b.p95_ms.unwrap_or(0) as f64,
                class: "bar-p95",
                hatched: false,
            },
            Segment {
                value: b.p50_ms.unwrap_or(0) as f64,
                class: "bar-p50",
                hatched: false,
            },
        ]
    },
    layout: Layout::Overlaid,
    unit: " ms",
    max: None,
    legend: [
        ("p50", false, "median (p50)"),
        ("p95", false, "95th percentile (p95)"),
    ],
};

/// `figure` of the hours of `series`, under its heading; every third hour labelled.
#[component]
fn HourlyPanel(figure: HourlyFigure, series: DestinationSeries) -> impl IntoView {
    let hours = &series.hours;
    let labels: Vec<String> = hours.iter().map(|b| b.label.clone()).collect();
    let title_of =
        |i: usize, b: &AttemptBar| format!("{}: {}", period(&labels, i, true), (figure.words)(b));
    let busy: Vec<String> = hours
        .iter()
        .enumerate()
        .filter(|(_, b)| b.attempts > 0)
        .map(|(i, b)| title_of(i, b))
        .collect();
    let said = if busy.is_empty() {
        "No attempts in the last 24 hours.".to_string()
    } else {
        format!("{}; no attempts in the other hours.", busy.join("; "))
    };
    let columns = hours
        .iter()
        .enumerate()
        .map(|(i, b)| Column {
            tick: i.is_multiple_of(3).then(|| labels[i].clone()),
            title: title_of(i, b),
            segments: (figure.segments)(b),
        })
        .collect();
    let zone = &series.zone;
    view! {
        <div>
            <h3>{figure.heading}</h3>
            <BarChart id=figure.id title=format!("{} by hour over the last 24 hours ({zone})", figure.title)
                description=format!("{} by hour, times in {zone}. {said}", figure.shows)
                columns layout=figure.layout unit=figure.unit max=figure.max
                legend=figure.legend.map(|(class, hatched, text)| (class, hatched, text.to_string())).to_vec()/>
        </div>
    }
}

/// A destination's attempts by hour over 24 hours, in the viewer's zone: the share answered 2xx
/// (the rest red and hatched) and the median and 95th percentile of their durations.
#[component]
pub fn AttemptCharts(series: DestinationSeries) -> impl IntoView {
    let partial = series.partial_since.clone().map(|since| {
        let at = since.get(11..16).unwrap_or(&since).to_string();
        view! {
            <p class="muted" data-testid="series-partial">"More attempts than one reading takes (10,000): the hours before "
                {at} " are partial."</p>
        }
    });
    view! {
        <div class="grid2" data-testid="destination-charts">
            <HourlyPanel figure=SUCCESS series=series.clone()/>
            <HourlyPanel figure=LATENCY series/>
        </div>
        {partial}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_axes_have_round_ticks() {
        assert_eq!(tick_step(0.0), 1.0);
        assert_eq!(tick_step(3.0), 1.0);
        assert_eq!(tick_step(37.0), 10.0);
        assert_eq!(tick_step(100.0), 50.0);
        assert_eq!(tick_step(1234.0), 500.0);
        assert_eq!(tick_text(2500.0, ""), "2.5k");
        assert_eq!(tick_text(40.0, " ms"), "40 ms");
        assert_eq!(tick_text(20_000.0, ""), "20k");
    }
}
