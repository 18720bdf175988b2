//! [`Idempotency`]: the service the layer builds. One request, in order: does the key
//! apply, parse it, read the body under its limit, fingerprint, answer a repeat of a
//! completed record from the kept copy or a read, else `begin` in the store, and then
//! replay, refuse, or run the inner service and store or release by its status.

use std::{
    borrow::Cow,
    convert::Infallible,
    future::Future,
    pin::Pin,
    sync::{Arc, atomic::Ordering},
    task::{Context, Poll},
};

use axum::{body::Body, response::Response};
use bytes::{Bytes, BytesMut};
use http::{Request, request::Parts};
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use idemgate_core::idempotency::{AfterResponse, Fingerprint, after_response, parse_key};
use idemgate_store::idempotency::{Begin, CompletedRecord, Lifetimes, RecordKey, StoredResponse};
use sha2::{Digest, Sha256};
use tower::{Service, ServiceExt};

use super::{
    IDEMPOTENCY_KEY, Operation, Refusal, Scope, WhenUnavailable,
    layer::Shared,
    replays::{Cached, Lookup},
};
use crate::{answer, body::read_limited};

/// Wraps `S` with `Idempotency-Key` semantics; built by [`super::IdempotencyLayer`].
#[derive(Debug, Clone)]
pub struct Idempotency<S> {
    pub(super) inner: S,
    pub(super) shared: Arc<Shared>,
}

impl<S> Service<Request<Body>> for Idempotency<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The clone may not be ready; the one that was polled ready is taken.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let shared = Arc::clone(&self.shared);
        Box::pin(async move { Ok(shared.handle(inner, request).await) })
    }
}

impl Shared {
    async fn handle<S>(&self, inner: S, request: Request<Body>) -> Response
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Send,
        S::Future: Send,
    {
        if !self.config.methods.contains(request.method()) {
            return run(inner, request).await;
        }
        let (parts, body) = request.into_parts();
        // Borrowed from the request's head until the kept copies have been asked: a repeat
        // answered from memory copies neither the key nor the scope.
        let key = match parts.headers.get(IDEMPOTENCY_KEY).map(|v| parse_key(v.as_bytes())) {
            Some(Ok(key)) => key,
            Some(Err(err)) => return self.refused(Refusal::BadKey(err)),
            None if self.config.require_key => return self.refused(Refusal::MissingKey),
            None => return run(inner, Request::from_parts(parts, body)).await,
        };
        let limit = self.config.max_request_body;
        let body = match read_limited(&parts.headers, body, limit, self.config.body_timeout).await {
            Ok(body) => body,
            Err(err) => return self.refused(Refusal::from(err)),
        };
        let fingerprint =
            Fingerprint::of(parts.method.as_str(), parts.uri.path(), parts.uri.query().unwrap_or(""), &body);
        let scope = self.scope(&parts);
        let now_ms = self.clock.now_ms();
        if let Some(cached) = self.replays.answer(Lookup { scope: &scope, key: &key }, &fingerprint, now_ms) {
            return match cached {
                Cached::Replay(response) => {
                    replay_counted(Found::Memory);
                    response
                }
                Cached::Mismatch => self.refused(Refusal::Mismatch),
            };
        }
        let record = RecordKey { scope: scope.into_owned(), key: key.into_owned() };
        let request = Request::from_parts(parts, Body::from(body));
        let begun = match self.answer_without_write(&record, &fingerprint, now_ms).await {
            Some(answered) => Ok(answered),
            None => {
                let lifetimes = Lifetimes { lock: self.config.lock, retention: self.config.retention };
                self.store
                    .begin_idempotent(record.clone(), fingerprint, now_ms, lifetimes)
                    .await
                    .map(|begun| counted(begun, Found::Write))
            }
        };
        match begun {
            Ok(Begin::Proceed { token, expires_at_ms }) => {
                let mut request = request;
                let operation = Operation { scope: record.scope.clone(), key: record.key.clone(), expires_at_ms };
                request.extensions_mut().insert(operation);
                self.run_once(inner, request, record, fingerprint, token).await
            }
            Ok(Begin::Replay(stored)) => answer::replayed(stored),
            Ok(Begin::InFlight { retry_after }) => self.refused(Refusal::InFlight { retry_after }),
            Ok(Begin::Mismatch) => self.refused(Refusal::Mismatch),
            Err(err) => self.unavailable(inner, request, &err).await,
        }
    }

    /// A repeat of a completed record not kept in memory, answered from a plain read; `None`
    /// for anything else (and when the read fails): the writing path decides it under the
    /// write lock.
    async fn answer_without_write(&self, record: &RecordKey, fingerprint: &Fingerprint, now_ms: i64) -> Option<Begin> {
        let completed = self.store.completed_idempotent(record.clone(), now_ms).await.ok()??;
        let answered = completed.answer(fingerprint, now_ms);
        self.replays.keep(record.clone(), completed);
        answered.map(|answered| counted(answered, Found::Read))
    }

    fn refused(&self, refusal: Refusal) -> Response {
        answer::refused(refusal, self.config.refusals)
    }

