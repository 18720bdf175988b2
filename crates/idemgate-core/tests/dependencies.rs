//! The core stays pure by construction: none of the crates that do I/O, run async tasks,
//! speak HTTP or talk to a database is in its resolved dependency graph, directly or
//! through another crate (`cargo tree`, normal and build dependencies, this platform).

#![allow(clippy::unwrap_used, missing_docs)]

use std::process::Command;

const FORBIDDEN: &[&str] =
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
    let reached: Vec<&String> = dependencies.iter().filter(|name| FORBIDDEN.contains(&name.as_str())).collect();
    assert!(reached.is_empty(), "idemgate-core reaches {reached:?}");
}
