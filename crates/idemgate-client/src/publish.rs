//! Publishing a message to a Svix-compatible API (idemgate's `/api/v1`, or Svix's own) as
//! one operation: `POST {api}/api/v1/app/{app}/msg` with the bearer token and Svix's
//! `MessageIn` as body, under one `Idempotency-Key` (generated once, or the one given) kept
//! on every retry, including after a `409` for the same key still in flight. The answer is
//! the message's id, and whether it was the key's first answer given again.

use std::fmt;

use reqwest::Url;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::{
    Client, Final, Request, SendError, Sent,
    api_answer::{message_id, refusal_reason},
};

/// One message to publish. `Debug` shows neither the token nor the payload.
#[derive(Clone)]
pub struct Publish {
    /// The API's base URL, e.g. `http://127.0.0.1:8080` (the `/api/v1/…` path is added).
    pub api_url: String,
    /// The bearer token (a `publish` or `admin` token of `[api.tokens]`).
    pub token: String,
    /// The application: its id (`app_…`) or uid.
    pub app: String,
    /// The event type, e.g. `invoice.paid`.
    pub event_type: String,
    /// The payload: a JSON object, sent byte for byte (never re-serialised).
    pub payload: Vec<u8>,
    /// The message's `eventId`: a repeat with the same payload is the same message.
    pub event_id: Option<String>,
    /// The channels it is sent on (none: every endpoint whose filter allows it).
    pub channels: Vec<String>,
    /// The `Idempotency-Key`, so separate invocations share one operation; generated once
    /// when absent.
    pub idempotency_key: Option<String>,
}

impl fmt::Debug for Publish {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publish")
            .field("api_url", &self.api_url)
            .field("token", &"<redacted>")
            .field("app", &self.app)
            .field("event_type", &self.event_type)
            .field("payload", &format_args!("<{} bytes>", self.payload.len()))
            .field("event_id", &self.event_id)
            .field("channels", &self.channels)
            .field("idempotency_key", &self.idempotency_key)
            .finish()
    }
}

/// A message the API accepted.
#[derive(Debug, Clone)]
pub struct Published {
    /// The message's id (`msg_…`).
    pub message_id: String,
    /// Whether the answer was the key's first answer given again (`Idempotency-Replay:
    /// true`): the message had been published before, by an earlier attempt or invocation.
    pub replayed: bool,
    /// The operation: its key and every attempt.
    pub sent: Sent,
}

/// Why a message was not published. Its text never holds the token or the payload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The message cannot be sent as given.
    #[error("{0}")]
    Invalid(String),
    /// The request could not be sent at all.
    #[error(transparent)]
    Send(#[from] SendError),
    /// A final refusal: a 4xx other than a repeat in flight (an `eventId` with another
    /// payload, the key used for another request, a field refused).
    #[error("refused with {}: {reason}", .sent.status)]
    Refused {
        /// What the API said (`code: detail`, or each refused field's `loc: msg`).
        reason: String,
        /// The operation: the answer and every attempt.
        sent: Sent,
    },
    /// Every attempt failed transiently.
    #[error("no final answer after {} attempt(s)", .sent.attempts.len())]
    GaveUp {
        /// The operation: the last answer, if any, and every attempt.
        sent: Sent,
    },
    /// A 2xx whose body is not a `MessageOut`.
    #[error("the answer ({}) names no message", .sent.status)]
    NoMessage {
        /// The operation.
        sent: Sent,
    },
}

impl PublishError {
    /// The operation as it went, when it was sent.
    #[must_use]
    pub fn sent(&self) -> Option<&Sent> {
        match self {
            Self::Refused { sent, .. } | Self::GaveUp { sent } | Self::NoMessage { sent } => Some(sent),
            Self::Invalid(_) | Self::Send(_) => None,
        }
    }
}

/// Svix's `MessageIn`, as much of it as a publish sets.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageIn<'a> {
    event_type: &'a str,
    payload: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_id: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    channels: &'a [String],
}

impl Publish {
    /// The request: `POST {api}/api/v1/app/{app}/msg?with_content=false` (the answer need
    /// not carry the payload back), the bearer token, `MessageIn` with the payload's bytes.
    fn request(&self) -> Result<Request, PublishError> {
        let mut url = Url::parse(&self.api_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| PublishError::Invalid(format!("{:?} is not an http(s):// URL", self.api_url)))?;
        if self.app.is_empty() {
            return Err(PublishError::Invalid("the application is empty".to_owned()));
        }
        url.path_segments_mut()
            .map_err(|()| PublishError::Invalid(format!("{:?} cannot have a path", self.api_url)))?
            .pop_if_empty()
            .extend(["api", "v1", "app", &self.app, "msg"]);
        url.set_query(Some("with_content=false"));
        let payload: &RawValue = serde_json::from_slice(&self.payload)
            .map_err(|err| PublishError::Invalid(format!("the payload is not JSON: {err}")))?;
        if !payload.get().starts_with('{') {
            return Err(PublishError::Invalid("the payload is not a JSON object".to_owned()));
        }
        let message = MessageIn {
            event_type: &self.event_type,
            payload,
            event_id: self.event_id.as_deref(),
            channels: &self.channels,
        };
        let body = serde_json::to_vec(&message).map_err(|err| PublishError::Invalid(err.to_string()))?;
        let mut request =
            Request::post(url.to_string()).header("authorization", format!("Bearer {}", self.token)).json_body(body);
        if let Some(key) = &self.idempotency_key {
            request = request.idempotency_key(key.clone());
        }
        Ok(request)
    }
}

