//! jq programs on event bodies, for subscriptions (does this event go to that destination?)
//! and transforms (what body does that destination get?). A [`Program`] is compiled once,
//! when the configuration is read, and run on each event; compiling and running fail with
//! typed errors.
//!
//! Why jaq: it is a maintained implementation of jq in safe Rust, so the language operators
//! know is kept whole, with no expression language of idemgate's own. Its standard library
//! is loaded without the filters that read the process's environment or the clock (`env`,
//! `now`, `localtime`, `strflocaltime`): a program sees the event and nothing else, so the
//! same event gives the same decision and the same bytes on every run. `debug` and
//! `stderr` pass their input through and write nothing, so no event reaches the log.
//!
//! Errors never carry the event's bytes: a runtime error is described by its kind only
//! ([`RunError`]), because jaq's own messages quote the values involved.

use jaq_core::{
    Compiler, Ctx, Vars,
    data::JustLut,
    load::{Arena, File, Loader},
};
use jaq_json::Val;

/// The filters left out of jaq's standard library: they read the environment or the clock.
const LEFT_OUT: [&str; 4] = ["env", "now", "localtime", "strflocaltime"];

/// The natives behind `debug` and `stderr`, which would write the event's values to the
/// log or stderr: here they output nothing and write nothing.
const SILENCED: [&str; 2] = ["debug_empty", "stderr_empty"];

fn silent(_: jaq_core::Cv<'_, JustLut<Val>>) -> jaq_core::ValXs<'_, Val> {
    Box::new(std::iter::empty())
}

/// Longest error text kept from a compile error.
const MAX_ERROR: usize = 200;

type Filter = jaq_core::Filter<JustLut<Val>>;

/// A compiled jq program and its text.
#[derive(Clone)]
pub struct Program {
    text: String,
    filter: std::sync::Arc<Filter>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Program").field(&self.text).finish()
    }
}

impl PartialEq for Program {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// Why a program's text is not a program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid jq expression: {0}")]
pub struct CompileError(String);

/// Why running a program on an event failed, by kind (never with the event's values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The body is not JSON jq can read.
    #[error("the body is not JSON")]
    NotJson,
    /// A value had another type than the operation needs (`cannot use … as number`).
    #[error("a value of the wrong type (expected {0})")]
    Type(String),
    /// Indexing something that cannot be indexed that way.
    #[error("cannot index a value that way")]
    Index,
    /// Arithmetic on values it does not apply to.
    #[error("cannot calculate with those values")]
    Math,
    /// Any other error, including one the program raised itself with `error`.
    #[error("the expression raised an error")]
    Raised,
    /// The program called `halt`.
    #[error("the expression halted")]
    Halted,
}

/// Why a transform gives no body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    /// Running it failed.
    #[error("transform failed: {0}")]
    Run(#[from] RunError),
    /// It gave no output, or more than one.
    #[error("transform gave {0} outputs; it must give exactly one")]
    Outputs(usize),
}

impl Program {
    /// Compiles `text`, with jaq's standard library less what reads the environment or clock.
    pub fn compile(text: &str) -> Result<Self, CompileError> {
        let defs = jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs())
            .filter(|(name, _, _)| !LEFT_OUT.contains(name) && !SILENCED.contains(name))
            .chain(SILENCED.map(|name| jaq_core::native::run::<JustLut<Val>>((name, jaq_core::native::v(0), silent))));
        let arena = Arena::default();
        let modules = Loader::new(defs)
            .load(&arena, File { code: text, path: () })
            .map_err(|errors| CompileError(bounded(&load_message(errors))))?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errors| CompileError(bounded(&undefined_message(errors))))?;
        Ok(Self { text: text.to_owned(), filter: std::sync::Arc::new(filter) })
    }

    /// The program as written.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Every output of the program on the JSON `body`, or the first error.
    pub fn run(&self, body: &[u8]) -> Result<Vec<Val>, RunError> {
        let input = jaq_json::read::parse_single(body).map_err(|_| RunError::NotJson)?;
        let ctx = Ctx::<JustLut<Val>>::new(&self.filter.lut, Vars::new([]));
        self.filter.id.run((ctx, input)).map(|out| out.map_err(run_error)).collect()
    }

    /// A subscription's verdict on `body`: its first output is truthy (neither `false` nor
    /// `null`). No output is no match.
    pub fn matches(&self, body: &[u8]) -> Result<bool, RunError> {
        let input = jaq_json::read::parse_single(body).map_err(|_| RunError::NotJson)?;
        let ctx = Ctx::<JustLut<Val>>::new(&self.filter.lut, Vars::new([]));
        match self.filter.id.run((ctx, input)).next() {
            None => Ok(false),
            Some(out) => Ok(truthy(&out.map_err(run_error)?)),
        }
    }

    /// A transform's body for `body`: its one output as compact JSON, object keys in the
    /// order jaq gives them, so the same input always gives the same bytes.
    pub fn transform(&self, body: &[u8]) -> Result<Vec<u8>, TransformError> {
        match <[Val; 1]>::try_from(self.run(body)?) {
            Ok([one]) => Ok(one.to_string().into_bytes()),
            Err(outputs) => Err(TransformError::Outputs(outputs.len())),
        }
    }
}

fn truthy(value: &Val) -> bool {
    !matches!(value, Val::Null | Val::Bool(false))
}

