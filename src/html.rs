//! A self-contained HTML page with tables and plain SVG charts, for
//! `retrace report`: no script, no font, no file or address outside the
//! page, so it opens anywhere, offline, and archives as one file.
//!
//! Every number a chart or table shows is also in a `data-value`
//! attribute (the exact integer or float), so a test can read the page
//! back and compare it with the command's JSON.

use std::fmt::Write as _;

/// Escape text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The colours of series and stack parts, in order (readable on white,
/// distinguishable in grey).
pub const PALETTE: [&str; 13] = [
    "#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00",
    "#b82e2e", "#316395", "#994499", "#22aa99", "#aaaa11",
];

/// A table cell: what it shows, and the exact value behind it.
pub struct Cell {
    /// The text shown.
    pub text: String,
    /// The exact value (`data-value`), for numbers.
    pub value: Option<String>,
    /// Right-aligned (numbers).
    pub numeric: bool,
}

impl Cell {
    /// A text cell.
    pub fn text(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            value: None,
            numeric: false,
        }
    }

    /// A number that does not apply (`-`), aligned with the numbers.
    pub fn missing() -> Cell {
        Cell {
            text: "-".into(),
            value: None,
            numeric: true,
        }
    }

    /// A number shown as `shown`, exactly `value`.
    pub fn number(shown: impl Into<String>, value: impl ToString) -> Cell {
        Cell {
            text: shown.into(),
            value: Some(value.to_string()),
            numeric: true,
        }
    }
}

/// A page under construction.
pub struct Page {
    body: String,
    title: String,
}

impl Page {
    /// An empty page titled `title`.
    pub fn new(title: &str) -> Page {
        Page {
            body: String::new(),
            title: title.to_string(),
        }
    }

    /// A section heading.
    pub fn heading(&mut self, level: u8, text: &str, id: &str) {
        let _ = writeln!(
            self.body,
            "<h{level} id=\"{}\">{}</h{level}>",
            escape(id),
            escape(text)
        );
    }

