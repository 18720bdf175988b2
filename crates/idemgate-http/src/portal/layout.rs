//! The frame of every portal page: the provider's brand (name and logo) in the header, the
//! navigation between the portal's pages and the sign-out button, the page's header with
//! its breadcrumbs, and the shared stylesheet. It uses the console's components
//! ([`crate::console::ui`]) so the portal and the operator dashboard look as one.

use axum::response::Html;

use super::{Brand, PortalState, session::Customer};
use crate::console::{
    assets::{BrandSheet, stylesheet_path},
    ui::{Accent, esc, page_header},
};

/// The portal's pages, as the navigation lists them: path below `/portal` and name.
const PAGES: [(&str, &str); 3] =
    [("/portal/endpoints", "Endpoints"), ("/portal/messages", "Messages"), ("/portal/event-types", "Event types")];

/// A signed-in page: the brand and navigation (the page at `current` marked), then
/// `title` with `crumbs` to its parents, and `body` (already HTML).
pub(crate) fn page(
    state: &PortalState,
    customer: &Customer,
    current: &str,
    title: &str,
    crumbs: &[(&str, &str)],
    body: &str,
) -> Html<String> {
    let mut nav = String::from("<nav class=\"pages\" aria-label=\"portal\">");
    for (href, name) in PAGES {
        let here = if href == current { " aria-current=\"page\"" } else { "" };
        nav.push_str(&format!("<a href=\"{href}\"{here}>{name}</a>"));
    }
    nav.push_str(&format!(
        "<form method=\"post\" action=\"/portal/sign-out\">{}<button id=\"sign-out\" type=\"submit\">Sign out</button></form></nav>",
        customer.csrf_field()
    ));
    frame(&state.portal.brand, title, &nav, &format!("{}{body}", page_header(title, crumbs)))
}

/// A page without a session: the brand, then `title` and `body` (already HTML).
pub(crate) fn plain_page(brand: &Brand, title: &str, body: &str) -> Html<String> {
    frame(brand, title, "", &format!("{}{body}", page_header(title, &[])))
}

/// A page saying one thing (`words`, plain text), for the portal's refusals; it carries no
/// brand, since a refusal may come before the settings are read.
pub(crate) fn notice_page(title: &str, words: &str) -> Html<String> {
    plain_page(&Brand::default(), title, &format!("<p class=\"notice\" role=\"alert\">{}</p>", esc(words)))
}

/// The brand's stylesheet: its accent's custom properties, or idemgate's own accent.
pub(crate) fn brand_sheet(brand: &Brand) -> BrandSheet {
    let accent = brand.accent.as_deref().and_then(|text| Accent::parse(text).ok()).unwrap_or(Accent::DEFAULT);
    BrandSheet::new(accent)
}

/// The document: the console's stylesheet and the brand's after it (both below `/portal`,
/// since the public listener has no `/assets`), then the brand, `nav` and `main`.
fn frame(brand: &Brand, title: &str, nav: &str, main: &str) -> Html<String> {
    let logo = brand
        .logo_url
        .as_deref()
        .map(|url| format!("<img class=\"brand-logo\" src=\"{}\" alt=\"\" height=\"28\">", esc(url)))
        .unwrap_or_default();
    let name = esc(&brand.name);
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{} · {name}</title>\
         <link rel=\"stylesheet\" href=\"{prefix}{}\"><link rel=\"stylesheet\" href=\"{prefix}{}\"></head>\
         <body class=\"portal\">\
         <header class=\"brand\">{logo}<span class=\"brand-name\">{name}</span></header>{nav}<main>{main}</main></body></html>",
        esc(title),
        stylesheet_path(),
        brand_sheet(brand).path(),
        prefix = super::PREFIX,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brand_is_escaped_and_the_logo_has_no_text_of_its_own() {
        let brand =
            Brand { name: "Acme <Hooks>".into(), logo_url: Some("https://cdn.example/l.svg".into()), accent: None };
        let Html(html) = plain_page(&brand, "Signed out", "<p>x</p>");
        assert!(html.contains("<span class=\"brand-name\">Acme &lt;Hooks&gt;</span>"), "{html}");
        assert!(html.contains("<img class=\"brand-logo\" src=\"https://cdn.example/l.svg\" alt=\"\""), "{html}");
        assert!(html.contains("<title>Signed out · Acme &lt;Hooks&gt;</title>"), "{html}");
    }
}
