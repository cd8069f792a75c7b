//! A small SVG line-chart writer for the lab's plots: linear or log axes with labelled
//! ticks, one polyline (with point markers) per series, a legend. Zero values on a log
//! axis are drawn on a separate "0" line at the bottom instead of being dropped (with a
//! floor, values at or below it share that line, labelled "≤ floor").

use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear,
    /// Linear, with ticks only at whole numbers (threads).
    Whole,
    Log,
    /// Log, not reaching below this value: values at or below it sit on the bottom line,
    /// so that one fault in a million iterations does not stretch the axis to 1e-6.
    LogFloor(f64),
}

impl Scale {
    fn is_log(self) -> bool {
        matches!(self, Scale::Log | Scale::LogFloor(_))
    }

    /// Values at or below this sit on the bottom line of a log axis.
    fn floor(self) -> f64 {
        match self {
            Scale::LogFloor(f) => f,
            _ => 0.0,
        }
    }
}

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    pub color: &'static str,
    /// SVG `stroke-dasharray`, or None for a solid line.
    pub dash: Option<&'static str>,
    pub points: Vec<(f64, f64)>,
}

/// An axis: its label (with unit), scale and tick-label format.
pub struct Axis {
    pub label: String,
    pub scale: Scale,
    pub format: fn(f64) -> String,
}

pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

/// Width of the plot area's canvas without the legend.
const PLOT_W: f64 = 710.0;
const H: f64 = 540.0;
const LEFT: f64 = 90.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;
/// Pixels between the "0" line and the lowest decade of a log axis.
const ZERO_GAP: f64 = 22.0;

use super::escape_markup as esc;

struct Mapping {
    scale: Scale,
    lo: f64,
    hi: f64,
    /// Pixel range (from, to) for [lo, hi].
    px: (f64, f64),
    /// Pixel of the "0" line on a log axis that has zero values.
    zero_px: Option<f64>,
}

impl Mapping {
    fn new(scale: Scale, values: &[f64], px: (f64, f64), zero_line: bool) -> Self {
        let usable: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && (!scale.is_log() || *v > scale.floor()))
            .collect();
        let has_zero = scale.is_log() && values.iter().any(|v| *v <= scale.floor());
        let (mut lo, mut hi) = usable
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        if !lo.is_finite() {
            (lo, hi) = if scale.is_log() {
                (1.0, 10.0)
            } else {
                (0.0, 1.0)
            };
        }
        match scale {
            Scale::Log | Scale::LogFloor(_) => {
                lo = 10f64.powf(lo.log10().floor());
                hi = 10f64.powf(hi.log10().ceil());
                if hi <= lo {
                    hi = lo * 10.0;
                }
            }
            Scale::Linear | Scale::Whole => {
                if zero_line {
                    lo = lo.min(0.0);
                }
                if hi <= lo {
                    hi = lo + 1.0;
                }
                let step = step_of(scale, hi - lo);
                lo = (lo / step).floor() * step;
                hi = (hi / step).ceil() * step;
            }
        }
        let (mut from, to) = px;
        let mut zero_px = None;
        if has_zero {
            zero_px = Some(from);
            from += if to < from { -ZERO_GAP } else { ZERO_GAP };
        }
        Mapping {
            scale,
            lo,
            hi,
            px: (from, to),
            zero_px,
        }
    }

    fn map(&self, v: f64) -> f64 {
        if self.scale.is_log() && v <= self.scale.floor() {
            return self.zero_px.unwrap_or(self.px.0);
        }
        let t = if self.scale.is_log() {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.px.0 + t * (self.px.1 - self.px.0)
    }

    fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Log | Scale::LogFloor(_) => {
                let (a, b) = (
                    self.lo.log10().round() as i32,
                    self.hi.log10().round() as i32,
                );
                let decades = b - a;
                let mut t = Vec::new();
                for e in a..=b {
                    let base = 10f64.powi(e);
                    t.push(base);
                    if decades <= 2 && e < b {
                        t.push(2.0 * base);
                        t.push(5.0 * base);
                    }
                }
                // The floor itself is the bottom line's label ("≤ floor").
                t.retain(|&v| v > self.scale.floor() * (1.0 + 1e-9));
                t
            }
            Scale::Linear | Scale::Whole => {
                let step = step_of(self.scale, self.hi - self.lo);
                let mut t = Vec::new();
                let mut v = self.lo;
                while v <= self.hi + step * 1e-9 {
                    t.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                    v += step;
                }
                t
            }
        }
    }
}