    /// A paragraph of text (escaped).
    pub fn paragraph(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    /// A table with a header row; `id` names it for tests (`data-table`).
    pub fn table(&mut self, id: &str, header: &[&str], rows: &[Vec<Cell>]) {
        let _ = writeln!(
            self.body,
            "<table data-table=\"{}\"><thead><tr>",
            escape(id)
        );
        for h in header {
            let _ = write!(self.body, "<th>{}</th>", escape(h));
        }
        self.body += "</tr></thead><tbody>\n";
        for row in rows {
            self.body += "<tr>";
            for (c, h) in row.iter().zip(header) {
                let class = if c.numeric { " class=\"n\"" } else { "" };
                let value = c
                    .value
                    .as_ref()
                    .map(|v| format!(" data-key=\"{}\" data-value=\"{}\"", escape(h), escape(v)))
                    .unwrap_or_default();
                let _ = write!(self.body, "<td{class}{value}>{}</td>", escape(&c.text));
            }
            self.body += "</tr>\n";
        }
        self.body += "</tbody></table>\n";
    }

    /// Raw markup (an SVG chart from this module).
    pub fn raw(&mut self, markup: &str) {
        self.body += markup;
        self.body.push('\n');
    }

    /// The whole document.
    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style></head>\n<body>\n{}</body></html>\n",
            escape(&self.title),
            self.body
        )
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:70em;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}\
th,td{border-bottom:1px solid #ddd;padding:0.2em 0.7em;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}\
th{background:#f3f3f3}h1{font-size:1.6em}h2{margin-top:1.6em}\
svg text{font-family:sans-serif;font-size:12px;fill:#222}\
p.note{color:#555;font-size:0.9em}";

/// Horizontal bars, one per label: `(label, value)`.
pub fn bar_chart(id: &str, unit: &str, bars: &[(String, f64)]) -> String {
    let width = 720.0;
    let label_w = 220.0;
    let row = 24.0;
    let height = row * bars.len() as f64 + 10.0;
    let max = bars.iter().map(|b| b.1).fold(0.0_f64, f64::max).max(1e-300);
    let mut svg = format!(
        "<svg data-chart=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" role=\"img\">",
        escape(id)
    );
    for (i, (label, v)) in bars.iter().enumerate() {
        let y = 5.0 + row * i as f64;
        let w = (width - label_w - 130.0) * v / max;
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{label_w}\" y=\"{}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\" data-value=\"{v}\"/>\
             <text x=\"{:.1}\" y=\"{}\">{} {}</text>",
            label_w - 6.0,
            y + 15.0,
            escape(label),
            y + 3.0,
            row - 6.0,
            PALETTE[0],
            label_w + w + 6.0,
            y + 15.0,
            thousands_f(*v),
            escape(unit)
        );
    }
    svg += "</svg>";
    svg
}

/// Horizontal stacked bars, one per label: `(label, value per part)`, the
/// parts named by `parts` in order and coloured by [`PALETTE`] in that
/// order, with a legend of the parts any bar has. Each segment carries its
/// exact value (`data-value`) and its part (`data-part`); each bar its
/// label (`data-bar`). Bars share one scale, so their lengths compare.
pub fn stacked_bar_chart(id: &str, parts: &[&str], bars: &[(String, Vec<f64>)]) -> String {
    let width = 720.0;
    let label_w = 120.0;
    let row = 26.0;
    let used: Vec<usize> = (0..parts.len())
        .filter(|&k| bars.iter().any(|(_, v)| v.get(k).is_some_and(|&x| x > 0.0)))
        .collect();
    let legend_rows = used.len().div_ceil(6) as f64;
    let height = row * bars.len() as f64 + 20.0 * legend_rows + 16.0;
    let max = bars
        .iter()
        .map(|(_, v)| v.iter().sum::<f64>())
        .fold(0.0_f64, f64::max)
        .max(1e-300);
    let scale = (width - label_w - 20.0) / max;
    let mut svg = format!(
        "<svg data-chart=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" role=\"img\">",
        escape(id)
    );
    for (i, (label, values)) in bars.iter().enumerate() {
        let y = 5.0 + row * i as f64;
        let _ = write!(
            svg,
            "<g data-bar=\"{}\"><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            escape(label),
            label_w - 6.0,
            y + 15.0,
            escape(label)
        );
        let mut x = label_w;
        for (k, (part, &v)) in parts.iter().zip(values).enumerate() {
            let w = v * scale;
            let _ = write!(
                svg,
                "<rect x=\"{x:.2}\" y=\"{}\" width=\"{w:.2}\" height=\"{}\" fill=\"{}\" data-part=\"{}\" data-value=\"{v}\"><title>{}: {}</title></rect>",
                y + 3.0,
                row - 8.0,
                PALETTE[k % PALETTE.len()],
                escape(part),
                escape(part),
                thousands_f(v)
            );
            x += w;
        }
        svg += "</g>";
    }
    let top = 10.0 + row * bars.len() as f64;
    for (j, &k) in used.iter().enumerate() {
        let (lx, ly) = (
            label_w + 100.0 * (j % 6) as f64,
            top + 20.0 * (j / 6) as f64,
        );
        let _ = write!(
            svg,
            "<rect x=\"{lx}\" y=\"{ly}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            PALETTE[k % PALETTE.len()],
            lx + 16.0,
            ly + 11.0,
            escape(parts[k])
        );
    }
    svg += "</svg>";
    svg
}

/// A line chart: x values (shown as their labels, evenly spaced), one
/// series per `(name, y values)`.
pub fn line_chart(
    id: &str,
    x_title: &str,
    y_title: &str,
    xs: &[String],
    series: &[(String, Vec<f64>)],
) -> String {
    let (width, height) = (720.0, 340.0);
    let (left, right, top, bottom) = (110.0, 20.0, 20.0, 60.0);
    let legend_h = 20.0 * series.len() as f64;
    let all = series.iter().flat_map(|s| s.1.iter().copied());
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (lo, hi) = if lo.is_finite() && hi > lo {
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    } else if lo.is_finite() {
        (lo * 0.95, lo * 1.05 + 1.0)
    } else {
        (0.0, 1.0)
    };
    let plot_w = width - left - right;
    let plot_h = height - top - bottom;
    let x_at = |i: usize| {
        if xs.len() < 2 {
            left + plot_w / 2.0
        } else {
            left + plot_w * i as f64 / (xs.len() - 1) as f64
        }
    };
    let y_at = |v: f64| top + plot_h * (1.0 - (v - lo) / (hi - lo));
    let mut svg = format!(
        "<svg data-chart=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" role=\"img\">",
        escape(id),
        height + legend_h
    );
    // Axes and grid: five horizontal lines with their values.
    for k in 0..=4 {
        let v = lo + (hi - lo) * k as f64 / 4.0;
        let y = y_at(v);
        let _ = write!(
            svg,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            width - right,
            left - 6.0,
            y + 4.0,
            thousands_f(v.round())
        );
    }
    for (i, x) in xs.iter().enumerate() {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x_at(i),
            height - bottom + 18.0,
            escape(x)
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text><text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">{}</text>",
        left + plot_w / 2.0,
        height - bottom + 40.0,
        escape(x_title),
        top + plot_h / 2.0,
        top + plot_h / 2.0,
        escape(y_title)
    );
    for (j, (name, ys)) in series.iter().enumerate() {
        let colour = PALETTE[j % PALETTE.len()];
        let points: Vec<String> = ys
            .iter()
            .enumerate()
            .map(|(i, &v)| format!("{:.1},{:.1}", x_at(i), y_at(v)))
            .collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            points.join(" ")
        );
        for (i, &v) in ys.iter().enumerate() {
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{colour}\" data-series=\"{}\" data-x=\"{}\" data-value=\"{v}\"><title>{}</title></circle>",
                x_at(i),
                y_at(v),
                escape(name),
                escape(&xs[i]),
                thousands_f(v)
            );
        }
        let y = height + 20.0 * j as f64;
        let _ = write!(
            svg,
            "<rect x=\"{left}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{colour}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            y - 2.0,
            left + 16.0,
            y + 9.0,
            escape(name)
        );
    }
    svg += "</svg>";
    svg
}

/// A number with thousands separators (`12,345,678`), or with three
/// decimals when it is not whole.
pub fn thousands_f(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e18 {
        let n = v.abs() as u64;
        let s = crate::cmd::common::thousands(n);
        if v < 0.0 {
            format!("-{s}")
        } else {
            s
        }
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_everywhere() {
        let mut p = Page::new("a<b");
        p.table("t", &["x\"y"], &[vec![Cell::number("<1>", 1)]]);
        p.paragraph("&");
        let html = p.finish();
        assert!(html.contains("<title>a&lt;b</title>"));
        assert!(html.contains("&lt;1&gt;") && html.contains("x&quot;y") && html.contains("&amp;"));
        assert!(!html.contains("http:") || html.contains("xmlns=\"http://www.w3.org/2000/svg\""));
    }

    #[test]
    fn charts_carry_their_exact_values() {
        let svg = bar_chart(
            "c",
            "cycles",
            &[("rocket".into(), 12.0), ("ideal".into(), 6.0)],
        );
        assert!(svg.contains("data-value=\"12\"") && svg.contains("data-value=\"6\""));
        let svg = stacked_bar_chart(
            "s",
            &["base", "<x>"],
            &[
                ("rocket".into(), vec![3.0, 1.5]),
                ("ideal".into(), vec![2.0, 0.0]),
            ],
        );
        assert!(
            svg.contains("data-part=\"&lt;x&gt;\" data-value=\"1.5\""),
            "{svg}"
        );
        assert_eq!(svg.matches("data-value").count(), 4);
        let svg = line_chart(
            "l",
            "x",
            "y",
            &["1".into(), "2".into()],
            &[("s".into(), vec![3.0, 4.5])],
        );
        assert!(svg.contains("data-value=\"4.5\"") && svg.contains("data-x=\"2\""));
        assert_eq!(thousands_f(1234567.0), "1,234,567");
        assert_eq!(thousands_f(-3.0), "-3");
    }
}
