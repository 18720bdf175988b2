//! The components the console's pages share (the dashboard now, the customer portal
//! later): escaping, a status badge, a time, a table that collapses to cards on a narrow
//! screen, a form field with its error, an empty state, a page header with breadcrumbs, and
//! the white-label accent with the text colour drawn on it. Pure functions from text to
//! HTML; they escape what they are given, and their look is the stylesheet's
//! ([`super::assets`]).

use std::fmt::{self, Write as _};

use idemgate_core::{UnixTime, time::relative};

/// Escapes text for HTML, in content and in quoted attributes alike.
pub(crate) fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// A time as the page shows it: RFC 3339 UTC and how long ago as of `now`, in a `<time>`
/// element whose `datetime` a script or a browser extension can read.
pub(crate) fn time_html(at: UnixTime, now: UnixTime) -> String {
    let text = at.rfc3339();
    format!("<time datetime=\"{text}\">{text} ({})</time>", relative(at, now))
}

/// The four status colours of the stylesheet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    /// Done as asked: succeeded, delivered, enabled.
    Good,
    /// Will be tried again, or waits: retrying, failing, paused.
    Warn,
    /// Given up or switched off: dead, disabled, failed.
    Bad,
    /// Nothing to judge yet: pending, unmatched.
    Neutral,
}

impl Tone {
    /// The tone of a state's word as the pages show it; an unknown word is neutral.
    pub(crate) fn of(state: &str) -> Self {
        match state {
            "succeeded" | "success" | "delivered" | "enabled" | "healthy" | "ok" => Self::Good,
            "retrying" | "failing" | "paused" | "sending" | "in_flight" => Self::Warn,
            "dead" | "disabled" | "failed" | "fail" | "exhausted" => Self::Bad,
            _ => Self::Neutral,
        }
    }

    fn class(self) -> &'static str {
        match self {
            Self::Good => "good",
            Self::Warn => "warn",
            Self::Bad => "bad",
            Self::Neutral => "neutral",
        }
    }
}

/// A status badge: `text` (escaped) in the colour of `tone`. The colour never carries the
/// meaning alone: the word is always there.
pub(crate) fn badge(tone: Tone, text: &str) -> String {
    format!("<span class=\"badge {}\">{}</span>", tone.class(), esc(text))
}

/// A state's word as a badge in its own tone ([`Tone::of`]).
pub(crate) fn state_badge(state: &str) -> String {
    badge(Tone::of(state), state)
}

/// A table whose rows become cards on a narrow screen (below 40em): each cell carries its
/// column's name in `data-label`, which the stylesheet shows before the cell's value there
/// (`td[data-label]::before`), so a page needs no style of its own. Build it, add its rows,
/// then take its [`Table::html`].
#[derive(Debug, Clone)]
pub(crate) struct Table {
    /// The opening tag.
    open: String,
    /// The caption's text, escaped; empty for none.
    caption: String,
    /// The columns' names, escaped, in order.
    labels: Vec<String>,
    /// The rows so far.
    rows: String,
}

/// One cell of a [`Table`]'s row: its content (HTML, escaped by whoever made it) and the
/// class saying what it holds, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    /// The class, escaped; empty for none.
    class: String,
    /// The content, already HTML.
    html: String,
}

/// A cell holding `html` (already HTML).
pub(crate) fn cell(html: impl Into<String>) -> Cell {
    Cell { class: String::new(), html: html.into() }
}

impl Cell {
    /// The same cell with `class` (escaped), naming what it holds for pages and tests.
    pub(crate) fn class(self, class: &str) -> Self {
        Self { class: esc(class), ..self }
    }
}

impl Table {
    /// A table with the id `id` and the columns `columns` (plain text; an empty name is a
    /// column of buttons, whose cells get no label).
    pub(crate) fn new(id: &str, columns: &[&str]) -> Self {
        Self::opened(format!("<table id=\"{}\">", esc(id)), columns)
    }

