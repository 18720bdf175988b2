//! Delivering to a customer's endpoint (the outbound API, `docs/design/outbound-api.md`
//! §3.5, §3.6, §3.8): an [`EndpointDelivery`] is built from a neutral [`Endpoint`] (its
//! URL, custom headers, unsealed secrets and timeout, as the store will give them) and one
//! [`EndpointClient`] that every endpoint shares (one pool, the guarded connector).
//!
//! Each attempt is signed with every given secret in one `webhook-signature` header
//! (core's [`signing`](idemgate_core::outbound::signing)), `webhook-id` is the job's
//! outgoing id (the message id, the same on every attempt) and `webhook-timestamp` the
//! attempt's; the custom headers follow. Redirects are not followed and at most 64 KiB
//! of the answer is read ([`crate::exchange`], shared with [`crate::HttpDestination`]).
//! A connection that reaches an address endpoints may not reach is dropped before a byte
//! is written: the attempt fails "address not allowed (<range>)".
//!
//! [`EndpointRoutes`] (`routes.rs`) makes the worker's routes of the endpoints the store
//! holds, and keeps them in step with it.

mod guard;
mod routes;

use std::{collections::HashMap, net::IpAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{
    HeaderMap, HeaderName, HeaderValue, Method, Request, Uri,
    header::{CONTENT_TYPE, InvalidHeaderValue, USER_AGENT},
};
use http_body_util::Full;
use hyper_util::client::legacy::connect::{HttpConnector, dns::GaiResolver};
use idemgate_core::{SecretSet, UnixTime, outbound::signing::signed_headers, retry::AttemptResult};
use idemgate_store::jobs::ClaimedJob;
use ipnet::IpNet;

pub use self::guard::AddressNotAllowed;
use self::guard::{GuardedConnector, Resolver};
pub use self::routes::{ENDPOINT_PREFIX, ENDPOINT_TIMEOUT, EndpointRoutes, SECRET_UNREADABLE};
use crate::{
    AttemptOutcome, Deliver,
    deliver::BoxFuture,
    exchange::{self, ClientError, Failure, JSON, TlsClient, USER_AGENT_VALUE},
    http::sets_itself,
};

/// The one HTTP client of every endpoint: a shared connection pool behind the guarded
/// connector. Cloning it shares the pool.
#[derive(Debug, Clone)]
pub struct EndpointClient {
    client: TlsClient<GuardedConnector>,
}

impl EndpointClient {
    /// A client resolving names with the system's resolver, connecting within `connect`,
    /// and reaching only public addresses and those in `allow_networks`
    /// (`[api] allow_networks`).
    pub fn new(allow_networks: Vec<IpNet>, connect: Duration) -> Result<Self, ClientError> {
        Self::build(Resolver::System(GaiResolver::new()), allow_networks, connect)
    }

    /// As [`new`](Self::new), but names resolve by `names` only (a name not in it does not
    /// resolve). For tests: a name that resolves to 127.0.0.1 without DNS.
    pub fn with_names(
        names: HashMap<String, Vec<IpAddr>>,
        allow_networks: Vec<IpNet>,
        connect: Duration,
    ) -> Result<Self, ClientError> {
        Self::build(Resolver::Fixed(Arc::new(names)), allow_networks, connect)
    }

    fn build(resolver: Resolver, allow_networks: Vec<IpNet>, connect: Duration) -> Result<Self, ClientError> {
        let mut http = HttpConnector::new_with_resolver(resolver);
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(connect));
        Ok(Self { client: exchange::client(GuardedConnector::new(http, allow_networks))? })
    }
}

/// A customer's endpoint as the worker needs it, whatever stores it.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Where to send (already checked by core's URL policy when it was stored).
    pub url: String,
    /// The custom headers (already checked by core's header rules).
    pub headers: Vec<(String, String)>,
    /// The current secret first, then each old one not yet expired.
    pub secrets: SecretSet,
    /// The whole attempt: connecting, sending, and reading the answer.
    pub timeout: Duration,
}

