//! Records what the loadgen was built from, for the `context` of every report:
//!
//! - `TICKWHEEL_GIT_COMMIT`: `git rev-parse --short HEAD`, with `-dirty` when
//!   `git status --porcelain` lists a change to the sources built into the tool ([`SOURCES`]);
//!   empty when git or the repository is absent.
//! - `TICKWHEEL_RUSTC_VERSION`: `$RUSTC --version`; empty when it cannot be run.
//!
//! The build never fails because of git: every failure leaves the value empty, which the
//! report writes as `null`. The script reruns when `HEAD`, the branch it points to, the index
//! or one of [`SOURCES`] changes, so the `-dirty` mark follows edits to what the tool is built
//! from, and an edit elsewhere in the workspace rebuilds nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the tool is built from, relative to this crate: itself, the crates it depends on by
/// path, and the workspace's manifest and lock file.
const SOURCES: [&str; 5] = [
    ".",
    "../tickwheel",
    "../tickwheel-service",
    "../../Cargo.toml",
    "../../Cargo.lock",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = git_commit(&manifest).unwrap_or_default();
    println!("cargo:rustc-env=TICKWHEEL_GIT_COMMIT={commit}");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = output(Command::new(rustc).arg("--version")).unwrap_or_default();
    println!("cargo:rustc-env=TICKWHEEL_RUSTC_VERSION={version}");
}

/// The short commit of the checkout holding `dir`, `-dirty` when [`SOURCES`] have uncommitted
/// changes; `None` outside a repository or without git.
fn git_commit(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| {
        let mut command = Command::new("git");
        command.arg("-C").arg(dir).args(args);
        output(&mut command)
    };
    let commit = git(&["rev-parse", "--short", "HEAD"])?;
    watch_repository(dir, &git);
    // `--no-optional-locks`: status must not refresh the index, which would rerun this script.
    let mut status = vec!["--no-optional-locks", "status", "--porcelain", "--"];
    status.extend(SOURCES);
    let dirty = git(&status).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    })
}

/// Asks cargo to rerun the script when the commit or the tree's state may have changed.
fn watch_repository(dir: &Path, git: &dyn Fn(&[&str]) -> Option<String>) {
    let absolute = |p: String| {
        let p = dir.join(p);
        std::fs::canonicalize(&p).unwrap_or(p)
    };
    let mut watched: Vec<PathBuf> = Vec::new();
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]).map(absolute) {
        watched.push(git_dir.join("HEAD"));
        watched.push(git_dir.join("index"));
    }
    if let (Some(common), Some(head)) = (
        git(&["rev-parse", "--git-common-dir"]).map(absolute),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ) {
        watched.push(common.join(&head));
        watched.push(common.join("packed-refs"));
    }
    watched.extend(SOURCES.iter().map(|source| dir.join(source)));
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// A command's trimmed standard output on success, on one line; `None` when it cannot run,
/// fails or prints something that is not UTF-8.
fn output(command: &mut Command) -> Option<String> {
    let out = command.output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().replace(['\n', '\r'], " "))
}
