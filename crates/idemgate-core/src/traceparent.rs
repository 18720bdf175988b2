//! The W3C Trace Context `traceparent` header (version `00`): how a sender names the span
//! a delivery continues, and how idemgate names its own spans to destinations. Parsing and
//! writing are pure; the tracing itself is the edges' business.
//!
//! A value that is not exactly `00-<32 hex>-<16 hex>-<2 hex>` in lowercase, or whose trace
//! or span id is all zeros, is no parent: the delivery starts a trace of its own, as the
//! specification asks of a receiver that cannot parse the header.

/// The header's name.
pub const HEADER: &str = "traceparent";

/// One `traceparent` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traceparent {
    /// The trace's id.
    pub trace_id: [u8; 16],
    /// The id of the span that is the parent.
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

impl Traceparent {
    /// Reads a `traceparent` value; `None` when it is not a valid version-00 value.
    #[must_use]
    pub fn parse(value: &str) -> Option<Self> {
        let mut parts = value.split('-');
        let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || version != "00" {
            return None;
        }
        let parent = Self { trace_id: lower_hex(trace)?, span_id: lower_hex(span)?, flags: lower_hex::<1>(flags)?[0] };
        (parent.trace_id != [0; 16] && parent.span_id != [0; 8]).then_some(parent)
    }

    /// Whether the sender recorded its span (the sampled flag).
    #[must_use]
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl std::fmt::Display for Traceparent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "00-{}-{}-{:02x}", hex::encode(self.trace_id), hex::encode(self.span_id), self.flags)
    }
}

/// Exactly `N` bytes written as `2N` lowercase hex digits.
fn lower_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N || !text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut bytes = [0; N];
    hex::decode_to_slice(text, &mut bytes).ok()?;
    Some(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::Traceparent;

    /// The example of the W3C Trace Context specification, section 3.2.
    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_specifications_example_reads_and_writes_back_unchanged() {
        let parent = Traceparent::parse(EXAMPLE).unwrap();
        assert_eq!(hex::encode(parent.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex::encode(parent.span_id), "00f067aa0ba902b7");
        assert!(parent.sampled());
        assert_eq!(parent.to_string(), EXAMPLE);
        let unsampled = Traceparent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
        assert!(!unsampled.sampled());
    }

    #[test]
    fn anything_but_a_valid_version_00_value_is_no_parent() {
        for bad in [
            "",
            "00",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(Traceparent::parse(bad), None, "{bad:?}");
        }
    }
}
