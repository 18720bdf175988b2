//! The components the console's pages share (the dashboard now, the customer portal
//! later): a status badge, an empty state, a page header with breadcrumbs. Pure functions
//! from text to HTML; they escape what they are given, and their look is the stylesheet's
//! ([`super::assets`]).

use std::fmt::Write as _;

use super::dashboard::layout::esc;

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
    use super::{Tone, badge, empty_state, page_header, state_badge};

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
