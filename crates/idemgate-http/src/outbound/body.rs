//! A request's JSON body and query parameters, refused in Svix's 422 shape
//! (`HTTPValidationError`) without echoing what the caller sent: a body may hold a
//! payload or a secret.

use serde::de::DeserializeOwned;

use super::pagination::pairs;
use crate::answer::OutboundAnswer;

/// `bytes` as the JSON shape `T`. A missing member is refused at `["body", member]`; any
/// other fault at `["body"]`, saying only what kind of fault it is.
pub(crate) fn json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, OutboundAnswer> {
    serde_json::from_slice(bytes).map_err(|err| {
        let text = err.to_string();
        if let Some(member) = missing_member(&text) {
            return OutboundAnswer::invalid(&["body", member], "field required", "value_error.missing");
        }
        let msg = match err.classify() {
            serde_json::error::Category::Data => "a member has the wrong type or value",
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "the body is not valid JSON",
            serde_json::error::Category::Io => "the body could not be read",
        };
        OutboundAnswer::invalid(&["body"], msg, "value_error.jsondecode")
    })
}

/// The member serde names in "missing field `name`", if that is the fault.
fn missing_member(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("missing field `")?;
    rest.split('`').next().filter(|member| !member.is_empty())
}

/// The last value of the query parameter `name`, if given.
pub(crate) fn param(query: Option<&str>, name: &str) -> Option<String> {
    pairs(query.unwrap_or("")).filter(|(key, _)| key == name).last().map(|(_, value)| value.into_owned())
}

/// Every value of the query parameter `name` (repeated, or comma-separated).
pub(crate) fn params(query: Option<&str>, name: &str) -> Vec<String> {
    pairs(query.unwrap_or(""))
        .filter(|(key, _)| key == name)
        .flat_map(|(_, value)| value.split(',').map(str::to_owned).collect::<Vec<_>>())
        .filter(|value| !value.is_empty())
        .collect()
}

/// The boolean query parameter `name`: `true`/`false`, `default` when absent.
pub(crate) fn flag(query: Option<&str>, name: &str, default: bool) -> Result<bool, OutboundAnswer> {
    match param(query, name).as_deref() {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(_) => {
            Err(OutboundAnswer::invalid(&["query", name], "value could not be parsed to a boolean", "type_error.bool"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(answer: OutboundAnswer) -> Vec<String> {
        match answer {
            OutboundAnswer::Invalid(items) => items[0].loc.clone(),
            _ => Vec::new(),
        }
    }

    #[derive(Debug, serde::Deserialize)]
    struct Named {
        #[allow(dead_code)]
        name: String,
    }

    #[test]
    fn a_missing_member_is_refused_at_its_loc_and_a_wrong_value_is_not_echoed() {
        assert_eq!(json::<Named>(b"{}").map_err(loc).err(), Some(vec!["body".to_owned(), "name".to_owned()]));
        let err = json::<Named>(br#"{"name": 12345678}"#).err().map(|answer| format!("{answer:?}"));
        assert!(err.as_deref().is_some_and(|err| !err.contains("12345678")), "{err:?}");
        assert!(json::<Named>(b"{not json").is_err());
    }

    #[test]
    fn query_flags_and_lists_are_read_by_name() {
        let query = Some("with_content=false&event_types=a.b,c&event_types=d&expunge=yes");
        assert_eq!(flag(query, "with_content", true), Ok(false));
        assert_eq!(flag(query, "include_archived", false), Ok(false));
        assert!(flag(query, "expunge", false).is_err());
        assert_eq!(params(query, "event_types"), ["a.b", "c", "d"]);
        assert_eq!(param(query, "channel"), None);
    }
}