    /// A table for screen readers only (the figures of a chart): hidden from the eye, with
    /// the columns `columns`.
    pub(crate) fn hidden(columns: &[&str]) -> Self {
        Self::opened("<table class=\"visually-hidden\">".to_owned(), columns)
    }

    fn opened(open: String, columns: &[&str]) -> Self {
        Self { open, caption: String::new(), labels: columns.iter().map(|c| esc(c)).collect(), rows: String::new() }
    }

    /// The same table with `text` (plain) as its caption.
    pub(crate) fn caption(self, text: &str) -> Self {
        Self { caption: esc(text), ..self }
    }

    /// Adds a row of `cells`, in the columns' order.
    pub(crate) fn row(&mut self, cells: impl IntoIterator<Item = Cell>) {
        self.write_row("<tr>", cells);
    }

    /// Adds a row of `cells` that names what it shows, `data-<key>="<value>"` (both
    /// escaped), for links and tests to find it by.
    pub(crate) fn keyed_row(&mut self, (key, value): (&str, &str), cells: impl IntoIterator<Item = Cell>) {
        self.write_row(&format!("<tr data-{}=\"{}\">", esc(key), esc(value)), cells);
    }

    fn write_row(&mut self, open: &str, cells: impl IntoIterator<Item = Cell>) {
        self.rows.push_str(open);
        for (i, cell) in cells.into_iter().enumerate() {
            self.rows.push_str("<td");
            if !cell.class.is_empty() {
                let _ = write!(self.rows, " class=\"{}\"", cell.class);
            }
            match self.labels.get(i) {
                Some(label) if !label.is_empty() => {
                    let _ = write!(self.rows, " data-label=\"{label}\"");
                }
                _ => {}
            }
            let _ = write!(self.rows, ">{}</td>", cell.html);
        }
        self.rows.push_str("</tr>");
    }

    /// Whether no row was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table's HTML: the caption, the header row, the rows.
    pub(crate) fn html(&self) -> String {
        let mut html = self.open.clone();
        if !self.caption.is_empty() {
            let _ = write!(html, "<caption>{}</caption>", self.caption);
        }
        html.push_str("<tr>");
        for label in &self.labels {
            let _ = write!(html, "<th>{label}</th>");
        }
        let _ = write!(html, "</tr>{}</table>", self.rows);
        html
    }
}

/// What a [`Field`] is typed into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code, reason = "the controls the dashboard does not use yet are the customer portal's")]
pub(crate) enum Control<'a> {
    /// A line of text.
    Text,
    /// A URL.
    Url,
    /// A number.
    Number,
    /// A secret, never written back into the page.
    Password,
    /// Lines of text.
    TextArea,
    /// Yes or no: checked when the value is `on`.
    Checkbox,
    /// One of `options`, each its value and its text (plain).
    Select(&'a [(&'a str, &'a str)]),
}

/// A form field: its label, its control holding a value, a hint and an error. The hint and
/// the error describe the control (`aria-describedby`), and an error marks it invalid
/// (`aria-invalid`). Build it with [`Field::new`], then take its [`Field::html`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field<'a> {
    id: &'a str,
    name: &'a str,
    label: &'a str,
    control: Control<'a>,
    value: &'a str,
    hint: Option<&'a str>,
    placeholder: Option<&'a str>,
    error: Option<&'a str>,
}

impl<'a> Field<'a> {
    /// A field with the control `control` of id `id` and form name `name`, labelled
    /// `label`, empty, without a hint or an error. All text given to a field is plain.
    pub(crate) fn new(id: &'a str, name: &'a str, label: &'a str, control: Control<'a>) -> Self {
        Self { id, name, label, control, value: "", hint: None, placeholder: None, error: None }
    }

    /// The same field holding `value` (ignored by a password).
    pub(crate) fn value(self, value: &'a str) -> Self {
        Self { value, ..self }
    }

    /// The same field with `hint`, shown under its label.
    pub(crate) fn hint(self, hint: &'a str) -> Self {
        Self { hint: Some(hint), ..self }
    }

