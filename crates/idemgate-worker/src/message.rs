//! What a queue destination (RabbitMQ, NATS JetStream) puts beside the body of a message,
//! the same for every broker: the event's content type, and headers naming the source,
//! the identity the source gave, the event type, and the source's forwarded headers (the
//! same as an HTTP attempt forwards, never one the worker sets itself, nor a `Nats-*` one,
//! which JetStream reads as instructions).

use http::HeaderName;
use idemgate_store::jobs::ClaimedJob;

use crate::http::{EVENT_ID_HEADER, SOURCE_HEADER, sets_itself};

/// Header carrying the event type, when the source has one.
pub const EVENT_TYPE_HEADER: &str = "idemgate-event-type";

/// The message's content type: the event's, or JSON.
#[must_use]
pub fn content_type(job: &ClaimedJob) -> &str {
    job.content_type.as_deref().unwrap_or("application/json")
}

/// The message's headers, the worker's own first.
#[must_use]
pub fn headers(job: &ClaimedJob) -> Vec<(String, String)> {
    let mut headers = vec![
        (SOURCE_HEADER.to_owned(), job.key.source.as_str().to_owned()),
        (EVENT_ID_HEADER.to_owned(), job.key.identity.as_str().to_owned()),
    ];
    if let Some(event_type) = &job.event_type {
        headers.push((EVENT_TYPE_HEADER.to_owned(), event_type.clone()));
    }
    let forwarded = job.headers.iter().filter(|(name, _)| {
        HeaderName::try_from(name.as_str()).is_ok_and(|header| !sets_itself(&header))
            && !name.eq_ignore_ascii_case(EVENT_TYPE_HEADER)
            && !name.to_ascii_lowercase().starts_with("nats-")
    });
    headers.extend(forwarded.cloned());
    headers
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use idemgate_core::{Identity, ReceiptKey, SourceName};

    use super::*;

    #[test]
    fn a_forwarded_header_never_replaces_the_workers_own_nor_instructs_jetstream() {
        let stored = [
            ("idemgate-source", "other"),
            ("idemgate-event-type", "other"),
            ("Nats-Msg-Id", "other"),
            ("nats-expected-stream", "x"),
            ("webhook-id", "other"),
            ("x-a", "1"),
        ];
        let job = ClaimedJob {
            id: 1,
            lease_token: 1,
            attempt: 1,
            destination: "queue".into(),
            key: ReceiptKey { source: SourceName::new("a").unwrap(), identity: Identity::new("evt_1").unwrap() },
            outgoing_id: "evt_1".into(),
            event_type: Some("t".into()),
            body: bytes::Bytes::new(),
            content_type: Some("text/plain".into()),
            headers: stored.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect(),
        };
        let made = headers(&job);
        let shown: Vec<(&str, &str)> = made.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(
            shown,
            [("idemgate-source", "a"), ("idemgate-event-id", "evt_1"), ("idemgate-event-type", "t"), ("x-a", "1")]
        );
        assert_eq!(content_type(&job), "text/plain");
    }
}
