//! One status mapping per family: no source file of any crate but `idemgate-http`'s
//! `src/answer/` names a `StatusCode`, so every status idemgate chooses is chosen there.
//! (A status passed through, an upstream's or a stored one, is a value, not a name.)

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

#[test]
fn only_the_answer_modules_name_a_status() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let answer = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/answer");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(crates).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    let read = |path: &Path| std::fs::read_to_string(path).unwrap();
    assert!(read(&answer.join("mod.rs")).contains("StatusCode::"), "the mapping was read");
    for expected in ["idemgate/src/run.rs", "idemgate-http/src/admin.rs", "idemgate-worker/src/worker.rs"] {
        assert!(files.iter().any(|path| path.ends_with(expected)), "{expected} was scanned");
    }
    let naming: Vec<String> = files
        .iter()
        .filter(|path| !path.starts_with(&answer) && read(path).contains("StatusCode::"))
        .map(|path| path.display().to_string())
        .collect();
    assert!(naming.is_empty(), "statuses chosen outside idemgate-http/src/answer/: {naming:?}");
}