    /// The same field with `placeholder` in its empty control (never instead of a label).
    pub(crate) fn placeholder(self, placeholder: &'a str) -> Self {
        Self { placeholder: Some(placeholder), ..self }
    }

    /// The same field with `error` (or none), what is wrong with its value.
    pub(crate) fn error(self, error: Option<&'a str>) -> Self {
        Self { error, ..self }
    }

    /// The field's HTML: in a `div.field` (`.invalid` with an error), the label, the hint
    /// (`<id>-hint`), the error (`<id>-error`), then the control; a checkbox comes before
    /// its label.
    pub(crate) fn html(&self) -> String {
        let id = esc(self.id);
        let mut described = Vec::new();
        let mut notes = String::new();
        if let Some(hint) = self.hint {
            let _ = write!(notes, "<p id=\"{id}-hint\" class=\"hint\">{}</p>", esc(hint));
            described.push(format!("{id}-hint"));
        }
        if let Some(error) = self.error {
            let _ = write!(notes, "<p id=\"{id}-error\" class=\"field-error\">{}</p>", esc(error));
            described.push(format!("{id}-error"));
        }
        let mut attrs = format!("id=\"{id}\" name=\"{}\"", esc(self.name));
        if let Some(placeholder) = self.placeholder {
            let _ = write!(attrs, " placeholder=\"{}\"", esc(placeholder));
        }
        if self.error.is_some() {
            attrs.push_str(" aria-invalid=\"true\"");
        }
        if !described.is_empty() {
            let _ = write!(attrs, " aria-describedby=\"{}\"", described.join(" "));
        }
        let value = esc(self.value);
        let control = match self.control {
            Control::Text => format!("<input {attrs} type=\"text\" value=\"{value}\">"),
            Control::Url => format!("<input {attrs} type=\"url\" value=\"{value}\">"),
            Control::Number => format!("<input {attrs} type=\"number\" value=\"{value}\">"),
            Control::Password => format!("<input {attrs} type=\"password\" autocomplete=\"off\">"),
            Control::TextArea => format!("<textarea {attrs}>{value}</textarea>"),
            Control::Checkbox => {
                let checked = if self.value == "on" { " checked" } else { "" };
                format!("<input {attrs} type=\"checkbox\" value=\"on\"{checked}>")
            }
            Control::Select(options) => {
                let mut html = format!("<select {attrs}>");
                for (option, text) in options {
                    let selected = if *option == self.value { " selected" } else { "" };
                    let _ = write!(html, "<option value=\"{}\"{selected}>{}</option>", esc(option), esc(text));
                }
                html.push_str("</select>");
                html
            }
        };
        let class = match (self.control, self.error) {
            (Control::Checkbox, Some(_)) => "field check invalid",
            (Control::Checkbox, None) => "field check",
            (_, Some(_)) => "field invalid",
            (_, None) => "field",
        };
        let label = format!("<label for=\"{id}\">{}</label>", esc(self.label));
        if self.control == Control::Checkbox {
            format!("<div class=\"{class}\">{control}{label}{notes}</div>")
        } else {
            format!("<div class=\"{class}\">{label}{notes}{control}</div>")
        }
    }
}

/// The provider's accent colour, from `[portal] accent` (`#rrggbb`): the colour of the
/// buttons and the bars, with the text drawn on it in black or white, whichever contrasts
/// more ([`Accent::on_accent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accent([u8; 3]);

/// Why a text is not an accent colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AccentError {
    /// Not `#` and six hexadecimal digits.
    #[error("an accent colour is written #rrggbb: `#` and six hexadecimal digits")]
    NotRrggbb,
}

/// The text colour drawn on an accent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnAccent {
    /// `#000000`.
    Black,
    /// `#ffffff`.
    White,
}

impl OnAccent {
    /// The colour as CSS writes it.
    pub(crate) fn css(self) -> &'static str {
        match self {
            Self::Black => "#000000",
            Self::White => "#ffffff",
        }
    }
}