/// The tick step of a linear axis spanning `range`: about six ticks, whole numbers only
/// on a [`Scale::Whole`] axis.
fn step_of(scale: Scale, range: f64) -> f64 {
    let step = nice_step(range / 6.0);
    if scale == Scale::Whole {
        step.max(1.0)
    } else {
        step
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * p
}

/// What an interactive page adds to a series: `data-*` attributes (the page's toggles
/// hide every series whose attribute is switched off), one hover text per point, and an
/// interval per point drawn as a whisker.
#[derive(Clone, Debug, Default)]
pub struct SeriesMeta {
    pub attrs: Vec<(&'static str, String)>,
    pub tips: Vec<String>,
    pub bands: Vec<Option<(f64, f64)>>,
}

/// The interactive extras of a chart: per series (by index), and vertical marks at x
/// values with a label (cliffs).
#[derive(Clone, Debug, Default)]
pub struct Extras {
    pub series: Vec<SeriesMeta>,
    pub marks: Vec<(f64, String)>,
    /// Named positions on the x axis (categories): drawn instead of the axis's ticks,
    /// with half a step of room on either side.
    pub x_labels: Vec<(f64, String)>,
}

/// The legend's lines: the first series of each distinct label, with the `data-*`
/// attributes every series of that label shares (so that a toggle greys the line only
/// when all of them are off).
fn legend_entries(chart: &Chart, extras: &Extras) -> Vec<(usize, Vec<(&'static str, String)>)> {
    let attrs_of = |i: usize| extras.series.get(i).map_or(&[][..], |m| &m.attrs[..]);
    let mut out: Vec<(usize, Vec<(&'static str, String)>)> = Vec::new();
    for (i, series) in chart.series.iter().enumerate() {
        match out
            .iter_mut()
            .find(|(j, _)| chart.series[*j].label == series.label)
        {
            Some((_, shared)) => shared.retain(|a| attrs_of(i).contains(a)),
            None => out.push((i, attrs_of(i).to_vec())),
        }
    }
    out
}

/// Renders the chart as a standalone SVG document.
pub fn render(chart: &Chart) -> String {
    render_with(chart, &Extras::default())
}

/// [`render`] with interactive extras (for report.html; plain SVG files use none).
pub fn render_with(chart: &Chart, extras: &Extras) -> String {
    let xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(extras.x_labels.iter().flat_map(|(x, _)| [x - 0.5, x + 0.5]))
        .collect();
    let ys: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(
            extras
                .series
                .iter()
                .flat_map(|m| m.bands.iter().flatten().flat_map(|b| [b.0, b.1])),
        )
        .collect();
    // The legend gets as much room as its longest label needs (≈ 7.5 px a character).
    let longest = chart
        .series
        .iter()
        .map(|s| s.label.chars().count())
        .max()
        .unwrap_or(0);
    let legend_w = 70.0 + 7.5 * longest as f64;
    // One legend line per distinct label (series that share a label, such as one
    // allocator's cells in a per-variant chart, share its line).
    let legend = legend_entries(chart, extras);
    let rows = legend.len().max(1) as f64;
    let h = H.max(TOP + 20.0 + rows * 20.0);
    let w = PLOT_W + legend_w;
    let (x0, x1, y0, y1) = (LEFT, PLOT_W, h - BOTTOM, TOP);
    let xm = Mapping::new(chart.x.scale, &xs, (x0, x1), false);
    let ym = Mapping::new(chart.y.scale, &ys, (y0, y1), true);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="28" font-size="17" font-weight="bold" text-anchor="middle">{}</text>"#,
        (x0 + x1) / 2.0,
        esc(&chart.title)
    );
    // Grid and ticks.
    let ticks: Vec<(f64, String)> = if extras.x_labels.is_empty() {
        xm.ticks()
            .into_iter()
            .map(|t| (t, (chart.x.format)(t)))
            .collect()
    } else {
        extras.x_labels.clone()
    };
    // Category names wider than their slot (about 7.5 px a character at this font size)
    // alternate between two rows, so that neighbours do not run into each other.
    let stagger = !extras.x_labels.is_empty() && {
        let slot = (xm.map(1.0) - xm.map(0.0)).abs();
        ticks
            .iter()
            .any(|(_, l)| 7.5 * l.chars().count() as f64 > slot - 6.0)
    };
    for (k, (t, label)) in ticks.into_iter().enumerate() {
        let x = xm.map(t);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{y0}" stroke="#e3e3e3"/>"##
        );
        let row = if stagger && k % 2 == 1 { 33.0 } else { 18.0 };
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            y0 + row,
            esc(&label)
        );
    }
    for t in ym.ticks() {
        let y = ym.map(t);
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#e3e3e3"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            x0 - 8.0,
            y + 4.0,
            esc(&(chart.y.format)(t))
        );
    }
    if let Some(zy) = ym.zero_px {
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{zy:.1}" x2="{x1}" y2="{zy:.1}" stroke="#bbbbbb" stroke-dasharray="3,3"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            x0 - 8.0,
            zy + 4.0,
            match chart.y.scale {
                Scale::LogFloor(f) => esc(&format!("≤ {}", (chart.y.format)(f))),
                _ => "0".to_string(),
            }
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{x0}" y="{y1}" width="{}" height="{}" fill="none" stroke="#444444"/>"##,
        x1 - x0,
        y0 - y1
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (x0 + x1) / 2.0,
        // Below a second row of category names when there is one.
        if stagger { h - 6.0 } else { h - 22.0 },
        esc(&chart.x.label)
    );
    let _ = writeln!(
        s,
        r#"<text x="22" y="{}" text-anchor="middle" transform="rotate(-90 22 {})">{}</text>"#,
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0,
        esc(&chart.y.label)
    );
    // Marks at (nearly) the same size are one line with their labels joined; labels go
    // into the first of four rows where they do not run into the one before, and a
    // label that fits none is left to the line's hover text.
    let mut marks: Vec<(f64, Vec<&str>)> = Vec::new();
    let mut sorted: Vec<(f64, &str)> = extras
        .marks
        .iter()
        .map(|(x, l)| (xm.map(*x), l.as_str()))
        .collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (px, label) in sorted {
        match marks.last_mut() {
            Some((last, labels)) if px - *last < 3.0 => {
                if !labels.contains(&label) {
                    labels.push(label);
                }
            }
            _ => marks.push((px, vec![label])),
        }
    }
    const LABEL_ROWS: usize = 4;
    let mut row_end = [f64::NEG_INFINITY; LABEL_ROWS];
    for (px, labels) in &marks {
        let text = match labels.len() {
            1 => labels[0].to_string(),
            n => format!("{} (+{})", labels[0], n - 1),
        };
        // About 6.2 px per character at 11 px.
        let width = 6.2 * text.chars().count() as f64;
        let x = px + 4.0;
        let row = (0..LABEL_ROWS).find(|&r| x > row_end[r] + 6.0 && x + width <= x1);
        let label = match row {
            Some(r) => {
                row_end[r] = x + width;
                format!(
                    r##"<text x="{x:.1}" y="{}" fill="#c0392b" font-size="11">{}</text>"##,
                    y1 + 14.0 + 13.0 * r as f64,
                    esc(&text)
                )
            }
            None => String::new(),
        };
        let _ = writeln!(
            s,
            r##"<g class="mark"><title>{}</title><line x1="{px:.1}" y1="{y1}" x2="{px:.1}" y2="{y0}" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="6,4"/>{label}</g>"##,
            esc(&labels.join("; "))
        );
    }
    // Series.
    let no_meta = SeriesMeta::default();
    for (i, series) in chart.series.iter().enumerate() {
        let meta = extras.series.get(i).unwrap_or(&no_meta);
        let attrs: String = meta
            .attrs
            .iter()
            .map(|(k, v)| format!(r#" data-{k}="{}""#, esc(v)))
            .collect();
        if !attrs.is_empty() {
            let _ = writeln!(s, r#"<g class="series"{attrs}>"#);
        }
        let kept: Vec<(usize, f64, f64)> = series
            .points
            .iter()
            .enumerate()
            .filter(|(_, (x, y))| x.is_finite() && y.is_finite())
            .map(|(k, &(x, y))| (k, x, y))
            .collect();
        for &(k, x, _) in &kept {
            if let Some(Some((lo, hi))) = meta.bands.get(k) {
                let px = xm.map(x);
                let _ = writeln!(
                    s,
                    r#"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="{}" stroke-width="1.5" opacity="0.7"/>"#,
                    ym.map(*lo),
                    ym.map(*hi),
                    series.color
                );
            }
        }
        let pts: Vec<String> = kept
            .iter()
            .map(|&(_, x, y)| format!("{:.1},{:.1}", xm.map(x), ym.map(y)))
            .collect();
        let dash = series
            .dash
            .map(|d| format!(r#" stroke-dasharray="{d}" stroke-linecap="round""#))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
            series.color,
            pts.join(" ")
        );
        for (p, &(k, _, _)) in pts.iter().zip(&kept) {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            match meta.tips.get(k) {
                Some(tip) => {
                    let _ = writeln!(
                        s,
                        r#"<circle cx="{x}" cy="{y}" r="4" fill="{}"><title>{}</title></circle>"#,
                        series.color,
                        esc(tip)
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        r#"<circle cx="{x}" cy="{y}" r="2.5" fill="{}"/>"#,
                        series.color
                    );
                }
            }
        }
        if !attrs.is_empty() {
            s.push_str("</g>\n");
        }
    }
    // Legend.
    let lx = x1 + 16.0;
    for (row, (i, attrs)) in legend.iter().enumerate() {
        let series = &chart.series[*i];
        let y = y1 + 8.0 + row as f64 * 20.0;
        let attrs: String = attrs
            .iter()
            .map(|(k, v)| format!(r#" data-{k}="{}""#, esc(v)))
            .collect();
        if !attrs.is_empty() {
            let _ = writeln!(s, r#"<g class="legend"{attrs}>"#);
        }
        let dash = series
            .dash
            .map(|d| format!(r#" stroke-dasharray="{d}" stroke-linecap="round""#))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="2.5"{dash}/>"#,
            lx + 34.0,
            series.color
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            lx + 42.0,
            y + 4.0,
            esc(&series.label)
        );
        if !attrs.is_empty() {
            s.push_str("</g>\n");
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(scale: Scale, ys: &[f64]) -> Chart {
        Chart {
            title: "t <&>".into(),
            x: Axis {
                label: "x".into(),
                scale: Scale::Log,
                format: |v| format!("{v}"),
            },
            y: Axis {
                label: "y".into(),
                scale,
                format: |v| format!("{v}"),
            },
            series: vec![Series {
                label: "a".into(),
                color: "#123456",
                dash: Some("4,2"),
                points: ys
                    .iter()
                    .enumerate()
                    .map(|(i, &y)| (10f64.powi(i as i32 + 1), y))
                    .collect(),
            }],
        }
    }

    /// Cliff marks at one size share a line; labels close together go to separate rows
    /// instead of printing over each other; every mark keeps all its labels as hover text.
    #[test]
    fn cliff_marks_at_one_size_merge_and_close_labels_take_separate_rows() {
        let c = chart(Scale::Log, &[1.0, 5.0, 50.0, 5000.0]);
        let marks = vec![
            (1000.0, "jemalloc in-place".to_string()),
            (1000.0, "jemalloc fused".to_string()),
            (1100.0, "system in-place".to_string()),
            (100.0, "system out-of-place".to_string()),
        ];
        let svg = render_with(
            &c,
            &Extras {
                marks,
                ..Extras::default()
            },
        );
        assert_eq!(svg.matches(r#"<g class="mark">"#).count(), 3, "{svg}");
        assert!(svg.contains("<title>jemalloc in-place; jemalloc fused</title>"));
        assert!(svg.contains(">jemalloc in-place (+1)</text>"), "{svg}");
        // The two labels near 1,000 and 1,100 elements are on different rows.
        let y_of = |label: &str| -> String {
            let end = svg.find(&format!(">{label}</text>")).unwrap();
            let start = svg[..end].rfind("y=\"").unwrap() + 3;
            svg[start..start + svg[start..].find('"').unwrap()].to_string()
        };
        assert_ne!(y_of("jemalloc in-place (+1)"), y_of("system in-place"));
    }

    #[test]
    fn renders_well_formed_svg_with_every_point() {
        let svg = render(&chart(Scale::Log, &[0.0, 5.0, 50.0, 5000.0]));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains("t &lt;&amp;&gt;"));
        assert!(
            svg.contains(">0</text>"),
            "a zero line for zero values on a log axis"
        );
        assert_eq!(svg.matches("<polyline").count(), 1);
    }

    #[test]
    fn series_that_share_a_label_share_a_legend_line_and_its_common_attributes() {
        let mut c = chart(Scale::Linear, &[1.0, 2.0]);
        let mut twin = c.series[0].clone();
        twin.points = vec![(10.0, 3.0)];
        c.series.push(twin);
        let meta = |v: &str| SeriesMeta {
            attrs: vec![("alloc", "a".into()), ("variant", v.into())],
            tips: vec!["tip".into(); 2],
            bands: vec![Some((0.5, 1.5)), None],
        };
        let extras = Extras {
            series: vec![meta("in-place"), meta("out-of-place")],
            ..Extras::default()
        };
        let svg = render_with(&c, &extras);
        assert_eq!(svg.matches(">a</text>").count(), 1, "{svg}");
        assert_eq!(
            svg.matches(r#"<g class="legend" data-alloc="a">"#).count(),
            1
        );
        assert_eq!(svg.matches(r#"<g class="series""#).count(), 2);
        assert_eq!(svg.matches("<title>tip</title>").count(), 3);
    }

    #[test]
    fn a_quote_in_a_name_stays_inside_its_attribute() {
        let c = chart(Scale::Linear, &[1.0, 2.0]);
        let extras = Extras {
            series: vec![SeriesMeta {
                attrs: vec![("alloc", "lib\"x.so".into())],
                tips: vec!["it's".into(); 2],
                bands: vec![None, None],
            }],
            ..Extras::default()
        };
        let svg = render_with(&c, &extras);
        assert!(svg.contains(r#"data-alloc="lib&quot;x.so""#), "{svg}");
        assert!(
            !svg.contains(r#"lib"x"#) && svg.contains("it&#39;s"),
            "{svg}"
        );
    }

    #[test]
    fn larger_values_are_drawn_higher() {
        for scale in [Scale::Linear, Scale::Log] {
            let m = Mapping::new(scale, &[1.0, 1000.0], (500.0, 50.0), true);
            assert!(m.map(10.0) < m.map(2.0));
            assert!(m.map(1000.0) >= 50.0 && m.map(1.0) <= 500.0);
        }
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(13.0), 20.0);
        assert_eq!(nice_step(420.0), 500.0);
    }
}
