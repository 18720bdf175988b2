//! Bounded body reading. The limit is enforced from `Content-Length` before a byte is read
//! and again on every frame, so an oversized or lying client never makes us buffer more
//! than the limit.

use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, header::CONTENT_LENGTH};
use http_body_util::BodyExt;

/// How long a client may take to send its whole body, unless configured otherwise.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// After an early 413 we read and discard at most this much of the rest, for at most
/// [`DRAIN_TIMEOUT`], so the client can read our answer before the connection closes
/// (closing with unread data makes the kernel reset the connection under the answer).
const DRAIN_LIMIT: u64 = 1 << 20;
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// Longer than the limit, by `Content-Length` or by bytes read.
    #[error("body exceeds {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The client did not finish sending within the body timeout.
    #[error("body was not received in time")]
    Timeout,
    /// The body stream broke or `Content-Length` is not a number.
    #[error("body could not be read")]
    Broken,
}

impl BodyError {
    /// A short stable code, usable as a metric label.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::TooLarge { .. } => "body_size",
            Self::Timeout => "body_timeout",
            Self::Broken => "body_unreadable",
        }
    }
}

/// Reads `body` completely if it is at most `limit` bytes and arrives within `timeout`.
pub async fn read_limited(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, BodyError> {
    let declared = declared_length(headers)?;
    if declared.is_some_and(|len| len > limit as u64) {
        if declared.is_some_and(|len| len <= DRAIN_LIMIT) {
            drain(body).await;
        }
        return Err(BodyError::TooLarge { limit });
    }
    match tokio::time::timeout(timeout, collect(body, limit)).await {
        Ok(result) => result,
        Err(_) => Err(BodyError::Timeout),
    }
}

fn declared_length(headers: &HeaderMap) -> Result<Option<u64>, BodyError> {
    let Some(value) = headers.get(CONTENT_LENGTH) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| BodyError::Broken)?;
    text.trim().parse().map(Some).map_err(|_| BodyError::Broken)
}

/// Collects the frames. A body that arrives as one frame, as most do, is kept as that
/// frame's bytes without a copy; only a second frame starts a buffer.
async fn collect(mut body: Body, limit: usize) -> Result<Bytes, BodyError> {
    let mut first: Option<Bytes> = None;
    let mut buffer = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BodyError::Broken)?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let read = first.as_ref().map_or(0, Bytes::len) + buffer.len();
        if read + data.len() > limit {
            drain(body).await;
            return Err(BodyError::TooLarge { limit });
        }
        if read == 0 {
            first = Some(data);
            continue;
        }
        if let Some(first) = first.take() {
            buffer.reserve(first.len() + data.len());
            buffer.extend_from_slice(&first);
        }
        buffer.extend_from_slice(&data);
    }
    Ok(first.unwrap_or_else(|| buffer.freeze()))
}

/// Reads and discards what the client is still sending, within bounds.
async fn drain(mut body: Body) {
    let discard = async {
        let mut seen = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, |d| d.len() as u64);
            if seen > DRAIN_LIMIT {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, discard).await;
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn with_length(len: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_LENGTH, HeaderValue::from_str(len).unwrap_or_else(|_| unreachable!()));
        headers
    }

    #[tokio::test]
    async fn a_body_at_the_limit_is_read_whole() {
        let body = Body::from(vec![b'x'; 8192]);
        let read = read_limited(&with_length("8192"), body, 8192, BODY_TIMEOUT).await;
        assert_eq!(read.map(|b| b.len()), Ok(8192));
    }

    #[tokio::test]
    async fn content_length_over_the_limit_is_refused_up_front() {
        let read = read_limited(&with_length("8193"), Body::from(vec![0u8; 8193]), 8192, BODY_TIMEOUT).await;
        assert_eq!(read, Err(BodyError::TooLarge { limit: 8192 }));
    }

    #[tokio::test]
    async fn a_body_without_length_is_cut_off_at_the_limit() {
        let chunks = (0..10).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![0u8; 1000])));
        let body = Body::from_stream(futures_util::stream::iter(chunks));
        let read = read_limited(&HeaderMap::new(), body, 8192, BODY_TIMEOUT).await;
        assert_eq!(read, Err(BodyError::TooLarge { limit: 8192 }));
    }

    #[tokio::test]
    async fn a_body_in_frames_is_read_whole_and_in_order() {
        for frames in [vec![], vec!["", "ab"], vec!["ab"], vec!["ab", "", "cd", "e"]] {
            let expected: String = frames.concat();
            let chunks = frames.iter().map(|f| Ok::<_, std::io::Error>(Bytes::from(*f)));
            let body = Body::from_stream(futures_util::stream::iter(chunks.collect::<Vec<_>>()));
            let read = read_limited(&HeaderMap::new(), body, 8192, BODY_TIMEOUT).await;
            assert_eq!(read, Ok(Bytes::from(expected)), "{frames:?}");
        }
    }

    #[tokio::test]
    async fn a_non_numeric_content_length_is_broken() {
        let read = read_limited(&with_length("12abc"), Body::empty(), 8192, BODY_TIMEOUT).await;
        assert_eq!(read, Err(BodyError::Broken));
    }
}
