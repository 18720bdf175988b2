//! One delivery from raw request to outcome, in the order that keeps it safe:
//! size limit while reading, signature over the raw bytes, strict JSON (or a strict form,
//! read into a JSON view, for a `body = "form"` source), the source's event
//! contract, then the store's receipt transaction. Nothing is parsed before the signature
//! holds, and nothing is stored for a delivery refused on the way.
//!
//! The caller walks the steps in that order: [`Inbound::verify`] (read, verify, parse),
//! its own contract on the [`Checked`] delivery (the gateway's rules, an application's
//! contract), then [`Inbound::commit`] with what the contract accepted, or
//! [`Inbound::reject`] with what it refused.
//!
//! Each step runs in a span of its own (`read`, `verify`, `parse`, `commit`) under the
//! caller's span, which gets the identity and the outcome as fields when it declares them
//! (the gateway's `delivery` span, [`crate::trace`]).

use std::{sync::Arc, time::Duration};

use axum::body::Body;
use bytes::Bytes;
use http::HeaderMap;
use idemgate_core::{
    Identity, Outcome, ReceiptKey, Rejection, Scheme, SecretSet, SourceName, UnixTime, VerifiedDelivery,
    comparison::{self, FieldPointer},
    form::BodyFormat,
    json::{self, Json},
    scheme::RawDelivery,
};
use idemgate_store::{ReceiveRequest, Receiver};

use tracing::{Instrument, Span, info_span};

use crate::{DeliveryAnswer, body::read_limited};

/// What a source's event contract makes of an authenticated, parsed body: the event's
/// stable identity and the effect to run if it is new.
#[derive(Debug)]
pub struct Accepted<H> {
    /// The receipt identity within the source.
    pub identity: Identity,
    /// The effect, run inside the receipt's transaction on first delivery only.
    pub effect: H,
}

/// What the source's contract gets to look at: the request as received and what the
/// signature check and the strict parser made of it.
#[derive(Debug, Clone, Copy)]
pub struct Checked<'a> {
    /// The request headers.
    pub headers: &'a HeaderMap,
    /// The raw body bytes, exactly as verified.
    pub raw: &'a Bytes,
    /// What the scheme vouched for.
    pub delivery: &'a VerifiedDelivery,
    /// The strictly parsed body: the JSON itself, or a form's JSON view.
    pub event: &'a Json,
    /// The time the delivery is being judged at.
    pub now: UnixTime,
}

/// A delivery read under its limit, verified and strictly parsed: what its source's
/// contract looks at next ([`Self::checked`]).
#[derive(Debug)]
pub struct Verified {
    raw: Bytes,
    delivery: VerifiedDelivery,
    event: Json,
    now: UnixTime,
}

impl Verified {
    /// The delivery as the contract sees it, with its request's `headers`.
    #[must_use]
    pub fn checked<'a>(&'a self, headers: &'a HeaderMap) -> Checked<'a> {
        Checked { headers, raw: &self.raw, delivery: &self.delivery, event: &self.event, now: self.now }
    }
}

/// The answer to one delivery, and the identity it was filed under when it got that far.
#[derive(Debug)]
pub struct Delivered {
    /// What to answer.
    pub answer: DeliveryAnswer,
    /// The event identity, once the contract accepted the body.
    pub identity: Option<Identity>,
}

/// Rejections counted by source and bounded reason: what the operator sees instead of
/// stored payloads (nothing is stored for a rejected delivery). Besides the totals since
/// start, each reason is counted per minute for the last day (at most 1440 minutes times
/// the bounded reasons), for the dashboard's chart.
#[derive(Debug, Default)]
pub struct RejectionCounts(std::sync::Mutex<Counted>);

