//! Subscriptions by event type: which destinations an event goes to, decided from its
//! type alone. A pattern is an exact type (`charge.refunded`), a type with `*` standing for
//! any run of characters (`invoice.*` matches `invoice.paid`), or `*` alone (any type). An
//! event without a type matches no pattern: a destination that asks for types gets only
//! events that say theirs.

use std::fmt;

/// Longest pattern accepted.
const MAX_PATTERN: usize = 255;

/// One event-type pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypePattern(String);

/// Why a text is not a pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// Nothing to match.
    #[error("an event-type pattern cannot be empty")]
    Empty,
    /// Too long to be a type.
    #[error("an event-type pattern is at most {MAX_PATTERN} characters")]
    TooLong,
    /// Whitespace or control characters, which no event type has.
    #[error("an event-type pattern has no whitespace or control characters")]
    Whitespace,
}

impl TypePattern {
    /// The pattern `text`, checked.
    pub fn new(text: &str) -> Result<Self, PatternError> {
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        if text.len() > MAX_PATTERN {
            return Err(PatternError::TooLong);
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(PatternError::Whitespace);
        }
        Ok(Self(text.to_owned()))
    }

    /// The pattern as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `event_type` matches: `*` stands for any run of characters, even none.
    #[must_use]
    pub fn matches(&self, event_type: &str) -> bool {
        glob(self.0.as_bytes(), event_type.as_bytes())
    }
}

impl fmt::Display for TypePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether an event of `event_type` (`None`: it has none) is one `patterns` subscribe to.
/// No patterns at all subscribe to every event, typed or not.
#[must_use]
pub fn subscribed(patterns: Option<&[TypePattern]>, event_type: Option<&str>) -> bool {
    match (patterns, event_type) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(patterns), Some(event_type)) => patterns.iter().any(|p| p.matches(event_type)),
    }
}

/// `*` matches any run of bytes; everything else matches itself. Greedy with one
/// backtrack point, so linear in practice and never exponential.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn p(text: &str) -> TypePattern {
        TypePattern::new(text).unwrap()
    }

    #[test]
    fn patterns_match_exact_names_prefixes_and_anything() {
        assert!(p("invoice.*").matches("invoice.paid"));
        assert!(p("invoice.*").matches("invoice.payment.failed"));
        assert!(!p("invoice.*").matches("invoices.paid"));
        assert!(!p("invoice.*").matches("charge.refunded"));
        assert!(p("charge.refunded").matches("charge.refunded"));
        assert!(!p("charge.refunded").matches("charge.refunded.x"));
        assert!(!p("charge.refunded").matches("charge"));
        assert!(p("*").matches("anything"));
        assert!(p("*").matches(""));
        assert!(p("*.deleted").matches("customer.deleted"));
        assert!(!p("*.deleted").matches("customer.created"));
        assert!(p("a*b*c").matches("aXXbYYc"));
        assert!(!p("a*b*c").matches("aXXbYY"));
    }

    #[test]
    fn an_event_without_a_type_matches_no_types_filter() {
        let patterns = [p("*")];
        assert!(!subscribed(Some(&patterns), None));
        assert!(subscribed(Some(&patterns), Some("x")));
        assert!(subscribed(None, None), "no filter: every event");
        assert!(!subscribed(Some(&[]), Some("x")), "an empty list subscribes to nothing");
    }

    #[test]
    fn a_pattern_is_checked() {
        assert_eq!(TypePattern::new(""), Err(PatternError::Empty));
        assert_eq!(TypePattern::new("a b"), Err(PatternError::Whitespace));
        assert_eq!(TypePattern::new(&"x".repeat(256)), Err(PatternError::TooLong));
    }

    #[test]
    fn many_stars_stay_fast() {
        let pattern = p(&"*a".repeat(50));
        assert!(!pattern.matches(&"a".repeat(49)));
        assert!(pattern.matches(&"a".repeat(200)));
    }
}
