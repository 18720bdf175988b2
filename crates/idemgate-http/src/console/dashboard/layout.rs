//! The frame of every page: the layout with its stylesheets, the signed-in navigation, the
//! sign-in page. It knows no state and no answer, so the dashboard's answers can show their
//! pages in it; the markup inside a page is the components' ([`crate::console::ui`]).

use axum::response::Html;

use crate::console::{
    assets::{brand_sheet, stylesheet_path},
    ui::{esc, page_header},
};

/// A dashboard page without a parent: `title` as its heading, then `body` (already HTML).
pub(crate) fn layout(title: &str, body: &str) -> Html<String> {
    frame(title, &[], "", body)
}

/// The frame of every page: the stylesheet ([`stylesheet_path`]) and the brand's after it
/// ([`brand_sheet`]), then `nav` (HTML, the pages' navigation or nothing), then the page in
/// `<main>`: its header ([`page_header`], with `crumbs` to its parents) and `body` (already
/// HTML). Nothing is styled inline.
fn frame(title: &str, crumbs: &[(&str, &str)], nav: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title>\
         <link rel=\"stylesheet\" href=\"{}\"><link rel=\"stylesheet\" href=\"{}\"></head>\
         <body>{nav}<main>{}{body}</main></body></html>",
        esc(title),
        stylesheet_path(),
        brand_sheet().path(),
        page_header(title, crumbs),
    ))
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
    use axum::response::Html;

    use super::{layout, signed_in_layout};
    use crate::console::assets::{brand_sheet, stylesheet_path};

    #[test]
    fn a_page_links_both_stylesheets_in_order_and_styles_nothing_inline() {
        let table = "<table id=\"t\"><tr><th>a</th></tr><tr><td data-label=\"a\">1</td></tr></table>";
        for Html(page) in [layout("t", table), signed_in_layout("t", &[("/admin/", "Overview")], "c", table)] {
            let sheet = page.find(stylesheet_path()).unwrap_or(usize::MAX);
            let brand = page.find(brand_sheet().path()).unwrap_or(0);
            assert!(sheet < brand, "the brand's after the one stylesheet: {page}");
            assert!(!page.contains("<style") && !page.contains("style="), "{page}");
        }
    }
}
