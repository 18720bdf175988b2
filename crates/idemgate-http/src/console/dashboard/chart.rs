//! Charts the server draws as inline SVG: pure functions of a series, so a page needs no
//! script and no asset, and a test reads exactly what is drawn. Each chart says what it
//! shows in its `<title>` and `aria-label`, so a screen reader gets it too.

use std::fmt::Write as _;

use crate::console::ui::{Table, cell, esc};

/// The drawing's size in SVG units (it scales down with the page).
const WIDTH: u32 = 360;
const HEIGHT: u32 = 120;
/// Room left of the plot for the scale at least, above it, and below it for the time axis.
const LEFT: u32 = 40;
const PAD: u32 = 8;
/// A character's width at the labels' font size, generous for a proportional font (a
/// digit is about 5.6 units wide, `m` 8.3): a label measured by its length is never cut.
const CHAR: u32 = 7;
const BOTTOM: u32 = 20;
/// The plot's height.
const PLOT: u32 = HEIGHT - PAD - BOTTOM;
const GOOD: &str = "#2a7d2a";
const BAD: &str = "#b22222";
const LINE: &str = "#1f4e9c";

/// Room left of the plot for the scale's longest label, `max` (the other is `0`), measured
/// by its length, and never less than [`LEFT`].
fn left_of(max: &str) -> u32 {
    let chars = u32::try_from(max.chars().count()).unwrap_or(u32::MAX / CHAR);
    (chars.saturating_mul(CHAR) + 2 * PAD).max(LEFT)
}

/// The drawing's start: its title, the plot's frame (`left` from [`left_of`]), the scale
/// from 0 to `max`, and the time axis from `axis[0]` to `axis[1]`.
fn open(label: &str, max: &str, left: u32, axis: [&str; 2]) -> String {
    let label = esc(label);
    let bottom = HEIGHT - BOTTOM;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" \
         height=\"{HEIGHT}\" class=\"chart\" role=\"img\" aria-label=\"{label}\"><title>{label}</title>\
         <rect class=\"frame\" x=\"{left}\" y=\"{PAD}\" width=\"{}\" height=\"{PLOT}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>\
         <text x=\"{}\" y=\"{bottom}\" font-size=\"10\" text-anchor=\"end\">0</text>\
         <text x=\"{left}\" y=\"{}\" font-size=\"10\">{}</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
        WIDTH - left - PAD,
        left - 4,
        PAD + 10,
        esc(max),
        left - 4,
        HEIGHT - 6,
        esc(axis[0]),
        WIDTH - PAD,
        HEIGHT - 6,
        esc(axis[1]),
    )
}

/// The plot's width per bucket right of `left`, and the y of `value` on a scale up to `max`.
fn plot(n: usize, left: u32) -> f64 {
    f64::from(WIDTH - left - PAD) / n.max(1) as f64
}

fn height_of(value: u64, max: u64) -> f64 {
    if max == 0 { 0.0 } else { f64::from(PLOT) * value as f64 / max as f64 }
}

