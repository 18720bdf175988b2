//! `[traces]`: where OpenTelemetry spans are exported (OTLP over HTTP, protobuf), under
//! which service name, and what share of new traces is kept. Off unless the section is
//! given; a collector is then named by URL, e.g. `http://127.0.0.1:4318/v1/traces`.

use super::{ConfigError, effective::Shown, raw::RawTraces, reading::Reading};

/// `[traces] service_name` when not given.
pub const DEFAULT_SERVICE_NAME: &str = "idemgate";
/// Longest service name accepted.
const MAX_SERVICE_NAME: usize = 255;

/// `[traces]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TracesConfig {
    /// The collector's OTLP/HTTP traces URL.
    pub endpoint: String,
    /// The `service.name` every span is exported under.
    pub service_name: String,
    /// The share of new traces kept, from 0 to 1; a sender's own decision is followed.
    pub sample_ratio: f64,
}

/// `[traces]`, if given.
pub(super) fn traces(raw: Option<RawTraces>, r: &mut Reading<'_>) -> Result<Option<TracesConfig>, ConfigError> {
    let Some(raw) = raw else {
        r.show("traces.endpoint", Shown::Note("(not set: traces are off)"));
        return Ok(None);
    };
    let Some(endpoint) = raw.endpoint else {
        return Err(ConfigError::new(
            "traces.endpoint",
            "is required in [traces] (e.g. \"http://127.0.0.1:4318/v1/traces\")",
        ));
    };
    check_endpoint(&endpoint)?;
    let endpoint = r.value("traces.endpoint", Some(endpoint), String::new());
    let service_name = r.value("traces.service_name", raw.service_name, DEFAULT_SERVICE_NAME.to_owned());
    if service_name.trim().is_empty() || service_name.len() > MAX_SERVICE_NAME {
        return Err(ConfigError::new("traces.service_name", format!("must be 1 to {MAX_SERVICE_NAME} characters")));
    }
    let sample_ratio = r.value("traces.sample_ratio", raw.sample_ratio, 1.0);
    if !(0.0..=1.0).contains(&sample_ratio) {
        return Err(ConfigError::new("traces.sample_ratio", format!("{sample_ratio} is not between 0 and 1")));
    }
    Ok(Some(TracesConfig { endpoint, service_name, sample_ratio }))
}

/// An `http` or `https` URL with a host and no credentials. The messages do not repeat the
/// URL, which might hold a credential.
fn check_endpoint(endpoint: &str) -> Result<(), ConfigError> {
    let bad = |message: &str| Err(ConfigError::new("traces.endpoint", message));
    let Ok(url) = reqwest::Url::parse(endpoint) else {
        return bad("is not an http:// or https:// URL (e.g. \"http://127.0.0.1:4318/v1/traces\")");
    };
    if !matches!(url.scheme(), "http" | "https") {
        return bad("must be an http:// or https:// URL");
    }
    if url.host_str().is_none_or(str::is_empty) {
        return bad("must name a host");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return bad("must not carry credentials");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Uses, raw, validated::validate_for};

    const SOURCE: &str = "[sources.a]\nscheme = \"github\"\nsecrets = [\"s\"]\n";

    fn traces(extra: &str, env: &[(&str, &str)]) -> Result<Option<TracesConfig>, ConfigError> {
        let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        let raw = raw::parse(&format!("{SOURCE}{extra}"), env)?;
        validate_for(raw, Path::new("."), Uses::Store).map(|(config, _)| config.traces)
    }

    #[test]
    fn traces_are_off_without_the_section_and_take_their_defaults_with_it() {
        assert_eq!(traces("", &[]).unwrap(), None);
        let on = traces("[traces]\nendpoint = \"http://127.0.0.1:4318/v1/traces\"\n", &[]).unwrap().unwrap();
        assert_eq!(
            on,
            TracesConfig {
                endpoint: "http://127.0.0.1:4318/v1/traces".to_owned(),
                service_name: "idemgate".to_owned(),
                sample_ratio: 1.0,
            }
        );
        let env = [("IDEMGATE_TRACES__SAMPLE_RATIO", "0.25"), ("IDEMGATE_TRACES__SERVICE_NAME", "edge")];
        let set = traces("[traces]\nendpoint = \"https://otel.example:4318/v1/traces\"\n", &env).unwrap().unwrap();
        assert_eq!((set.service_name.as_str(), set.sample_ratio), ("edge", 0.25));
    }

    #[test]
    fn a_bad_traces_section_is_refused_naming_its_key_and_never_the_credential() {
        let cases = [
            ("[traces]\nservice_name = \"x\"\n", "traces.endpoint", "is required"),
            ("[traces]\nendpoint = \"127.0.0.1:4318\"\n", "traces.endpoint", "http:// or https://"),
            ("[traces]\nendpoint = \"not a url\"\n", "traces.endpoint", "is not an http:// or https:// URL"),
            ("[traces]\nendpoint = \"grpc://127.0.0.1:4317\"\n", "traces.endpoint", "http:// or https://"),
            (
                "[traces]\nendpoint = \"http://user:hunter2@127.0.0.1:4318/v1/traces\"\n",
                "traces.endpoint",
                "credentials",
            ),
            (
                "[traces]\nendpoint = \"http://127.0.0.1:4318/v1/traces\"\nservice_name = \" \"\n",
                "traces.service_name",
                "characters",
            ),
            (
                "[traces]\nendpoint = \"http://127.0.0.1:4318/v1/traces\"\nsample_ratio = 1.5\n",
                "traces.sample_ratio",
                "between 0 and 1",
            ),
            (
                "[traces]\nendpoint = \"http://127.0.0.1:4318/v1/traces\"\nsample_ratio = -0.1\n",
                "traces.sample_ratio",
                "between 0 and 1",
            ),
            (
                "[traces]\nendpoint = \"http://127.0.0.1:4318/v1/traces\"\nsample_ratio = nan\n",
                "traces.sample_ratio",
                "between 0 and 1",
            ),
        ];
        for (text, key, says) in cases {
            let err = traces(text, &[]).unwrap_err();
            assert_eq!(err.key, key, "{text}");
            assert!(err.message.contains(says), "{text}: {err}");
            assert!(!err.to_string().contains("hunter2"), "{err}");
        }
    }
}
