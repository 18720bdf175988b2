//! Proxy mode: `[[proxy]]` entries put the `Idempotency-Key` layer in front of any HTTP API.
//! The request is forwarded with its method, path below the prefix, query, headers (hop-by-
//! hop ones removed, forwarding ones the gateway's own) and body; the answer comes back the
//! same way, its body streamed.
//!
//! A path with a dot segment (`.` or `..`, plain or percent-encoded) is refused before
//! anything else: joined to the upstream's base path it could reach above it.
//!
//! Nothing a client says about earlier hops is trusted. Its `X-Forwarded-For` and
//! `Forwarded` are kept as a list with the peer appended, so only the last element is
//! vouched for by the gateway; `X-Forwarded-Host` and `X-Forwarded-Proto` are replaced.

use std::{net::IpAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use http::{HeaderMap, HeaderName, HeaderValue, header};
use idemgate_clock::Clock;
use idemgate_store::Store;
use percent_encoding::percent_decode_str;

use crate::{
    Peer,
    answer::ProxyAnswer,
    body::read_limited,
    idempotency::{IdempotencyConfig, IdempotencyLayer},
};

/// Headers that describe one hop, never forwarded (RFC 9110, 7.6.1; `Proxy-Connection` is
/// its obsolete spelling), plus the ones the client library sets itself.
const HOP_BY_HOP: [HeaderName; 11] = [
    header::CONNECTION,
    HeaderName::from_static("proxy-connection"),
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

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");

/// One `[[proxy]]`: an upstream API served under a prefix behind the `Idempotency-Key`
/// layer.
#[derive(Debug, Clone)]
pub struct ProxyRoute {
    /// The path prefix it is served under (a `[[proxy]]` may not take one of the gateway's
    /// own, [`crate::gateway::reserved_prefixes`]).
    pub prefix: String,
    /// The upstream's base URL; the path below the prefix is appended to it.
    pub upstream: http::Uri,
    /// Total timeout of one upstream request.
    pub timeout: Duration,
    /// The layer's settings for this upstream; its body limit and timeout also bound the
    /// requests it does not apply to.
    pub idempotency: IdempotencyConfig,
}

#[derive(Debug)]
struct Upstream {
    base: String,
    client: reqwest::Client,
    max_body: usize,
    body_timeout: Duration,
}

/// The routes for one `[[proxy]]`, to be nested under its prefix; the layer's records go to
/// `store` and read the time from `clock`.
pub fn router(proxy: &ProxyRoute, store: &Store, clock: Arc<dyn Clock>) -> Result<Router, reqwest::Error> {
    // `no_proxy`: reqwest would otherwise route through `HTTP_PROXY` and the like from the
    // environment, callers' credentials included; the upstream is reached directly.
    let client = reqwest::Client::builder()
        .timeout(proxy.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()?;
    let upstream = Arc::new(Upstream {
        base: proxy.upstream.to_string().trim_end_matches('/').to_owned(),
        client,
        max_body: proxy.idempotency.max_request_body,
        body_timeout: proxy.idempotency.body_timeout,
    });
    let layer = IdempotencyLayer::with_clock(store.clone(), proxy.idempotency.clone(), clock);
    Ok(Router::new()
        .fallback(forward)
        .with_state(upstream)
        .layer(layer)
        .layer(middleware::from_fn(refuse_dot_segments)))
}

async fn refuse_dot_segments(request: Request, next: Next) -> Response {
    if has_dot_segment(request.uri().path()) {
        return ProxyAnswer::DotSegment.into_response();
    }
    next.run(request).await
}

/// Whether a segment of `path` is `.` or `..` once percent-decoded, also where a decoded
/// `/` or a `\` splits it (some servers take either for a separator).
fn has_dot_segment(path: &str) -> bool {
    path.split('/').any(|segment| {
        let decoded = percent_decode_str(segment).decode_utf8_lossy();
        decoded.split(['/', '\\']).any(|part| part == "." || part == "..")
    })
}

async fn forward(State(upstream): State<Arc<Upstream>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match read_limited(&parts.headers, body, upstream.max_body, upstream.body_timeout).await {
        Ok(body) => body,
        Err(err) => return ProxyAnswer::Body(err).into_response(),
    };
    let path = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let mut headers = end_to_end(&parts.headers);
    if let Some(peer) = parts.extensions.get::<Peer>() {
        set_forwarding(&mut headers, parts.headers.get(header::HOST), *peer);
    }
    let request = upstream.client.request(parts.method, format!("{}{path}", upstream.base)).headers(headers).body(body);
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
            ProxyAnswer::Upstream { timed_out: err.is_timeout() }.into_response()
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

/// Appends `peer` to `X-Forwarded-For` and `Forwarded`, and sets `X-Forwarded-Host` (the
/// client's `Host`) and `X-Forwarded-Proto` to what this hop saw.
fn set_forwarding(headers: &mut HeaderMap, host: Option<&HeaderValue>, peer: Peer) {
    let proto = if peer.tls { "https" } else { "http" };
    let ip = peer.addr.ip().to_canonical();
    append_element(headers, X_FORWARDED_FOR, &ip.to_string());
    let node = match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("\"[{v6}]\""),
    };
    let host_pair = host.and_then(|h| h.to_str().ok()).map(|h| format!(";host={}", quoted(h))).unwrap_or_default();
    append_element(headers, header::FORWARDED, &format!("for={node}{host_pair};proto={proto}"));
    headers.remove(X_FORWARDED_HOST);
    if let Some(host) = host {
        headers.insert(X_FORWARDED_HOST, host.clone());
    }
    headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static(proto));
}

/// Replaces every `name` line by one comma-separated list of their elements and `element`.
fn append_element(headers: &mut HeaderMap, name: HeaderName, element: &str) {
    let mut list: Vec<&str> = headers.get_all(&name).iter().filter_map(|v| v.to_str().ok()).collect();
    list.push(element);
    if let Ok(value) = HeaderValue::from_str(&list.join(", ")) {
        headers.insert(name, value);
    }
}

/// `value` as an RFC 9110 quoted-string.
fn quoted(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_are_found_in_every_spelling() {
        for path in ["/..", "/a/../b", "/.", "/%2e%2E", "/.%2e/x", "/%2E./x", "/..%2Fx", "/..%5cx", "/x/..\\y"] {
            assert!(has_dot_segment(path), "{path}");
        }
        for path in ["/", "/a/b", "/a..b", "/.well-known/x", "/...", "/a.b/c", "/%2e%2e%2e"] {
            assert!(!has_dot_segment(path), "{path}");
        }
    }

    #[test]
    fn forwarding_lists_gain_the_peer_and_ipv6_is_quoted() {
        let mut headers = HeaderMap::new();
        headers.append(X_FORWARDED_FOR, HeaderValue::from_static("1.2.3.4"));
        let peer = Peer { addr: "[::1]:9".parse().unwrap_or_else(|_| unreachable!()), tls: true };
        set_forwarding(&mut headers, Some(&HeaderValue::from_static("h:8443")), peer);
        assert_eq!(headers[X_FORWARDED_FOR], "1.2.3.4, ::1");
        assert_eq!(headers[header::FORWARDED], "for=\"[::1]\";host=\"h:8443\";proto=https");
        assert_eq!(headers[X_FORWARDED_PROTO], "https");
        assert_eq!(headers[X_FORWARDED_HOST], "h:8443");
    }
}
