//! An event type's payload schema (`docs/design/outbound-api.md` §3.10): which of its
//! `schemas` applies, refusing a schema that does not compile, and checking a message's
//! payload against it.
//!
//! The schema that applies is version `"1"` of the event type's `schemas` map, or the
//! newest version when there is no `"1"`. It is compiled once per event type and
//! `updated_at` and kept in [`PayloadSchemas`]. Schemas are compiled without any way to
//! fetch a remote or file `$ref` (`jsonschema` without its default features): such a
//! schema is refused when the event type is written. A message whose event type has no
//! schema, or does not exist, is not checked; an archived event type's schema still
//! applies.

use std::sync::Arc;

use jsonschema::{Validator, paths::LocationSegment};
use quick_cache::sync::Cache;
use serde_json::Value;

use super::{ApiState, wire::Schemas};
use crate::answer::OutboundAnswer;

/// How many event types' compiled schemas are kept.
const CACHED_SCHEMAS: usize = 1024;

/// The compiled schemas, by event type name and `updated_at`.
pub(crate) struct PayloadSchemas(Cache<(String, i64), Arc<Compiled>>);

/// One event type's compiled schema, and the stored text it was compiled from (two
/// writes in the same millisecond share an `updated_at`).
struct Compiled {
    text: String,
    validator: Option<Validator>,
}

impl Default for PayloadSchemas {
    fn default() -> Self {
        Self(Cache::new(CACHED_SCHEMAS))
    }
}

impl PayloadSchemas {
    /// The compiled schema of `name` as stored at `updated_at_ms` with `text`; `None`:
    /// no schema applies.
    fn compiled(&self, name: &str, updated_at_ms: i64, text: &str) -> Arc<Compiled> {
        let key = (name.to_owned(), updated_at_ms);
        if let Some(found) = self.0.get(&key).filter(|found| found.text == text) {
            return found;
        }
        let schemas = serde_json::from_str::<Schemas>(text).ok();
        let validator = schemas.as_ref().and_then(applying).and_then(|schema| compile(schema).ok());
        let compiled = Arc::new(Compiled { text: text.to_owned(), validator });
        self.0.insert(key, Arc::clone(&compiled));
        compiled
    }
}

/// The schema of `schemas` that applies: version `"1"`, else the newest version (the
/// greatest number, versions that are not numbers last).
pub(crate) fn applying(schemas: &Schemas) -> Option<&Value> {
    schemas.get("1").or_else(|| {
        schemas
            .iter()
            .max_by_key(|(version, _)| version.parse::<u64>().ok().map(|n| n.saturating_add(1)))
            .map(|(_, schema)| schema)
    })
}

fn compile(schema: &Value) -> Result<Validator, jsonschema::ValidationError<'static>> {
    jsonschema::options().build(schema)
}

/// Refuses `schemas` (422 at `["body","schemas"]`) when any of its versions is not a JSON
/// Schema that compiles.
pub(crate) fn check_schemas(schemas: Option<&Schemas>) -> Result<(), OutboundAnswer> {
    for schema in schemas.into_iter().flat_map(|schemas| schemas.values()) {
        if let Err(err) = compile(schema) {
            // The schema's own text is not echoed: only what kind of fault it is.
            return Err(OutboundAnswer::invalid(
                &["body", "schemas"],
                format!("invalid JSON Schema: {}", err.masked()),
                "value_error.jsonschema",
            ));
        }
    }
    Ok(())
}

/// Refuses `payload` (422 at `["body","payload", …]`, the first place it fails) when the
/// event type `name` has a schema that it does not satisfy.
pub(crate) async fn check_payload(state: &ApiState, name: &str, payload: &str) -> Result<(), OutboundAnswer> {
    let Some(event_type) = state.store.event_type(name.to_owned()).await? else {
        return Ok(());
    };
    let Some(text) = event_type.schemas else {
        return Ok(());
    };
    let compiled = state.schemas.compiled(name, event_type.updated_at_ms, &text);
    let Some(validator) = &compiled.validator else {
        return Ok(());
    };
    let payload: Value = serde_json::from_str(payload).map_err(|_| {
        OutboundAnswer::invalid(&["body", "payload"], "the payload is not JSON", "value_error.jsonschema")
    })?;
    first_failure(validator, &payload).map_or(Ok(()), |(loc, msg)| {
        let loc: Vec<&str> = loc.iter().map(String::as_str).collect();
        Err(OutboundAnswer::invalid(&loc, msg, "value_error.jsonschema"))
    })
}

/// Where `payload` first fails `validator` (`["body","payload", …]`) and why, without the
/// payload's values.
fn first_failure(validator: &Validator, payload: &Value) -> Option<(Vec<String>, String)> {
    let err = validator.validate(payload).err()?;
    let mut loc = vec!["body".to_owned(), "payload".to_owned()];
    loc.extend(err.instance_path().into_iter().map(|segment| match segment {
        LocationSegment::Property(name) => name.into_owned(),
        LocationSegment::Index(index) => index.to_string(),
    }));
    Some((loc, err.masked().to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schemas(value: Value) -> Schemas {
        serde_json::from_value(value).expect("a map of versions")
    }

    #[test]
    fn version_one_applies_else_the_newest() {
        let both = schemas(json!({"2": {"type": "string"}, "1": {"type": "object"}}));
        assert_eq!(applying(&both), Some(&json!({"type": "object"})));
        let later = schemas(json!({"2": {"type": "string"}, "10": {"type": "array"}, "draft": {}}));
        assert_eq!(applying(&later), Some(&json!({"type": "array"})));
        assert_eq!(applying(&Schemas::new()), None);
    }

    #[test]
    fn the_first_failing_path_is_named_without_the_value() {
        let schema = json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "object",
                "properties": {"qty": {"type": "integer"}}}}},
        });
        let validator = compile(&schema).expect("a valid schema");
        let payload = json!({"items": [{"qty": 1}, {"qty": "secret-value"}]});
        let (loc, msg) = first_failure(&validator, &payload).expect("the payload fails");
        assert_eq!(loc, ["body", "payload", "items", "1", "qty"]);
        assert!(!msg.contains("secret-value"), "{msg}");
        assert_eq!(first_failure(&validator, &json!({"items": [{"qty": 2}]})), None);
    }

    #[test]
    fn a_schema_that_does_not_compile_or_fetches_a_ref_is_refused() {
        assert!(check_schemas(Some(&schemas(json!({"1": {"type": "object"}})))).is_ok());
        assert!(check_schemas(None).is_ok());
        for bad in [
            json!({"1": {"type": "no-such-type"}}),
            json!({"1": {"$ref": "http://169.254.169.254/latest/meta-data"}}),
            json!({"1": {"$ref": "file:///etc/passwd"}}),
        ] {
            assert!(check_schemas(Some(&schemas(bad.clone()))).is_err(), "{bad}");
        }
    }
}
