//! Proxy mode: `[[proxy]]` entries put the `Idempotency-Key` layer in front of any HTTP API.
//! The request is forwarded with its method, path below the prefix, query, headers (hop-by-
//! hop ones removed) and body; the answer comes back the same way, its body streamed.

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    response::{IntoResponse, Response},
};
use http::{HeaderMap, HeaderName, header};
use idemgate_core::Clock;
use idemgate_http::{
    answer::upstream_failed,
    body::read_limited,
    idempotency::{IdempotencyLayer, Refusal},
};
use idemgate_store::Store;

use crate::config::ProxyConfig;

/// Headers that describe one hop, never forwarded (RFC 9110, 7.6.1), plus the ones the
/// client library sets itself.
const HOP_BY_HOP: [HeaderName; 10] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::HOST,
    header::CONTENT_LENGTH,
];

#[derive(Debug)]
struct Upstream {
    base: String,
    client: reqwest::Client,
    max_body: usize,
    body_timeout: Duration,
}

/// The routes for one `[[proxy]]`, to be nested under its prefix.
pub fn router(proxy: &ProxyConfig, store: &Store, clock: Arc<dyn Clock>) -> Result<Router, reqwest::Error> {
    let client =
        reqwest::Client::builder().timeout(proxy.timeout).redirect(reqwest::redirect::Policy::none()).build()?;
    let upstream = Arc::new(Upstream {
        base: proxy.upstream.to_string().trim_end_matches('/').to_owned(),
        client,
        max_body: proxy.idempotency.max_request_body,
        body_timeout: proxy.timeout,
    });
    let layer = IdempotencyLayer::with_clock(store.clone(), proxy.idempotency.clone(), clock);
    Ok(Router::new().fallback(forward).with_state(upstream).layer(layer))
}

async fn forward(State(upstream): State<Arc<Upstream>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = read_limited(&parts.headers, body, upstream.max_body, upstream.body_timeout).await else {
        return Refusal::BodyTooLarge.into_response();
    };
    let path = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let request = upstream
        .client
        .request(parts.method, format!("{}{path}", upstream.base))
        .headers(end_to_end(&parts.headers))
        .body(body);
    match request.send().await {
        Ok(answer) => {
            let (status, headers) = (answer.status(), end_to_end(answer.headers()));
            let mut response = Response::new(Body::from_stream(answer.bytes_stream()));
            *response.status_mut() = status;
            *response.headers_mut() = headers;
            response
        }
        Err(err) => {
            tracing::warn!(timed_out = err.is_timeout(), "upstream request failed");
            upstream_failed(err.is_timeout())
        }
    }
}

/// `headers` without hop-by-hop ones, including those a `Connection` header names.
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|n| n.trim().to_ascii_lowercase()))
        .collect();
    headers
        .iter()
        .filter(|(name, _)| !HOP_BY_HOP.contains(name) && !named.iter().any(|n| n == name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}
