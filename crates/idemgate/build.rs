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
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the ref it names (a commit),
    // which lives in the common directory when this is a worktree.
    let absolute = |which| git(&["rev-parse", "--path-format=absolute", which]).map(PathBuf::from);
    if let (Some(dir), Some(common)) = (absolute("--git-dir"), absolute("--git-common-dir")) {
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", common.join(reference).display());
        }
        println!("cargo:rerun-if-changed={}", common.join("packed-refs").display());
    }
    println!("cargo:rustc-env=IDEMGATE_GIT_COMMIT={commit}");
}