impl Accent {
    /// idemgate's own accent, when no provider's is configured (the stylesheet's light
    /// scheme's blue, 7:1 against white).
    pub const DEFAULT: Self = Self([0x0b, 0x57, 0xa4]);

    /// The accent written `text`: `#` and six hexadecimal digits, in either case.
    pub fn parse(text: &str) -> Result<Self, AccentError> {
        let digits = text.strip_prefix('#').filter(|d| d.len() == 6 && d.bytes().all(|b| b.is_ascii_hexdigit()));
        let digits = digits.ok_or(AccentError::NotRrggbb)?;
        let channel = |i: usize| u8::from_str_radix(&digits[i..i + 2], 16).map_err(|_| AccentError::NotRrggbb);
        Ok(Self([channel(0)?, channel(2)?, channel(4)?]))
    }

    /// The accent's relative luminance (WCAG 2): 0 for black, 1 for white.
    fn luminance(self) -> f64 {
        let linear = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
        };
        let [r, g, b] = self.0;
        0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)
    }

    /// The contrast ratio (WCAG 2, from 1 to 21) of `text` drawn on the accent.
    pub(crate) fn contrast(self, text: OnAccent) -> f64 {
        let l = self.luminance();
        match text {
            OnAccent::Black => (l + 0.05) / 0.05,
            OnAccent::White => 1.05 / (l + 0.05),
        }
    }

    /// The text colour with the higher contrast ratio on the accent (white on a tie).
    pub(crate) fn on_accent(self) -> OnAccent {
        if self.contrast(OnAccent::Black) > self.contrast(OnAccent::White) { OnAccent::Black } else { OnAccent::White }
    }

    /// The CSS custom properties a page carries for the accent: `--accent` and the text
    /// drawn on it, `--on-accent`, on the root, for both colour schemes.
    pub(crate) fn properties(self) -> String {
        format!(":root {{ --accent: {self}; --on-accent: {}; }}\n", self.on_accent().css())
    }
}

impl fmt::Display for Accent {
    /// `#rrggbb`, in lower case.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [r, g, b] = self.0;
        write!(f, "#{r:02x}{g:02x}{b:02x}")
    }
}

/// An empty section: `words` (HTML) saying what is not there, in the paragraph `id`, then
/// `next` (HTML) saying what to do to fill it.
pub(crate) fn empty_state(id: &str, words: &str, next: &str) -> String {
    format!("<div class=\"empty-state\"><p id=\"{id}\" class=\"empty\">{words}</p><p class=\"next\">{next}</p></div>")
}