/// An endpoint that cannot be delivered to. Names no URL and no header value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// Not an `http` or `https` URL with a host, or one with user info.
    #[error("the endpoint's URL must be http:// or https:// with a host and no user info")]
    Url,
    /// A custom header that is not valid HTTP, or one the worker sets itself.
    #[error("the endpoint's header {name:?} cannot be sent")]
    Header {
        /// The header's name (a name, never its value).
        name: String,
    },
}

/// One endpoint's [`Deliver`]: its request, sent through the shared [`EndpointClient`].
#[derive(Debug, Clone)]
pub struct EndpointDelivery {
    uri: Uri,
    headers: HeaderMap,
    secrets: SecretSet,
    client: EndpointClient,
    total: Duration,
}

impl EndpointDelivery {
    /// The delivery to `endpoint` through `client`.
    pub fn new(client: &EndpointClient, endpoint: Endpoint) -> Result<Self, EndpointError> {
        let uri: Uri = endpoint.url.parse().map_err(|_| EndpointError::Url)?;
        let usable = matches!(uri.scheme_str(), Some("http" | "https"))
            && uri.host().is_some()
            && !uri.authority().is_some_and(|authority| authority.as_str().contains('@'));
        if !usable {
            return Err(EndpointError::Url);
        }
        let mut headers = HeaderMap::with_capacity(endpoint.headers.len());
        for (name, value) in endpoint.headers {
            let refused = || EndpointError::Header { name: name.clone() };
            let header = HeaderName::try_from(name.as_str()).map_err(|_| refused())?;
            if sets_itself(&header) {
                return Err(refused());
            }
            let value = HeaderValue::try_from(value.as_str()).map_err(|_| refused())?;
            headers.append(header, value);
        }
        Ok(Self { uri, headers, secrets: endpoint.secrets, client: client.clone(), total: endpoint.timeout })
    }

    /// The attempt's request at `now`: the body, its type, the signed envelope, then the
    /// custom headers.
    fn request(&self, job: &ClaimedJob, now: UnixTime) -> Result<Request<Full<Bytes>>, InvalidHeaderValue> {
        let mut headers = HeaderMap::with_capacity(5 + self.headers.len());
        let content_type = job.content_type.as_deref().map(HeaderValue::from_str).transpose()?;
        headers.insert(CONTENT_TYPE, content_type.unwrap_or(JSON));
        headers.insert(USER_AGENT, USER_AGENT_VALUE);
        for (name, value) in signed_headers(&self.secrets, &job.outgoing_id, now, &job.body) {
            headers.insert(HeaderName::from_static(name), HeaderValue::try_from(value)?);
        }
        for (name, value) in &self.headers {
            headers.append(name, value.clone());
        }
        let mut request = Request::new(Full::new(job.body.clone()));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = headers;
        Ok(request)
    }
}

/// The outcome of a job whose message's payload is gone (expunged, or purged by its
/// retention while an attempt was under way): a payload is a JSON object, never empty, so
/// an empty body is one that no longer exists. Refused for good without a connection:
/// an empty or `{}` body is never sent in its place.
fn content_expunged() -> AttemptOutcome {
    AttemptOutcome {
        result: AttemptResult::Refused { permanent: true },
        error: Some(idemgate_store::outbound::message::CONTENT_EXPUNGED.to_owned()),
        response_prefix: None,
    }
}

impl Deliver for EndpointDelivery {
    fn deliver<'a>(&'a self, job: &'a ClaimedJob, now: UnixTime) -> BoxFuture<'a, AttemptOutcome> {
        Box::pin(async move {
            if job.body.is_empty() {
                return content_expunged();
            }
            match self.request(job, now) {
                Ok(request) => exchange::exchange(&self.client.client, request, self.total).await,
                Err(_) => Failure::Unsendable.outcome(),
            }
        })
    }
}

#[cfg(test)]
mod tests;