    fn scope(&self, parts: &Parts) -> Cow<'static, str> {
        match &self.config.scope {
            Scope::HeaderHash(name) => match parts.headers.get(name) {
                Some(value) => Cow::Owned(hex::encode(Sha256::digest(value.as_bytes()))),
                None => Cow::Borrowed("anonymous"),
            },
            Scope::Custom(scope) => Cow::Owned(scope(parts)),
        }
    }

    async fn run_once<S>(
        &self,
        inner: S,
        request: Request<Body>,
        record: RecordKey,
        fingerprint: Fingerprint,
        token: i64,
    ) -> Response
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Send,
        S::Future: Send,
    {
        let response = run(inner, request).await;
        let status = response.status().as_u16();
        if after_response(status, self.config.store_client_errors) == AfterResponse::Release {
            if let Err(err) = self.store.release_idempotent(record, token).await {
                tracing::warn!(error = %err, "could not release an idempotency key; it frees when its lock expires");
            }
            return response;
        }
        let (parts, body) = response.into_parts();
        let (kept, rest) = match read_up_to(body, self.config.max_stored_body).await {
            Ok(read) => read,
            Err(err) => {
                tracing::warn!(error = %err, "the handler's response body broke off; the key is released");
                let _ = self.store.release_idempotent(record, token).await;
                return Response::from_parts(parts, Body::empty());
            }
        };
        let omitted = rest.is_some() || parts.extensions.get::<super::BodyNotStored>().is_some();
        let stored = self.stored(&parts, &kept, omitted);
        match self.store.complete_idempotent(record.clone(), token, stored.clone()).await {
            Ok(Some(expires_at_ms)) => {
                self.replays.keep(record, CompletedRecord { fingerprint, response: stored, expires_at_ms });
            }
            Ok(None) => tracing::warn!("the lock expired and was taken over; this response is not stored"),
            Err(err) => tracing::warn!(error = %err, "could not store a response; the key stays locked until expiry"),
        }
        let body = match rest {
            None => Body::from(kept),
            Some(rest) => Body::new(Prefixed { prefix: Some(kept), rest }),
        };
        Response::from_parts(parts, body)
    }

    fn stored(&self, parts: &http::response::Parts, body: &[u8], body_omitted: bool) -> StoredResponse {
        let headers = self
            .config
            .stored_headers
            .iter()
            .flat_map(|name| parts.headers.get_all(name).iter().map(move |v| (name, v)))
            .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
            .collect();
        let body = if body_omitted { Vec::new() } else { body.to_vec() };
        StoredResponse { status: parts.status.as_u16(), headers, body, body_omitted }
    }

    async fn unavailable<S>(&self, inner: S, request: Request<Body>, err: &idemgate_store::StoreError) -> Response
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Send,
        S::Future: Send,
    {
        match self.config.when_unavailable {
            WhenUnavailable::Refuse => {
                tracing::warn!(error = %err, "idempotency store unavailable; request refused");
                self.refused(Refusal::StoreUnavailable)
            }
            WhenUnavailable::PassThrough => {
                let count = self.unprotected.fetch_add(1, Ordering::Relaxed) + 1;
                metrics::counter!("idemgate_idempotency_unprotected_total").increment(1);
                tracing::warn!(error = %err, unprotected = count, "idempotency store unavailable; request runs unprotected");
                run(inner, request).await
            }
        }
    }
}

/// Where a replayed record was found: the label of `idemgate_idempotency_replays_total`.
#[derive(Debug, Clone, Copy)]
enum Found {
    /// In the kept copies.
    Memory,
    /// By a plain read of the store.
    Read,
    /// By `begin`'s write.
    Write,
}

/// `begun`, counted in `idemgate_idempotency_replays_total` when it is a replay.
fn counted(begun: Begin, found: Found) -> Begin {
    if matches!(begun, Begin::Replay(_)) {
        replay_counted(found);
    }
    begun
}

/// Counts one replay in `idemgate_idempotency_replays_total` by where it was found. Each
/// label is a literal, so the metric's key is static and a replay allocates nothing for it.
fn replay_counted(found: Found) {
    let counter = match found {
        Found::Memory => metrics::counter!("idemgate_idempotency_replays_total", "from" => "memory"),
        Found::Read => metrics::counter!("idemgate_idempotency_replays_total", "from" => "read"),
        Found::Write => metrics::counter!("idemgate_idempotency_replays_total", "from" => "write"),
    };
    counter.increment(1);
}

async fn run<S>(inner: S, request: Request<Body>) -> Response
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Send,
    S::Future: Send,
{
    match inner.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Reads `body` until it ends or holds more than `limit` bytes: what was read, and the
/// unread rest when the limit was passed.
async fn read_up_to(mut body: Body, limit: usize) -> Result<(Bytes, Option<Body>), axum::Error> {
    let mut kept = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else { continue };
        kept.extend_from_slice(&data);
        if kept.len() > limit {
            return Ok((kept.freeze(), Some(body)));
        }
    }
    Ok((kept.freeze(), None))
}

/// What is left of a response read in part: the bytes read, then the unread rest.
struct Prefixed {
    prefix: Option<Bytes>,
    rest: Body,
}

impl HttpBody for Prefixed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Some(prefix) = self.prefix.take() {
            return Poll::Ready(Some(Ok(Frame::data(prefix))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let extra = self.prefix.as_ref().map_or(0, |p| p.len() as u64);
        let rest = self.rest.size_hint();
        let mut hint = SizeHint::new();
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper + extra);
        }
        hint.set_lower(rest.lower() + extra);
        hint
    }
}
