//! The README's quick start is `tests/quick_start.rs` below its `//!` header, byte for byte,
//! so the code crates.io shows is code that compiles and runs (`cargo test` runs that file's
//! `main`) and cannot drift from it.

/// The body of the README's one ```` ```rust ```` block.
fn readme_rust_block(readme: &str) -> &str {
    let fence = "```rust\n";
    let start = readme.find(fence).expect("README has a ```rust block") + fence.len();
    let len = readme[start..]
        .find("\n```")
        .expect("the ```rust block is closed");
    assert!(
        !readme[start + len..].contains(fence),
        "README has one ```rust block"
    );
    &readme[start..=start + len]
}

/// The quick start's code: everything after its `//!` header and the blank line that ends it.
fn quick_start_body(source: &str) -> &str {
    let mut rest = source;
    while rest.starts_with("//!") {
        rest = rest.split_once('\n').map_or("", |(_, tail)| tail);
    }
    rest.strip_prefix('\n')
        .expect("a blank line after the quick start's header")
}

/// The first line (1-based) where `a` and `b` differ, with both lines (`None` past an end).
fn first_difference<'s>(
    a: &'s str,
    b: &'s str,
) -> Option<(usize, Option<&'s str>, Option<&'s str>)> {
    if a == b {
        return None;
    }
    let (mut la, mut lb) = (a.split('\n'), b.split('\n'));
    for line in 1.. {
        let (x, y) = (la.next(), lb.next());
        if x != y {
            return Some((line, x, y));
        }
    }
    unreachable!("unequal texts differ in some line")
}

#[test]
fn readme_quick_start_is_the_tested_one() {
    let readme = include_str!("../README.md");
    let block = readme_rust_block(readme);
    let body = quick_start_body(include_str!("quick_start.rs"));
    if let Some((line, readme_line, code_line)) = first_difference(block, body) {
        panic!(
            "the README's quick start differs from tests/quick_start.rs at line {line} of the block:\n  \
             README: {readme_line:?}\n  code:   {code_line:?}"
        );
    }
}

// The README's dependency line is checked with the other crates' by the core crate's
// `tests/readme.rs`, against whether the crates are published yet.