/// A page's header: where it sits (`crumbs`, each a link's `href` and its text, from the
/// top down) as breadcrumbs ending at `title`, then `title` as the page's heading. A page
/// without a parent has no crumbs and shows the heading alone.
pub(crate) fn page_header(title: &str, crumbs: &[(&str, &str)]) -> String {
    let mut html = String::from("<header class=\"page-header\">");
    if !crumbs.is_empty() {
        html.push_str("<nav class=\"crumbs\" aria-label=\"breadcrumb\"><ol>");
        for (href, text) in crumbs {
            let _ = write!(html, "<li><a href=\"{}\">{}</a></li>", esc(href), esc(text));
        }
        let _ = write!(html, "<li aria-current=\"page\">{}</li></ol></nav>", esc(title));
    }
    let _ = write!(html, "<h1>{}</h1></header>", esc(title));
    html
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use idemgate_core::UnixTime;

    use super::{
        Accent, AccentError, Control, Field, OnAccent, Table, Tone, badge, cell, empty_state, esc, page_header,
        state_badge, time_html,
    };

    #[test]
    fn text_is_escaped_for_content_and_attributes() {
        assert_eq!(esc("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn a_time_reads_as_rfc_3339_with_how_long_ago() {
        assert_eq!(
            time_html(UnixTime(1_796_147_038), UnixTime(1_796_147_038 + 180)),
            "<time datetime=\"2026-12-01T17:43:58Z\">2026-12-01T17:43:58Z (3 min ago)</time>"
        );
        assert!(time_html(UnixTime(1_796_147_038 + 7200), UnixTime(1_796_147_038)).ends_with(" (in 2 h)</time>"));
    }

    #[test]
    fn each_cell_carries_its_column_name_for_the_narrow_screen() {
        let mut table = Table::new("t\"", &["source", "", "a \"b\""]).caption("Newest <first>");
        assert!(table.is_empty());
        table.row([cell("s"), cell("<form><button>Go</button></form>"), cell("1").class("n")]);
        table.keyed_row(("destination", "a&b"), [cell("x")]);
        assert!(!table.is_empty());
        assert_eq!(
            table.html(),
            "<table id=\"t&quot;\"><caption>Newest &lt;first&gt;</caption>\
             <tr><th>source</th><th></th><th>a &quot;b&quot;</th></tr>\
             <tr><td data-label=\"source\">s</td><td><form><button>Go</button></form></td>\
             <td class=\"n\" data-label=\"a &quot;b&quot;\">1</td></tr>\
             <tr data-destination=\"a&amp;b\"><td data-label=\"source\">x</td></tr></table>"
        );
        let mut hidden = Table::hidden(&["bucket", "ms"]);
        hidden.row([cell("1"), cell("12")]);
        assert_eq!(
            hidden.html(),
            "<table class=\"visually-hidden\"><tr><th>bucket</th><th>ms</th></tr>\
             <tr><td data-label=\"bucket\">1</td><td data-label=\"ms\">12</td></tr></table>"
        );
    }

    #[test]
    fn a_field_is_labelled_and_described_by_its_hint_and_error() {
        let plain = Field::new("q-type", "type", "Type", Control::Text).value("a\"b").placeholder("any").html();
        assert_eq!(
            plain,
            "<div class=\"field\"><label for=\"q-type\">Type</label>\
             <input id=\"q-type\" name=\"type\" placeholder=\"any\" type=\"text\" value=\"a&quot;b\"></div>"
        );
        let wrong = Field::new("url", "url", "Endpoint URL", Control::Url)
            .value("ftp://x")
            .hint("https only")
            .error(Some("not <https>"))
            .html();
        assert_eq!(
            wrong,
            "<div class=\"field invalid\"><label for=\"url\">Endpoint URL</label>\
             <p id=\"url-hint\" class=\"hint\">https only</p><p id=\"url-error\" class=\"field-error\">not &lt;https&gt;</p>\
             <input id=\"url\" name=\"url\" aria-invalid=\"true\" aria-describedby=\"url-hint url-error\" \
             type=\"url\" value=\"ftp://x\"></div>"
        );
        let number = Field::new("n", "n", "Rate", Control::Number).value("5").error(Some("too many")).html();
        assert!(
            number.contains("aria-invalid=\"true\" aria-describedby=\"n-error\" type=\"number\" value=\"5\">"),
            "{number}"
        );
    }

    #[test]
    fn each_control_holds_its_value_but_a_password() {
        let secret = Field::new("token", "token", "Admin token", Control::Password).value("s3cret").html();
        assert!(!secret.contains("s3cret") && secret.contains("type=\"password\" autocomplete=\"off\">"), "{secret}");
        let text = Field::new("d", "d", "Description", Control::TextArea).value("<b>").html();
        assert!(text.ends_with("<textarea id=\"d\" name=\"d\">&lt;b&gt;</textarea></div>"), "{text}");
        let check = Field::new("on", "enabled", "Enabled", Control::Checkbox).value("on").hint("sends now").html();
        assert!(check.starts_with("<div class=\"field check\"><input id=\"on\" name=\"enabled\" aria-describedby=\"on-hint\" type=\"checkbox\" value=\"on\" checked><label for=\"on\">Enabled</label>"), "{check}");
        let off = Field::new("on", "enabled", "Enabled", Control::Checkbox).html();
        assert!(!off.contains("checked"), "{off}");
        let options = [("", "any"), ("dead", "dead"), ("a\"", "quoted")];
        let select = Field::new("q-state", "state", "Job state", Control::Select(&options)).value("dead").html();
        assert!(
            select.contains("<select id=\"q-state\" name=\"state\"><option value=\"\">any</option>\
                             <option value=\"dead\" selected>dead</option><option value=\"a&quot;\">quoted</option></select>"),
            "{select}"
        );
    }

    #[test]
    fn an_accent_is_six_hex_digits_after_a_hash() {
        assert_eq!(Accent::parse("#0B57a4"), Ok(Accent::DEFAULT));
        assert_eq!(Accent::DEFAULT.to_string(), "#0b57a4");
        for wrong in ["0b57a4", "#0b57a", "#0b57a44", "#0g57a4", "", "#", "#+b57a4", "#0b57\u{e9}"] {
            assert_eq!(Accent::parse(wrong), Err(AccentError::NotRrggbb), "{wrong}");
        }
    }

    #[test]
    fn the_text_on_an_accent_is_the_colour_that_contrasts_more() {
        let black = Accent::parse("#000000").unwrap();
        assert!((black.contrast(OnAccent::White) - 21.0).abs() < 1e-9);
        assert!((black.contrast(OnAccent::Black) - 1.0).abs() < 1e-9);
        for (accent, text) in [
            ("#000000", OnAccent::White),
            ("#ffffff", OnAccent::Black),
            ("#0b57a4", OnAccent::White),
            ("#ffd700", OnAccent::Black),
            ("#7cb4f2", OnAccent::Black),
            ("#a4161a", OnAccent::White),
            ("#777777", OnAccent::Black),
            ("#767676", OnAccent::Black),
            ("#595959", OnAccent::White),
        ] {
            let accent = Accent::parse(accent).unwrap();
            assert_eq!(accent.on_accent(), text, "{accent}");
        }
        // Whatever the accent, the text chosen reaches WCAG AA's 4.5:1 (the worst case, a
        // middle grey, is about 4.58:1).
        for v in 0..=255u8 {
            for accent in [Accent([v, v, v]), Accent([v, 0, 255 - v]), Accent([255, v, 0])] {
                assert!(accent.contrast(accent.on_accent()) >= 4.5, "{accent}");
            }
        }
    }

    #[test]
    fn the_accent_is_delivered_as_two_custom_properties() {
        assert_eq!(
            Accent::parse("#FFD700").unwrap().properties(),
            ":root { --accent: #ffd700; --on-accent: #000000; }\n"
        );
    }

    #[test]
    fn a_badge_says_its_state_in_words_and_colour() {
        assert_eq!(badge(Tone::Bad, "dead <x>"), "<span class=\"badge bad\">dead &lt;x&gt;</span>");
        for (state, class) in
            [("succeeded", "good"), ("retrying", "warn"), ("dead", "bad"), ("pending", "neutral"), ("disabled", "bad")]
        {
            assert_eq!(state_badge(state), format!("<span class=\"badge {class}\">{state}</span>"));
        }
    }

    #[test]
    fn an_empty_state_keeps_its_words_and_says_what_next() {
        assert_eq!(
            empty_state("no-x", "No x.", "Add one."),
            "<div class=\"empty-state\"><p id=\"no-x\" class=\"empty\">No x.</p><p class=\"next\">Add one.</p></div>"
        );
    }

    #[test]
    fn a_header_has_breadcrumbs_only_under_a_parent() {
        assert_eq!(page_header("idemgate", &[]), "<header class=\"page-header\"><h1>idemgate</h1></header>");
        let html =
            page_header("message \"m\"", &[("/admin/applications", "Applications"), ("/admin/applications/a", "Shop")]);
        assert!(html.contains("<li><a href=\"/admin/applications\">Applications</a></li><li><a href=\"/admin/applications/a\">Shop</a></li>"), "{html}");
        assert!(html.contains("<li aria-current=\"page\">message &quot;m&quot;</li>"), "{html}");
        assert!(html.ends_with("<h1>message &quot;m&quot;</h1></header>"), "{html}");
    }
}
