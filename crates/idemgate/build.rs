//! Stamps the git commit the binary was built from into `idemgate --version`.
//!
//! `IDEMGATE_GIT_COMMIT` in the build's environment wins (a build from a source tarball or
//! inside a container without `.git`); otherwise `git rev-parse` is asked, and a build with
//! neither says `unknown` rather than failing.

use std::{path::PathBuf, process::Command};

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()).filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=IDEMGATE_GIT_COMMIT");
    let commit = std::env::var("IDEMGATE_GIT_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    // Rebuild when HEAD moves: HEAD itself (a checkout), its reflog (every commit, reset or
    // checkout appends to it), and the ref it names (a commit), loose or packed, which lives
    // in the common directory when this is a worktree. Only files that exist are named: Cargo
    // reruns a build script on every build while a named file is missing, and a worktree or
    // a repository whose refs were never packed has no packed-refs.
    let absolute = |which| git(&["rev-parse", "--path-format=absolute", which]).map(PathBuf::from);
    if let (Some(dir), Some(common)) = (absolute("--git-dir"), absolute("--git-common-dir")) {
        let mut watched = vec![dir.join("HEAD"), dir.join("logs").join("HEAD"), common.join("packed-refs")];
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(common.join(reference));
        }
        for path in watched.iter().filter(|path| path.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    println!("cargo:rustc-env=IDEMGATE_GIT_COMMIT={commit}");
}
