//! Puts the git commit the binary is built from into `SPINEL_GIT_COMMIT` for `--version`:
//! `git rev-parse --short HEAD`, or "unknown" where git or the repository is absent (a
//! source tarball). `SPINEL_GIT_COMMIT` in the environment overrides both.

use std::{path::Path, process::Command};

fn main() {
    println!("cargo:rerun-if-env-changed=SPINEL_GIT_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    let commit = std::env::var("SPINEL_GIT_COMMIT").ok().or_else(|| {
        watch_head();
        git(&["rev-parse", "--short", "HEAD"])
    });
    println!("cargo:rustc-env=SPINEL_GIT_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
}

/// Output of one git command, when git runs and succeeds.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?.trim().to_string();
    (output.status.success() && !text.is_empty()).then_some(text)
}

/// Rebuilds when HEAD moves: HEAD itself (a checkout), the branch it points to (a commit)
/// and packed-refs (where a branch may live). Only files that exist are named: cargo would
/// rerun the script on every build for a missing one.
fn watch_head() {
    let mut files = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        files.push(git(&["rev-parse", "--git-path", &branch]));
    }
    files.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    for file in files.into_iter().flatten() {
        if Path::new(&file).exists() {
            println!("cargo:rerun-if-changed={file}");
        }
    }
}
