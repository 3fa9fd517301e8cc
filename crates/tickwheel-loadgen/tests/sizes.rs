//! No function of the load generator runs over 80 lines, and no file over 600 lines of code
//! before its tests (a file's `#[cfg(test)]` at column 0 and everything after it are left out,
//! as the line count of the crate leaves them out). A function is counted from its `fn` line
//! to the line where its braces close; `cargo test --test sizes -- --nocapture` prints the
//! longest of each.

use std::fs;
use std::path::{Path, PathBuf};

const MAX_FN_LINES: usize = 80;
const MAX_FILE_LINES: usize = 600;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's lines before its tests.
fn code(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .map(str::to_owned)
        .collect()
}

/// Each function's name and length in lines, from its `fn` line to its closing brace.
fn functions(lines: &[String]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        let is_fn = [
            "fn ",
            "pub fn ",
            "pub(crate) fn ",
            "const fn ",
            "pub(crate) const fn ",
        ]
        .iter()
        .any(|p| line.starts_with(p));
        if !is_fn || line.ends_with(';') {
            i += 1;
            continue;
        }
        let name: String = line
            .split("fn ")
            .nth(1)
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut opened, mut end) = (0i64, false, i);
        for (j, l) in lines.iter().enumerate().skip(i) {
            depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            opened |= l.contains('{');
            end = j;
            if opened && depth <= 0 {
                break;
            }
        }
        found.push((name, end - i + 1));
        i = end + 1;
    }
    found
}

#[test]
fn no_function_over_80_lines_and_no_file_over_600() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut over = Vec::new();
    let (mut longest_fn, mut longest_file) = ((String::new(), 0), (String::new(), 0));
    for path in &files {
        let lines = code(path);
        let file = path.display().to_string();
        if lines.len() > longest_file.1 {
            longest_file = (file.clone(), lines.len());
        }
        if lines.len() > MAX_FILE_LINES {
            over.push(format!("{file}: {} lines", lines.len()));
        }
        for (name, len) in functions(&lines) {
            if len > longest_fn.1 {
                longest_fn = (format!("{file}: {name}"), len);
            }
            if len > MAX_FN_LINES {
                over.push(format!("{file}: fn {name}, {len} lines"));
            }
        }
    }
    println!(
        "longest function: {} ({} lines)",
        longest_fn.0, longest_fn.1
    );
    println!(
        "longest file: {} ({} lines)",
        longest_file.0, longest_file.1
    );
    assert!(over.is_empty(), "over the limits: {over:#?}");
}

/// The counter sees a function's whole body, nested braces and all.
#[test]
fn a_function_is_counted_to_its_closing_brace() {
    let src: Vec<String> =
        "fn a() {\n    if x {\n        y();\n    }\n}\nfn b() -> u8 {\n    1\n}\n"
            .lines()
            .map(str::to_owned)
            .collect();
    assert_eq!(functions(&src), [("a".to_owned(), 5), ("b".to_owned(), 3)]);
}
