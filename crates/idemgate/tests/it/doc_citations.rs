//! What ARCHITECTURE.md cites exists. Each invariant there names the test that breaks with
//! it, and the map names files; a renamed test or a moved file would leave a claim that
//! nothing checks any more. So every file path it quotes (`crates/...`, no wildcard) must
//! exist, and every long snake_case name it quotes (four words or more: test names, and the
//! few functions, columns and metrics it names) must occur as a whole word in the code.

use std::{
    collections::HashSet,
    fs,
    path::{Path, PathBuf},
};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The text of every code span (`...`) on the page.
fn code_spans(page: &str) -> Vec<&str> {
    page.split('`').skip(1).step_by(2).collect()
}

/// A quoted name worth checking: snake_case of four words or more, the last part of a
/// `module::path` if it has one.
fn cited_name(span: &str) -> Option<&str> {
    let name = span.rsplit("::").next()?;
    let words = name.split('_').collect::<Vec<_>>();
    let snake =
        words.iter().all(|word| !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    (snake && words.len() >= 4).then_some(name)
}

/// Every word (maximal run of `[A-Za-z0-9_]`) of the workspace's Rust sources and manifests.
fn words_of_the_code(root: &Path) -> HashSet<String> {
    let mut files = Vec::new();
    sources_under(&root.join("crates"), &mut files);
    let mut words = HashSet::new();
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        words.extend(
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_owned),
        );
    }
    words
}

fn sources_under(folder: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources_under(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs")
            || path.file_name().is_some_and(|name| name == "Cargo.toml")
        {
            found.push(path);
        }
    }
}

#[test]
fn every_test_and_file_that_architecture_md_cites_exists() {
    let root = repo_root();
    let page = fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let words = words_of_the_code(&root);
    let mut missing = Vec::new();
    for span in code_spans(&page) {
        if let Some(name) = cited_name(span) {
            if !words.contains(name) {
                missing.push(format!("name {name}"));
            }
        } else if span.starts_with("crates/") && !span.contains(['*', ' ', ':']) && !root.join(span).exists() {
            missing.push(format!("file {span}"));
        }
    }
    assert!(missing.is_empty(), "ARCHITECTURE.md cites what does not exist:\n{}", missing.join("\n"));
}

#[test]
fn a_cited_name_is_long_snake_case_and_spans_are_read_between_backticks() {
    assert_eq!(code_spans("a `b` c `d::e_f` g"), ["b", "d::e_f"]);
    assert_eq!(cited_name("a_test_that_breaks"), Some("a_test_that_breaks"));
    assert_eq!(cited_name("module::a_test_that_breaks"), Some("a_test_that_breaks"));
    assert_eq!(cited_name("too_short_name"), None);
    assert_eq!(cited_name("Not_snake_case_here"), None);
    assert_eq!(cited_name("a test that breaks"), None);
}
