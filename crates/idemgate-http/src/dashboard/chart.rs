//! Charts the server draws as inline SVG: pure functions of a series, so a page needs no
//! script and no asset, and a test reads exactly what is drawn. Each chart says what it
//! shows in its `<title>` and `aria-label`, so a screen reader gets it too.

use std::fmt::Write as _;

use super::esc;

/// The drawing's size in SVG units (it scales down with the page).
const WIDTH: u32 = 360;
const HEIGHT: u32 = 120;
/// Room left of the plot for the scale, above it, and below it for the time axis.
const LEFT: u32 = 40;
const PAD: u32 = 8;
const BOTTOM: u32 = 20;
/// The plot's height.
const PLOT: u32 = HEIGHT - PAD - BOTTOM;
const GOOD: &str = "#2a7d2a";
const BAD: &str = "#b22222";
const LINE: &str = "#1f4e9c";

/// The drawing's start: its title, the plot's frame, the scale from 0 to `max`, and the
/// time axis from `axis[0]` to `axis[1]`.
fn open(label: &str, max: &str, axis: [&str; 2]) -> String {
    let label = esc(label);
    let bottom = HEIGHT - BOTTOM;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" \
         height=\"{HEIGHT}\" role=\"img\" aria-label=\"{label}\"><title>{label}</title>\
         <rect x=\"{LEFT}\" y=\"{PAD}\" width=\"{}\" height=\"{PLOT}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>\
         <text x=\"{}\" y=\"{bottom}\" font-size=\"10\" text-anchor=\"end\">0</text>\
         <text x=\"{LEFT}\" y=\"{}\" font-size=\"10\">{}</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
        WIDTH - LEFT - PAD,
        LEFT - 4,
        PAD + 10,
        esc(max),
        LEFT - 4,
        HEIGHT - 6,
        esc(axis[0]),
        WIDTH - PAD,
        HEIGHT - 6,
        esc(axis[1]),
    )
}

/// The plot's width per bucket, and the y of `value` on a scale up to `max`.
fn plot(n: usize) -> f64 {
    f64::from(WIDTH - LEFT - PAD) / n.max(1) as f64
}

fn height_of(value: u64, max: u64) -> f64 {
    if max == 0 { 0.0 } else { f64::from(PLOT) * value as f64 / max as f64 }
}

/// One bar per bucket: its `good` count (green) with its `bad` count (red) stacked on top,
/// scaled to the tallest bar, over a time axis from `axis[0]` to `axis[1]`. A bucket of
/// `(0, 0)` draws nothing.
pub(super) fn stacked_bars(label: &str, axis: [&str; 2], buckets: &[(u64, u64)]) -> String {
    let max = buckets.iter().map(|(good, bad)| good + bad).max().unwrap_or(0);
    let step = plot(buckets.len());
    let bottom = f64::from(HEIGHT - BOTTOM);
    let mut svg = open(label, &max.to_string(), axis);
    for (i, &(good, bad)) in buckets.iter().enumerate() {
        let x = f64::from(LEFT) + step * i as f64;
        let (good_h, bad_h) = (height_of(good, max), height_of(bad, max));
        for (class, fill, value, h, y) in
            [("good", GOOD, good, good_h, bottom - good_h), ("bad", BAD, bad, bad_h, bottom - good_h - bad_h)]
        {
            if value > 0 {
                let _ = write!(
                    svg,
                    "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{h:.1}\" \
                     fill=\"{fill}\"><title>{value}</title></rect>",
                    (step - 1.0).max(0.5)
                );
            }
        }
    }
    svg.push_str("</svg>");
    svg
}

/// A line through each bucket's value, scaled to the largest, in `unit`, over a time axis
/// from `axis[0]` to `axis[1]`; a bucket without
/// a value (`None`) breaks the line, and a value between two gaps is a dot.
pub(super) fn line(label: &str, axis: [&str; 2], values: &[Option<u64>], unit: &str) -> String {
    let max = values.iter().flatten().copied().max().unwrap_or(0);
    let step = plot(values.len());
    let bottom = f64::from(HEIGHT - BOTTOM);
    let mut svg = open(label, &format!("{max} {unit}"), axis);
    let point = |i: usize, v: u64| (f64::from(LEFT) + step * (i as f64 + 0.5), bottom - height_of(v, max));
    let mut path = String::new();
    for (i, value) in values.iter().enumerate() {
        let Some(v) = *value else { continue };
        let (x, y) = point(i, v);
        let joined = i > 0 && values[i - 1].is_some();
        let _ = write!(path, "{}{x:.1} {y:.1} ", if joined { "L" } else { "M" });
        let alone = !joined && values.get(i + 1).is_none_or(Option::is_none);
        if alone {
            let _ = write!(svg, "<circle class=\"dot\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2\" fill=\"{LINE}\"/>");
        }
    }
    if !path.is_empty() {
        let _ = write!(svg, "<path d=\"{}\" fill=\"none\" stroke=\"{LINE}\" stroke-width=\"1.5\"/>", path.trim_end());
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{line, stacked_bars};

    fn count(svg: &str, what: &str) -> usize {
        svg.matches(what).count()
    }

    #[test]
    fn bars_stack_failures_on_successes_scaled_to_the_tallest() {
        let svg = stacked_bars("success <hour>", ["-1 h", "now"], &[(3, 1), (0, 0), (0, 2)]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{svg}");
        assert!(svg.contains("aria-label=\"success &lt;hour&gt;\""), "the label is escaped: {svg}");
        assert_eq!(count(&svg, "class=\"good\""), 1, "the empty bucket and the all-failed one draw no green");
        assert_eq!(count(&svg, "class=\"bad\""), 2);
        // The tallest bar (4) fills the plot's 92 units: 3 of them are 69, 1 is 23.
        assert!(svg.contains("y=\"31.0\" width=\"103.0\" height=\"69.0\" fill=\"#2a7d2a\""), "{svg}");
        assert!(svg.contains("y=\"8.0\" width=\"103.0\" height=\"23.0\""), "the failure sits on top: {svg}");
        assert!(svg.contains(">4</text>"), "the scale says the tallest: {svg}");
        assert!(svg.contains(">-1 h</text>") && svg.contains(">now</text>"), "the time axis: {svg}");
    }

    #[test]
    fn no_attempts_draw_no_bars() {
        let svg = stacked_bars("nothing", ["", ""], &[(0, 0); 60]);
        assert_eq!(count(&svg, "<rect class="), 0, "{svg}");
        assert!(svg.contains(">0</text>"));
    }

    #[test]
    fn a_line_breaks_at_gaps_and_dots_a_lone_value() {
        let svg = line("latency", ["", ""], &[Some(10), Some(20), None, Some(5), None], "ms");
        let path = svg.split("d=\"").nth(1).unwrap().split('"').next().unwrap();
        assert_eq!(path.matches('M').count(), 2, "two runs: {path}");
        assert_eq!(path.matches('L').count(), 1, "{path}");
        assert_eq!(count(&svg, "class=\"dot\""), 1, "the lone 5 is a dot: {svg}");
        assert!(svg.contains(">20 ms</text>"), "{svg}");
        assert_eq!(count(&line("empty", ["", ""], &[None, None], "ms"), "<path"), 0);
    }
}