/// A runtime error by its kind: jaq's messages quote the values, which are the event's.
fn run_error(exn: jaq_core::Exn<'_, Val>) -> RunError {
    let error = match exn.get_err() {
        Ok(error) => error,
        Err(_) => return RunError::Halted,
    };
    let message = error.to_string();
    if message.starts_with("cannot use ") {
        let expected = message.rsplit(" as ").next().unwrap_or("another type");
        let expected: String = expected.chars().take_while(char::is_ascii_alphanumeric).collect();
        RunError::Type(if expected.is_empty() { "another type".to_owned() } else { expected })
    } else if message.starts_with("cannot index ") {
        RunError::Index
    } else if message.starts_with("cannot calculate ") {
        RunError::Math
    } else {
        RunError::Raised
    }
}

fn load_message(errors: jaq_core::load::Errors<&str, ()>) -> String {
    use jaq_core::load::Error;
    let mut parts = Vec::new();
    for (_, error) in errors {
        match error {
            Error::Io(io) => parts.extend(io.into_iter().map(|(path, why)| format!("cannot load {path}: {why}"))),
            Error::Lex(lex) => {
                parts.extend(lex.into_iter().map(|(expect, at)| format!("expected {} at {at:?}", expect.as_str())))
            }
            Error::Parse(parse) => parts.extend(
                parse.into_iter().map(|(expect, at)| format!("expected {} at {:?}", expect.as_str(), cut(at, 20))),
            ),
        }
    }
    parts.join("; ")
}

fn undefined_message(errors: jaq_core::compile::Errors<&str, ()>) -> String {
    let mut parts = Vec::new();
    for (_, undefined) in errors {
        parts.extend(undefined.into_iter().map(|(name, kind)| format!("undefined {} {name}", kind.as_str())));
    }
    parts.join("; ")
}

fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

fn bounded(text: &str) -> String {
    let mut out = cut(text, MAX_ERROR);
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_matches_on_its_first_output_being_truthy() {
        let program = Program::compile(".data.amount > 100").unwrap();
        assert!(program.matches(br#"{"data":{"amount":150}}"#).unwrap());
        assert!(!program.matches(br#"{"data":{"amount":50}}"#).unwrap());
        assert!(!Program::compile("empty").unwrap().matches(b"{}").unwrap(), "no output is no match");
        assert!(!Program::compile(".missing").unwrap().matches(b"{}").unwrap(), "null is no match");
        assert!(Program::compile(".a").unwrap().matches(br#"{"a":0}"#).unwrap(), "0 is truthy in jq");
        assert!(Program::compile("false, true").unwrap().matches(b"{}").is_ok_and(|m| !m), "only the first counts");
    }

    #[test]
    fn a_runtime_error_says_its_kind_and_never_the_values() {
        let program = Program::compile(".data.amount + 1").unwrap();
        let err = program.matches(br#"{"data":{"amount":"secret-value"}}"#).unwrap_err();
        assert_eq!(err, RunError::Math);
        let err = Program::compile(".a | tonumber").unwrap().matches(br#"{"a":{"secret":1}}"#).unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        let err = Program::compile(r#"error("secret-value")"#).unwrap().matches(b"{}").unwrap_err();
        assert_eq!(err, RunError::Raised);
        assert_eq!(Program::compile(".s.x").unwrap().matches(br#"{"s":"secret"}"#).unwrap_err(), RunError::Index);
        assert_eq!(Program::compile(".").unwrap().matches(b"not json").unwrap_err(), RunError::NotJson);
    }

    #[test]
    fn an_invalid_expression_is_a_compile_error() {
        for text in [".data.amount >", "{a: }", "nosuchfilter(1)", "$undefined", "env", "now", "(((("] {
            let err = Program::compile(text).unwrap_err();
            assert!(err.to_string().starts_with("invalid jq expression"), "{text}: {err}");
        }
    }

    #[test]
    fn a_transform_is_one_compact_output_with_the_same_bytes_every_time() {
        let program = Program::compile("{id: .id, amount: .data.amount, tags: [.tags[] | ascii_upcase]}").unwrap();
        let body = br#"{ "tags": ["a", "b"], "id": "evt_1", "data": { "amount": 150, "x": 1.5 } }"#;
        let first = program.transform(body).unwrap();
        assert_eq!(String::from_utf8(first.clone()).unwrap(), r#"{"id":"evt_1","amount":150,"tags":["A","B"]}"#);
        for _ in 0..3 {
            assert_eq!(program.transform(body).unwrap(), first);
        }
        assert_eq!(Program::compile("empty").unwrap().transform(b"{}").unwrap_err(), TransformError::Outputs(0));
        assert_eq!(Program::compile("1, 2").unwrap().transform(b"{}").unwrap_err(), TransformError::Outputs(2));
    }

    #[test]
    fn debug_and_stderr_pass_their_input_through_and_write_nothing() {
        let program = Program::compile(r#"debug | stderr | debug("x") | .a"#).unwrap();
        assert_eq!(program.transform(br#"{"a":1}"#).unwrap(), b"1");
    }

    #[test]
    fn a_program_is_shared_between_threads() {
        fn send_sync<T: Send + Sync>(_: &T) {}
        send_sync(&Program::compile(".").unwrap());
    }
}
