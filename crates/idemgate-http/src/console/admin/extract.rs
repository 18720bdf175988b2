//! The admin API's extractors: axum's `Query`, `Json` and `Path`, whose refusals answer
//! as every other admin error does ([`AdminError`], JSON with a code and a detail) instead
//! of axum's plain-text rejections; and [`When`], a `since`/`until` in the forms the
//! command line takes.

use axum::{
    Json,
    extract::{FromRequest, FromRequestParts, Path, Query, Request, rejection::JsonRejection},
    http::request::Parts,
};
use idemgate_core::{UnixTime, time::TimeSpec};
use serde::{Deserialize, Deserializer, de::DeserializeOwned};

use crate::answer::{AdminError, Part};

/// `Query<T>`, refused as `400 invalid_query`.
#[derive(Debug)]
pub(crate) struct AdminQuery<T>(pub T);

/// `Path<T>`, refused as `400 invalid_path`.
#[derive(Debug)]
pub(crate) struct AdminPath<T>(pub T);

/// `Json<T>`, refused as `400 invalid_body` or `415 unsupported_media_type`.
#[derive(Debug)]
pub(crate) struct AdminJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for AdminQuery<T> {
    type Rejection = AdminError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(AdminError::Invalid { part: Part::Query, detail: rejection.body_text() }),
        }
    }
}

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for AdminPath<T> {
    type Rejection = AdminError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(rejection) => Err(AdminError::Invalid { part: Part::Path, detail: rejection.body_text() }),
        }
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for AdminJson<T> {
    type Rejection = AdminError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(Self(value)),
            Err(JsonRejection::MissingJsonContentType(_)) => Err(AdminError::UnsupportedMediaType),
            Err(rejection) => Err(AdminError::Invalid { part: Part::Body, detail: rejection.body_text() }),
        }
    }
}

/// A point in time as `since` and `until` take it: unix seconds (a number, or digits in a
/// string), or any form of the command line's `--since` ([`TimeSpec`]: RFC 3339, a date,
/// or a duration back from now such as `1h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct When(TimeSpec);

impl When {
    /// The instant, taking durations back from `now`.
    pub(crate) fn at(self, now: UnixTime) -> UnixTime {
        self.0.resolve(now)
    }
}

impl std::str::FromStr for When {
    type Err = idemgate_core::time::BadTimeSpec;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().parse::<i64>() {
            Ok(secs) => Ok(Self(TimeSpec::At(UnixTime(secs)))),
            Err(_) => text.parse().map(Self),
        }
    }
}

impl<'de> Deserialize<'de> for When {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Seconds(i64),
            Text(String),
        }
        match Given::deserialize(deserializer)? {
            Given::Seconds(secs) => Ok(Self(TimeSpec::At(UnixTime(secs)))),
            Given::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// `when` resolved at `now`, when given.
pub(crate) fn resolve(when: Option<When>, now: UnixTime) -> Option<UnixTime> {
    when.map(|when| when.at(now))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn since_takes_unix_seconds_and_every_form_of_the_command_line() {
        let now = UnixTime(1_800_000_000);
        let at = |text: &str| text.parse::<When>().map(|w| w.at(now).0);
        assert_eq!(at("1799990000"), Ok(1_799_990_000));
        assert_eq!(at("1h"), Ok(1_800_000_000 - 3600));
        assert_eq!(at("2027-01-15"), Ok(1_800_000_000 - 1_800_000_000 % 86_400));
        assert_eq!(at("2027-01-15T08:00:00Z"), Ok(1_800_000_000 - 1_800_000_000 % 86_400 + 8 * 3600));
        assert!(at("yesterday").is_err());
        let from_json: When = serde_json::from_str("1799990000").unwrap();
        assert_eq!(from_json.at(now), UnixTime(1_799_990_000));
    }
}
