//! HTTP where HTTP lives. Every status idemgate chooses is chosen in `idemgate-http`'s
//! `src/answer/`: no other source file of any crate names a `StatusCode` (a status passed
//! through, an upstream's or a stored one, is a value, not a name). And every router and
//! response is built in `idemgate-http`: the gateway binary's sources name no axum type,
//! they only turn configuration into this crate's settings. Nor does any source outside
//! the retry policy write a status as a number (`status: 503`): a result that is not an
//! HTTP answer is `Accepted` or `Refused`.

use std::path::{Path, PathBuf};

fn sources(folder: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// Every `src/**/*.rs` of every crate of the workspace that ships: `idemgate-testkit` is a
/// dev-dependency whose scripted destination answers the statuses a test asks for.
fn workspace_sources() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(crates).unwrap() {
        let krate = krate.unwrap().path();
        if krate.ends_with("idemgate-testkit") {
            continue;
        }
        let src = krate.join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    for expected in
        ["idemgate/src/run.rs", "idemgate-http/src/console/admin/mod.rs", "idemgate-worker/src/worker/mod.rs"]
    {
        assert!(files.iter().any(|path| path.ends_with(expected)), "{expected} was scanned");
    }
    files
}

fn naming<'a>(files: &'a [PathBuf], words: &[&str], skip: impl Fn(&Path) -> bool) -> Vec<(&'a Path, String)> {
    files
        .iter()
        .filter(|path| !skip(path))
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            words.iter().filter(move |word| text.contains(*word)).map(move |word| (path.as_path(), (*word).to_owned()))
        })
        .collect()
}

#[test]
fn only_the_answer_modules_name_a_status() {
    let answer = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/answer");
    let mapping = std::fs::read_to_string(answer.join("mod.rs")).unwrap();
    assert!(mapping.contains("StatusCode::"), "the mapping was read");
    let files = workspace_sources();
    let found = naming(&files, &["StatusCode::"], |path| path.starts_with(&answer));
    assert!(found.is_empty(), "statuses chosen outside idemgate-http/src/answer/: {found:?}");
}

/// The `status: <three digits>` literals of `text` outside its tests (the inline test
/// module that closes a file): a status chosen as a number rather than by name.
fn status_literals(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    code.match_indices("status: ")
        .filter_map(|(at, word)| {
            let digits: String = code[at + word.len()..].chars().take_while(char::is_ascii_digit).collect();
            (digits.len() == 3).then(|| format!("{word}{digits}"))
        })
        .collect()
}

#[test]
fn only_the_retry_policy_maps_a_status_written_as_a_number() {
    let policy = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("idemgate-core/src/retry.rs");
    let mapping = std::fs::read_to_string(&policy).unwrap();
    assert!(status_literals(&mapping).iter().any(|found| found == "status: 410"), "the mapping was read");
    assert_eq!(status_literals("AttemptResult::Status { status: 503, retry_after: None }"), ["status: 503"]);
    let found: Vec<_> = workspace_sources()
        .into_iter()
        .filter(|path| *path != policy && !path.ends_with("tests.rs"))
        .flat_map(|path| {
            let literals = status_literals(&std::fs::read_to_string(&path).unwrap());
            literals.into_iter().map(move |literal| (path.clone(), literal))
        })
        .collect();
    assert!(found.is_empty(), "statuses written as numbers outside idemgate-core/src/retry.rs: {found:?}");
}

#[test]
fn the_gateway_binary_builds_no_router_and_no_response() {
    let binary = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("idemgate/src");
    let files = workspace_sources();
    let found = naming(&files, &["axum", "Router", "IntoResponse", "Response<"], |path| !path.starts_with(&binary));
    assert!(found.is_empty(), "HTTP built in the binary crate: {found:?}");
}