#[derive(Debug, Default)]
struct Counted {
    totals: std::collections::BTreeMap<(String, &'static str), u64>,
    /// (minute's start, reason) to count.
    minutes: std::collections::BTreeMap<(i64, &'static str), u64>,
}

/// How long the per-minute counts are kept.
const MINUTES_KEPT: i64 = 86_400;

impl RejectionCounts {
    /// Counts one rejection, at `now`.
    pub fn record(&self, source: &SourceName, reason: &'static str, now: UnixTime) {
        let mut counted = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *counted.totals.entry((source.to_string(), reason)).or_insert(0) += 1;
        let minute = now.0 - now.0.rem_euclid(60);
        *counted.minutes.entry((minute, reason)).or_insert(0) += 1;
        let oldest = minute - MINUTES_KEPT;
        while let Some(entry) = counted.minutes.first_entry()
            && entry.key().0 <= oldest
        {
            entry.remove();
        }
    }

    /// Every (source, reason, count), in order.
    #[must_use]
    pub fn snapshot(&self) -> Vec<(String, &'static str, u64)> {
        let counted = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        counted.totals.iter().map(|((source, reason), count)| (source.clone(), *reason, *count)).collect()
    }

    /// Rejections at or after `since` (within the last day), per reason and per bucket of
    /// `width` seconds from `since`: (bucket's start, reason, count), by time then reason.
    #[must_use]
    pub fn series(&self, since: UnixTime, width: i64) -> Vec<(i64, &'static str, u64)> {
        let width = width.max(60);
        let counted = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut buckets: std::collections::BTreeMap<(i64, &'static str), u64> = std::collections::BTreeMap::new();
        for ((minute, reason), count) in counted.minutes.range((since.0, "")..) {
            let start = since.0 + (minute - since.0) / width * width;
            *buckets.entry((start, reason)).or_insert(0) += count;
        }
        buckets.into_iter().map(|((start, reason), count)| (start, reason, count)).collect()
    }
}

/// How a first delivery is answered: the effect is done, or it is stored for a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerStyle {
    /// `200 {"status":"applied","result":R}`: the handler's effect committed.
    Settled,
    /// `202 {"status":"accepted",…}`: the event and its jobs committed.
    Queued,
}

/// Everything configured for one source's inbound route, storing into `R`: the gateway's
/// [`idemgate_store::Store`], or an `Arc<SqliteStore>` running an application's handler.
#[derive(Debug, Clone)]
pub struct Inbound<R> {
    /// The source, bound to this route by configuration.
    pub source: SourceName,
    /// How deliveries of this source are signed.
    pub scheme: Arc<dyn Scheme>,
    /// The active secrets (several during rotation).
    pub secrets: SecretSet,
    /// Largest accepted body, in bytes.
    pub body_limit: usize,
    /// How long a sender may take to send the whole body.
    pub body_timeout: Duration,
    /// Whether the same body bytes under another identity are a duplicate (for schemes
    /// whose signature does not cover the identity).
    pub dedupe_body: bool,
    /// Strict JSON limits.
    pub json_limits: json::Limits,
    /// How the verified bytes are read into the JSON view the contract looks at.
    pub body_format: BodyFormat,
    /// The fields the provider changes when it retries: a repeat is compared without them
    /// ([`comparison::fingerprint`]); empty for every raw byte.
    pub per_attempt: Arc<[FieldPointer]>,
    /// Whether the effect completes in the transaction or is queued as jobs.
    pub answers: AnswerStyle,
    /// Where rejections are counted for the operator.
    pub rejections: Arc<RejectionCounts>,
    /// Where receipts go.
    pub store: R,
}

impl<R: Receiver> Inbound<R> {
    /// The steps before the contract: reads the body under the limit, verifies the
    /// signature on the raw bytes, then parses them strictly. `Err` is the answer to a
    /// delivery rejected on the way (counted).
    pub async fn verify(&self, headers: &HeaderMap, body: Body, now: UnixTime) -> Result<Verified, Delivered> {
        let read = read_limited(headers, body, self.body_limit, self.body_timeout).instrument(info_span!("read"));
        let raw = match read.await {
            Ok(raw) => raw,
            Err(err) => return Err(self.refused(err.into(), now)),
        };
        match self.check(headers, &raw, now) {
            Ok((delivery, event)) => Ok(Verified { raw, delivery, event, now }),
            Err(rejection) => Err(self.reject(rejection, now)),
        }
    }

    /// The answer to a delivery its contract refused (counted).
    pub fn reject(&self, rejection: Rejection, now: UnixTime) -> Delivered {
        self.refused(DeliveryAnswer::Rejected(rejection), now)
    }

    /// The step after the contract: offers the `verified` delivery, under the identity and
    /// with the effect its contract `accepted`, to the store, and answers its outcome.
    pub async fn commit(&self, verified: &Verified, accepted: Accepted<R::Effect>) -> Delivered {
        let Accepted { identity, effect } = accepted;
        let now = verified.now;
        Span::current().record("identity", identity.as_str());
        let request = ReceiveRequest {
            key: ReceiptKey { source: self.source.clone(), identity: identity.clone() },
            body_hash: comparison::fingerprint(&verified.raw, &self.per_attempt),
            received_at: now,
            dedupe_body: self.dedupe_body,
        };
        let outcome = self.store.receive(request, effect).instrument(info_span!("commit")).await;
        self.settled(&identity, &outcome);
        let answer = match self.answers {
            AnswerStyle::Settled => DeliveryAnswer::Settled(outcome),
            AnswerStyle::Queued => DeliveryAnswer::Queued(outcome),
        };
        Delivered { answer, identity: Some(identity) }
    }

    /// Verifies the signature on the raw bytes, then reads them strictly in the source's format.
    fn check(&self, headers: &HeaderMap, raw: &[u8], now: UnixTime) -> Result<(VerifiedDelivery, Json), Rejection> {
        let delivery = info_span!("verify")
            .in_scope(|| self.scheme.verify(&self.secrets, RawDelivery { headers, body: raw }, now))?;
        let event = info_span!("parse").in_scope(|| self.body_format.read(raw, self.json_limits))?;
        Ok((delivery, event))
    }

    fn refused(&self, answer: DeliveryAnswer, now: UnixTime) -> Delivered {
        tracing::info!(source = %self.source, reason = answer.label(), "delivery rejected");
        Span::current().record("outcome", "rejected").record("reason", answer.label());
        self.rejections.record(&self.source, answer.label(), now);
        let source = self.source.to_string();
        metrics::counter!("idemgate_deliveries_total", "source" => source.clone(), "outcome" => "rejected")
            .increment(1);
        metrics::counter!("idemgate_rejections_total", "source" => source, "reason" => answer.label()).increment(1);
        Delivered { answer, identity: None }
    }

    fn settled(&self, identity: &Identity, outcome: &Outcome) {
        tracing::debug!(source = %self.source, %identity, outcome = outcome.name(), "delivery settled");
        Span::current().record("outcome", outcome.name());
        metrics::counter!("idemgate_deliveries_total", "source" => self.source.to_string(), "outcome" => outcome.name())
            .increment(1);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use idemgate_core::{SourceName, UnixTime};

    use super::RejectionCounts;

    #[test]
    fn rejections_are_counted_per_reason_over_time_for_a_day() {
        let counts = RejectionCounts::default();
        let (a, b) = (SourceName::new("a").unwrap(), SourceName::new("b").unwrap());
        let t0 = UnixTime(1_800_000_000);
        counts.record(&a, "signature_mismatch", t0);
        counts.record(&b, "signature_mismatch", UnixTime(t0.0 + 59));
        counts.record(&a, "syntax", UnixTime(t0.0 + 61));
        counts.record(&a, "syntax", UnixTime(t0.0 + 3600));
        assert_eq!(
            counts.series(t0, 60),
            [(t0.0, "signature_mismatch", 2), (t0.0 + 60, "syntax", 1), (t0.0 + 3600, "syntax", 1)]
        );
        assert_eq!(counts.series(UnixTime(t0.0 + 60), 1800), [(t0.0 + 60, "syntax", 1), (t0.0 + 1860, "syntax", 1)]);
        counts.record(&a, "syntax", UnixTime(t0.0 + 86_400 + 60));
        assert_eq!(counts.series(t0, 60).len(), 2, "a day on, the first two minutes are gone");
        assert_eq!(counts.snapshot().iter().map(|(_, _, n)| n).sum::<u64>(), 5, "the totals stay");
    }
}