/// One bar per bucket: its `good` count (green) with its `bad` count (red) stacked on top,
/// scaled to the tallest bar, over a time axis from `axis[0]` to `axis[1]`. A bucket of
/// `(0, 0)` draws nothing.
pub(crate) fn stacked_bars(label: &str, axis: [&str; 2], buckets: &[(u64, u64)]) -> String {
    let max = buckets.iter().map(|(good, bad)| good + bad).max().unwrap_or(0);
    let max_label = max.to_string();
    let left = left_of(&max_label);
    let step = plot(buckets.len(), left);
    let bottom = f64::from(HEIGHT - BOTTOM);
    let mut svg = open(label, &max_label, left, axis);
    for (i, &(good, bad)) in buckets.iter().enumerate() {
        let x = f64::from(left) + step * i as f64;
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
pub(crate) fn line(label: &str, axis: [&str; 2], values: &[Option<u64>], unit: &str) -> String {
    let max = values.iter().flatten().copied().max().unwrap_or(0);
    let max_label = format!("{max} {unit}");
    let left = left_of(&max_label);
    let step = plot(values.len(), left);
    let bottom = f64::from(HEIGHT - BOTTOM);
    let mut svg = open(label, &max_label, left, axis);
    let point = |i: usize, v: u64| (f64::from(left) + step * (i as f64 + 0.5), bottom - height_of(v, max));
    let mut path = String::new();
    for (i, value) in values.iter().enumerate() {
        let Some(v) = *value else { continue };
        let (x, y) = point(i, v);
        let joined = i > 0 && values[i - 1].is_some();
        let _ = write!(path, "{}{x:.1} {y:.1} ", if joined { "L" } else { "M" });
        let _ = write!(
            svg,
            "<circle class=\"point\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill-opacity=\"0\"><title>{v} {}</title></circle>",
            esc(unit)
        );
        let alone = !joined && values.get(i + 1).is_none_or(Option::is_none);
        if alone {
            let _ = write!(svg, "<circle class=\"dot\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2\" fill=\"{LINE}\"/>");
        }
    }
    if !path.is_empty() {
        let _ = write!(
            svg,
            "<path class=\"series\" d=\"{}\" fill=\"none\" stroke=\"{LINE}\" stroke-width=\"1.5\"/>",
            path.trim_end()
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The figures of a bar chart ([`stacked_bars`]) as a table only a screen reader reads:
/// per bucket that has any, its place (1 the oldest of all) and its two counts.
pub(crate) fn bars_table(label: &str, buckets: &[(u64, u64)], good: &str, bad: &str) -> String {
    let mut table = Table::hidden(&["bucket", good, bad])
        .caption(&format!("{label}, per bucket with any (1 the oldest of {})", buckets.len()));
    for (i, (g, b)) in buckets.iter().enumerate().filter(|(_, (g, b))| g + b > 0) {
        table.row([cell((i + 1).to_string()), cell(g.to_string()), cell(b.to_string())]);
    }
    table.html()
}

/// The figures of a line ([`line`]) as a table only a screen reader reads: per bucket with
/// a value, its place (1 the oldest of all) and the value in `unit`.
pub(crate) fn line_table(label: &str, values: &[Option<u64>], unit: &str) -> String {
    let mut table = Table::hidden(&["bucket", unit])
        .caption(&format!("{label}, per bucket with a value (1 the oldest of {})", values.len()));
    for (i, v) in values.iter().enumerate().filter_map(|(i, v)| v.map(|v| (i, v))) {
        table.row([cell((i + 1).to_string()), cell(v.to_string())]);
    }
    table.html()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{bars_table, line, line_table, stacked_bars};

    #[test]
    fn the_figures_are_in_a_hidden_table_too() {
        let bars = bars_table("conflicts", &[(0, 0), (3, 1)], "succeeded", "failed");
        assert!(bars.starts_with("<table class=\"visually-hidden\"><caption>conflicts"), "{bars}");
        assert!(
            bars.contains(
                "<tr><td data-label=\"bucket\">2</td><td data-label=\"succeeded\">3</td><td data-label=\"failed\">1</td></tr>"
            ) && !bars.contains(">1</td><td data-label=\"succeeded\">0"),
            "{bars}"
        );
        let line = line_table("latency", &[None, Some(12)], "ms");
        assert!(
            line.contains("<th>ms</th>")
                && line.contains("<tr><td data-label=\"bucket\">2</td><td data-label=\"ms\">12</td></tr>"),
            "{line}"
        );
        assert_eq!(line.matches("<tr>").count(), 2, "the header and the one value: {line}");
    }

    #[test]
    fn each_point_has_its_value_on_hover() {
        let svg = super::line("latency", ["", ""], &[Some(10), None, Some(7)], "ms");
        assert!(svg.contains("<title>10 ms</title>") && svg.contains("<title>7 ms</title>"), "{svg}");
    }

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
        assert_eq!(count(&svg, "<rect class=\"good\"") + count(&svg, "<rect class=\"bad\""), 0, "{svg}");
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

    /// The x where the scale's top label ends (it is drawn right-aligned there) and where
    /// the plot's frame starts.
    fn scale_end_and_frame(svg: &str) -> (u32, u32) {
        let number = |after: &str| -> u32 {
            let rest = svg.split(after).nth(1).unwrap();
            rest.split('"').next().unwrap().parse().unwrap()
        };
        (number("<text x=\""), number("<rect class=\"frame\" x=\""))
    }

    #[test]
    fn the_longest_scale_label_gets_room_for_every_character() {
        for (max, label) in [(1991, "1991 ms"), (12_345_678, "12345678 ms")] {
            let svg = line("latency", ["", ""], &[Some(max), Some(3)], "ms");
            assert!(svg.contains(&format!(">{label}</text>")), "{svg}");
            let (end, frame) = scale_end_and_frame(&svg);
            assert!(end < frame, "the label ends left of the plot: {svg}");
            // Seven units a character (wider than any of these glyphs at font size 10)
            // fits between the drawing's edge and the label's end.
            let chars = u32::try_from(label.len()).unwrap();
            assert!(end >= chars * 7, "{label} needs {} units, has {end}: {svg}", chars * 7);
        }
        let svg = stacked_bars("bars", ["", ""], &[(123_456, 0)]);
        assert!(scale_end_and_frame(&svg).0 >= 6 * 7, "{svg}");
        assert_eq!(
            scale_end_and_frame(&stacked_bars("small", ["", ""], &[(4, 0)])),
            (36, 40),
            "a short scale keeps the default room"
        );
    }
}