impl Client {
    /// Publishes `message` as one operation (see [`Publish`]): retried on connection
    /// errors, timeouts, 5xx, 408, 429 and a `409` for its key still in flight, always with
    /// the same key; any other 4xx is final.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), idemgate_client::PublishError> {
    /// use idemgate_client::{Client, Publish};
    /// let client = Client::new(Default::default())?;
    /// let published = client
    ///     .publish(Publish {
    ///         api_url: "http://127.0.0.1:8080".to_owned(),
    ///         token: std::env::var("IDEMGATE_API_TOKEN").unwrap_or_default(),
    ///         app: "shop".to_owned(),
    ///         event_type: "invoice.paid".to_owned(),
    ///         payload: br#"{"invoice":42}"#.to_vec(),
    ///         event_id: None,
    ///         channels: Vec::new(),
    ///         idempotency_key: Some("invoice-42-paid".to_owned()),
    ///     })
    ///     .await?;
    /// println!("{} (replayed: {})", published.message_id, published.replayed);
    /// # Ok(()) }
    /// ```
    pub async fn publish(&self, message: Publish) -> Result<Published, PublishError> {
        let sent = self.send(message.request()?).await?;
        match sent.outcome {
            Final::Succeeded => match message_id(&sent.body) {
                Some(message_id) => Ok(Published { message_id, replayed: sent.replayed, sent }),
                None => Err(PublishError::NoMessage { sent }),
            },
            Final::Rejected => {
                let reason = refusal_reason(&sent.body).unwrap_or_else(|| "no reason given".to_owned());
                Err(PublishError::Refused { reason, sent })
            }
            Final::GaveUp => Err(PublishError::GaveUp { sent }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(message: &Publish) -> Request {
        match message.request() {
            Ok(request) => request,
            Err(err) => panic!("{err}"),
        }
    }

    fn message() -> Publish {
        Publish {
            api_url: "http://127.0.0.1:8080/".to_owned(),
            token: "secret-token".to_owned(),
            app: "shop".to_owned(),
            event_type: "order.paid".to_owned(),
            payload: br#"{"amount": 1.10}"#.to_vec(),
            event_id: Some("evt-1".to_owned()),
            channels: vec!["eu".to_owned()],
            idempotency_key: Some("k-1".to_owned()),
        }
    }

    #[test]
    fn the_request_is_message_in_with_the_payload_byte_for_byte() {
        let request = built(&message());
        assert_eq!(request.url, "http://127.0.0.1:8080/api/v1/app/shop/msg?with_content=false");
        assert_eq!(
            &request.body[..],
            br#"{"eventType":"order.paid","payload":{"amount": 1.10},"eventId":"evt-1","channels":["eu"]}"#
        );
        assert_eq!(request.idempotency_key.as_deref(), Some("k-1"));
        let bare = built(&Publish { event_id: None, channels: Vec::new(), ..message() });
        assert_eq!(&bare.body[..], br#"{"eventType":"order.paid","payload":{"amount": 1.10}}"#);
    }

    #[test]
    fn the_application_is_one_path_segment_and_a_base_path_is_kept() {
        let odd = Publish { app: "a/b?c".to_owned(), api_url: "https://h/base".to_owned(), ..message() };
        assert_eq!(built(&odd).url, "https://h/base/api/v1/app/a%2Fb%3Fc/msg?with_content=false");
    }

    #[test]
    fn what_cannot_be_sent_is_refused_before_sending() {
        for bad in [
            Publish { payload: b"[1]".to_vec(), ..message() },
            Publish { payload: b"{".to_vec(), ..message() },
            Publish { api_url: "ftp://h".to_owned(), ..message() },
            Publish { app: String::new(), ..message() },
        ] {
            assert!(matches!(bad.request(), Err(PublishError::Invalid(_))), "{bad:?}");
        }
    }

    #[test]
    fn debug_shows_neither_token_nor_payload() {
        let shown = format!("{:?} {:?}", message(), built(&message()));
        assert!(!shown.contains("secret-token") && !shown.contains("1.10"), "{shown}");
    }
}
