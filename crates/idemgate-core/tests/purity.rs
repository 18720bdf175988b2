//! The core stays pure by construction: none of the crates that do I/O, run async tasks,
//! serve or send HTTP or talk to a database is in its resolved dependency graph, directly
//! or through another crate (`cargo tree`, normal and build dependencies, this platform),
//! and its own code names no clock, no file, socket, thread, process or environment, and
//! no HTTP status or response type.

#![allow(clippy::unwrap_used, missing_docs)]

use std::{path::Path, process::Command};

const FORBIDDEN_CRATES: &[&str] =
    &["tokio", "rusqlite", "tokio-postgres", "deadpool-postgres", "postgres", "axum", "hyper", "reqwest"];

fn core_dependencies() -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "-p", "idemgate-core", "-e", "normal,build", "--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(output.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn the_core_depends_on_no_runtime_http_or_database_crate() {
    let dependencies = core_dependencies();
    assert!(dependencies.iter().any(|name| name == "serde_json"), "the tree was read: {dependencies:?}");
    let reached: Vec<&String> = dependencies.iter().filter(|name| FORBIDDEN_CRATES.contains(&name.as_str())).collect();
    assert!(reached.is_empty(), "idemgate-core reaches {reached:?}");
}

const FORBIDDEN_IN_SOURCE: &[&str] = &[
    "SystemTime",
    "Instant",
    "std::fs",
    "std::net",
    "std::io",
    "std::thread",
    "std::process",
    "std::env",
    "StatusCode",
    "http::Response",
    "Response<",
];

fn sources(folder: &Path, found: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn the_core_reads_no_clock_does_no_io_and_builds_no_response() {
    let mut files = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    assert!(files.iter().any(|(path, _)| path.ends_with("retry.rs")), "the sources were read");
    let named: Vec<(&str, &str)> = files
        .iter()
        .flat_map(|(path, text)| {
            FORBIDDEN_IN_SOURCE.iter().filter(|word| text.contains(*word)).map(move |word| (path.as_str(), *word))
        })
        .collect();
    assert!(named.is_empty(), "idemgate-core names {named:?}");
}
