//! The frame of every page: the layout with its stylesheet link and narrow-screen labels, the
//! signed-in navigation, the sign-in page, and the markup every page uses (escaping,
//! times). It knows no state and no answer, so the dashboard's answers can show their
//! pages in it.

use std::fmt::Write as _;

use axum::response::Html;
use idemgate_core::{UnixTime, time::relative};

use crate::console::{assets::stylesheet_path, ui::page_header};

/// Escapes text for HTML: identities are any printable ASCII.
pub(crate) fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// A time as the page shows it: RFC 3339 UTC and how long ago as of `now`, in a `<time>`
/// element whose `datetime` a script or a browser extension can read.
pub(crate) fn time_html(at: UnixTime, now: UnixTime) -> String {
    let text = at.rfc3339();
    format!("<time datetime=\"{text}\">{text} ({})</time>", relative(at, now))
}

/// A dashboard page without a parent: `title` as its heading, then `body` (already HTML).
pub(crate) fn layout(title: &str, body: &str) -> Html<String> {
    frame(title, &[], "", body)
}

/// The frame of every page: the stylesheet ([`stylesheet_path`]), then `nav` (HTML, the
/// pages' navigation or nothing), then the page in `<main>`: its header ([`page_header`],
/// with `crumbs` to its parents) and `body` (already HTML). Its tables' cells are labelled
/// on a narrow screen by [`narrow_labels`], the one style the page carries inline.
fn frame(title: &str, crumbs: &[(&str, &str)], nav: &str, body: &str) -> Html<String> {
    let labels = narrow_labels(body);
    let labels =
        if labels.is_empty() { String::new() } else { format!("<style>@media (max-width:40em){{{labels}}}</style>") };
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title>\
         <link rel=\"stylesheet\" href=\"{}\">{labels}</head><body>{nav}<main>{}{body}</main></body></html>",
        esc(title),
        stylesheet_path(),
        page_header(title, crumbs),
    ))
}

/// The narrow screen's label for each cell: per table with an id, one CSS rule per named
/// column putting the column's name (its header cell's text) before each cell's value, as
/// `#dead td:nth-child(2)::before{content:"event: "}`. Read from the dashboard's own
/// markup, where every table's first row holds its header cells; the cells themselves
/// stay as they are.
fn narrow_labels(body: &str) -> String {
    let mut rules = String::new();
    for table in body.split("<table id=\"").skip(1) {
        let Some((id, rest)) = table.split_once('"') else { continue };
        let header = rest.split("</tr>").next().unwrap_or("");
        for (column, cell) in header.split("<th").skip(1).enumerate() {
            let name = cell.split_once('>').map_or("", |(_, text)| text.split('<').next().unwrap_or(""));
            if !name.is_empty() {
                let _ = write!(
                    rules,
                    "#{} td:nth-child({})::before{{content:\"{}: \"}}",
                    css_escaped(id),
                    column + 1,
                    css_escaped(name)
                );
            }
        }
    }
    rules
}

/// `text` with everything but letters, digits, `-`, `_` and spaces as a CSS escape, so it
/// can neither end a string or rule nor the style element.
fn css_escaped(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ' ') {
                c.to_string()
            } else {
                format!("\\{:x} ", u32::from(c))
            }
        })
        .collect()
}

/// A signed-in page: the navigation between pages and the sign-out button, then the
/// page's header with `crumbs` to its parents and `body`. `csrf` is the session's token,
/// escaped.
pub(crate) fn signed_in_layout(title: &str, crumbs: &[(&str, &str)], csrf: &str, body: &str) -> Html<String> {
    frame(
        title,
        crumbs,
        &format!(
            "<nav class=\"pages\" aria-label=\"pages\"><a href=\"/admin/\">Overview</a><a href=\"/admin/events\">Events</a>\
             <a href=\"/admin/destinations\">Destinations</a><a href=\"/admin/rejections\">Rejections</a>\
             <a href=\"/admin/audit\">Audit log</a><a href=\"/admin/applications\">Applications</a><form method=\"post\" action=\"/admin/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <button id=\"sign-out\" type=\"submit\">Sign out</button></form></nav>"
        ),
        body,
    )
}

/// The sign-in page, with `error` (plain text) above the form when the last try failed:
/// the error is announced and tied to the field, and the field is focused and empty again,
/// since the page never echoes a token.
pub(crate) fn sign_in_page(error: Option<&str>) -> Html<String> {
    let (message, field) = match error {
        Some(text) => (
            format!("<p id=\"sign-in-error\" class=\"bad\" role=\"alert\">{}</p>", esc(text)),
            " aria-invalid=\"true\" aria-describedby=\"sign-in-error\" autofocus",
        ),
        None => (String::new(), ""),
    };
    layout(
        "idemgate: sign in",
        &format!(
            "{message}<form method=\"post\" action=\"/admin/login\"><label>Admin token <input id=\"token\" \
             name=\"token\" type=\"password\" autocomplete=\"off\"{field}></label> \
             <button id=\"sign-in\" type=\"submit\">Sign in</button></form>"
        ),
    )
}

#[cfg(test)]
mod tests {
    use idemgate_core::UnixTime;

    use super::{narrow_labels, time_html};

    #[test]
    fn each_named_column_gets_its_label_on_a_narrow_screen() {
        let body = "<p>x</p><table id=\"t\"><caption>c</caption><tr><th>source</th><th></th><th>a \"b\"</th></tr>\
                    <tr><td>s</td><td><form><button>Go</button></form></td><td class=\"n\">1</td></tr>\
                    </table><table><tr><th>unnamed table</th></tr></table><table id=\"u\"><tr><th>#</th></tr></table>";
        assert_eq!(
            narrow_labels(body),
            "#t td:nth-child(1)::before{content:\"source: \"}#t td:nth-child(3)::before{content:\"a \\22 b\\22 : \"}\
             #u td:nth-child(1)::before{content:\"\\23 : \"}"
        );
    }

    #[test]
    fn a_time_reads_as_rfc_3339_with_how_long_ago() {
        assert_eq!(
            time_html(UnixTime(1_796_147_038), UnixTime(1_796_147_038 + 180)),
            "<time datetime=\"2026-12-01T17:43:58Z\">2026-12-01T17:43:58Z (3 min ago)</time>"
        );
    }
}
