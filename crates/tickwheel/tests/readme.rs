//! The READMEs' quick start (this crate's and the repository's) is `examples/quick_start.rs`
//! below its `//!` header, `main` included, byte for byte, so the code a reader pastes into a
//! new crate compiles and runs (`cargo test` builds every example) and cannot drift from it.

/// The repository's root, two folders above this crate.
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

/// A file of the repository, by its path from the root; `None` outside a checkout (the
/// packaged crate has no repository around it, and the tests that read one skip).
fn checkout(file: &str) -> Option<String> {
    std::fs::read_to_string(format!("{ROOT}{file}")).ok()
}

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

/// The example's code the READMEs show: all of it after its `//!` header and the blank line
/// that ends it.
fn example_body(example: &str) -> &str {
    let mut rest = example;
    while rest.starts_with("//!") {
        rest = rest.split_once('\n').map_or("", |(_, tail)| tail);
    }
    rest.strip_prefix('\n')
        .expect("a blank line after the example's header")
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

/// Fails, naming the line, where `readme`'s one rust block is not the example's shown code.
fn assert_quick_start(name: &str, readme: &str) {
    let block = readme_rust_block(readme);
    let body = example_body(include_str!("../examples/quick_start.rs"));
    if let Some((line, readme_line, code_line)) = first_difference(block, body) {
        panic!(
            "{name}'s quick start differs from examples/quick_start.rs at line {line} of the block:\n  \
             README: {readme_line:?}\n  code:   {code_line:?}"
        );
    }
}

#[test]
fn readme_quick_start_is_the_example() {
    assert_quick_start("crates/tickwheel/README.md", include_str!("../README.md"));
}

/// The repository's README (read from the checkout; a published package has no such file, so
/// the test is skipped there) shows the same code within its first 75 lines.
#[test]
fn repository_readme_quick_start_is_the_example() {
    let Some(readme) = checkout("README.md") else {
        eprintln!("no repository README: not a checkout, skipped");
        return;
    };
    assert_quick_start("README.md", &readme);
    let fence = readme.find("```rust\n").unwrap();
    let close = fence + readme[fence..].find("\n```\n").unwrap();
    let last_code_line = readme[..close].lines().count();
    assert!(
        last_code_line <= 75,
        "README.md's quick start ends at line {last_code_line}; it must fit in the first 75"
    );
}

#[test]
fn readme_carries_the_crate_facts() {
    let readme = include_str!("../README.md");
    for timer in [
        "HierarchicalWheel",
        "HashedWheel",
        "IndexedHeap",
        "LazyHeap",
    ] {
        assert!(readme.contains(timer), "README names {timer}");
    }
}

/// The design guide states the core crate's run-time dependencies ("no run-time
/// dependencies", or "one run-time dependency, `name`"); this keeps that sentence true of
/// `Cargo.toml`.
#[test]
fn design_guide_names_the_run_time_dependencies() {
    let manifest = include_str!("../Cargo.toml");
    let section = manifest
        .split_once("\n[dependencies]\n")
        .map_or("", |(_, rest)| rest.split("\n[").next().unwrap_or_default());
    let deps: Vec<&str> = section
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && l.contains('='))
        .map(|l| l.split('=').next().unwrap_or_default().trim())
        .collect();
    let Some(guide) = checkout("docs/design.md") else {
        eprintln!("no design guide: not a checkout, skipped");
        return;
    };
    let count = ["no", "one", "two", "three", "four"][deps.len()];
    let plural = if deps.len() == 1 { "" } else { "s" };
    let names: Vec<String> = deps.iter().map(|d| format!("`{d}`")).collect();
    let sentence = if deps.is_empty() {
        "no run-time dependencies".to_string()
    } else {
        format!(
            "{count} run-time dependenc{}, {}",
            if plural.is_empty() { "y" } else { "ies" },
            names.join(", ")
        )
    };
    assert!(
        guide.contains(&sentence),
        "docs/design.md should say {sentence:?} (Cargo.toml's [dependencies]: {deps:?})"
    );
}

/// The docs and the rustdoc quote the hierarchical wheel's bound on one call's work; this
/// keeps every quote equal to `max_call_work_bound()`, so a change of the bound (a longer
/// list limit, another level) fails here until each sentence says the new figure.
#[test]
fn quoted_work_bounds_match_the_code() {
    let bound = tickwheel::HierarchicalWheel::<()>::max_call_work_bound().to_string();
    let quotes = [
        ("README.md", "at most {} [units of work]"),
        ("docs/design.md", "at most {} units of work"),
        ("docs/benchmarks.md", "({} units of work at most)"),
        (
            "docs/bench-profile.md",
            "`max_call_work_bound()` = {} units",
        ),
        ("crates/tickwheel/src/timer.rs", "= {} units"),
        (
            "crates/tickwheel/src/wheel/hierarchical/mod.rs",
            "units of work ({}: timers",
        ),
    ];
    for (file, phrase) in quotes {
        let Some(text) = checkout(file) else {
            eprintln!("no {file}: not a checkout, skipped");
            continue;
        };
        let quote = phrase.replace("{}", &bound);
        assert!(text.contains(&quote), "{file} should say {quote:?}");
    }
}

/// README and ARCHITECTURE.md list the steps CI runs; this keeps both lists equal to the
/// `echo "== …"` steps of `scripts/ci.sh`. A step added there fails here until it is named in
/// the table below and in both lists.
#[test]
fn the_ci_steps_listed_are_the_ones_ci_runs() {
    // Each step's heading in ci.sh, and the words the lists name it by.
    let named = [
        ("== cargo fmt", "fmt"),
        ("== cargo clippy", "clippy"),
        ("== cargo doc", "docs"),
        ("== core crate without std", "the no_std build"),
        ("== benchmarks build", "the benchmark build"),
        ("== load generator gate", "the load generator gate"),
        ("== paired gate", "the paired gate"),
        ("== tests", "test"),
    ];
    let (Some(ci), Some(readme), Some(arch)) = (
        checkout("scripts/ci.sh"),
        checkout("README.md"),
        checkout("ARCHITECTURE.md"),
    ) else {
        eprintln!("not a checkout, skipped");
        return;
    };
    // README's list spans two comment lines; ARCHITECTURE's is one line.
    let readme_list: String = readme
        .lines()
        .skip_while(|l| !l.contains("scripts/ci.sh, what CI runs"))
        .take(2)
        .collect();
    let arch_list = arch
        .lines()
        .find(|l| l.contains("`ci.sh` (what CI runs"))
        .unwrap_or("");
    for line in ci.lines().filter(|l| l.starts_with("echo \"== ")) {
        let step = &line["echo \"".len()..];
        let Some(&(_, words)) = named.iter().find(|(head, _)| step.starts_with(head)) else {
            panic!("scripts/ci.sh runs a step this test does not know: {step}");
        };
        assert!(
            readme_list.contains(words),
            "README's list of CI steps lacks {words:?}"
        );
        assert!(
            arch_list.contains(words),
            "ARCHITECTURE.md's list of CI steps lacks {words:?}"
        );
    }
}

/// `docs/embedding.md` says how many loopback connections each example's integration test
/// opens; this keeps each count equal to the test's own `CONNECTIONS`.
#[test]
fn quoted_connection_counts_match_the_example_tests() {
    let Some(guide) = checkout("docs/embedding.md") else {
        eprintln!("not a checkout, skipped");
        return;
    };
    // The guide's words for each test, as they follow its count.
    let tests = [
        (
            "crates/tickwheel/tests/event_loop_server.rs",
            "for the event loop",
        ),
        (
            "crates/tickwheel-service/tests/threaded_server.rs",
            "for the threaded server",
        ),
        (
            "crates/tickwheel-async/tests/echo.rs",
            "for the async echo server on tokio",
        ),
        (
            "crates/tickwheel-async/tests/smol_echo.rs",
            "for the async echo server on smol",
        ),
    ];
    let sentence: String = guide
        .lines()
        .skip_while(|l| !l.contains("over loopback connections:"))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    for (file, words) in tests {
        let code = checkout(file).unwrap_or_else(|| panic!("{file} is missing"));
        let count: usize = code
            .lines()
            .find_map(|l| l.strip_prefix("const CONNECTIONS: usize = "))
            .and_then(|v| v.trim_end_matches(';').replace('_', "").parse().ok())
            .unwrap_or_else(|| panic!("{file} has no `const CONNECTIONS: usize = N;`"));
        // The count as the guide writes it: 1,000 with a comma.
        let shown = if count >= 1_000 {
            format!("{},{:03}", count / 1_000, count % 1_000)
        } else {
            count.to_string()
        };
        let quoted = sentence.contains(&format!("{shown} {words}"));
        assert!(
            quoted,
            "docs/embedding.md should say `{shown} {words}` ({file} opens {count}): {sentence:?}"
        );
    }
}

/// Whether the crates are on crates.io decides how their READMEs tell a reader to depend on
/// them. The repository's README states it ("Not on crates.io yet" until they are); this keeps
/// each library crate's README consistent with that statement: a path dependency and no
/// crates.io or docs.rs link while unpublished, `NAME = "MAJOR.MINOR"` once published.
#[test]
fn crate_readmes_install_line_follows_the_publishing_state() {
    let Some(readme) = checkout("README.md") else {
        eprintln!("not a checkout, skipped");
        return;
    };
    let published = !readme.contains("Not on crates.io yet");
    let version = env!("CARGO_PKG_VERSION");
    let minor = version.rsplit_once('.').map_or(version, |(head, _)| head);
    for name in ["tickwheel", "tickwheel-service", "tickwheel-async"] {
        let file = format!("crates/{name}/README.md");
        let text = checkout(&file).unwrap_or_else(|| panic!("{file} is missing"));
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name} = ")))
            .unwrap_or_else(|| panic!("{file} gives no `{name} = …` dependency line"));
        if published {
            let want = format!("{name} = \"{minor}\"");
            assert!(line.starts_with(&want), "{file}: {line:?}, want {want:?}");
        } else {
            let want = format!("{name} = {{ path = \"path/to/tickwheel/crates/{name}\"");
            assert!(
                line.starts_with(&want),
                "README.md says the crates are not on crates.io, so {file} should depend by \
                 path: {line:?}, want {want:?}"
            );
            for link in ["crates.io/crates/", "docs.rs/"] {
                assert!(
                    !text.contains(link),
                    "{file} links {link} while the crates are not published"
                );
            }
        }
    }
}

/// ARCHITECTURE.md's code map and the design guide's layout list every script in `scripts/`;
/// this keeps both lists complete as scripts come and go.
#[test]
fn every_script_is_in_the_code_map() {
    let (Some(arch), Some(design), Ok(dir)) = (
        checkout("ARCHITECTURE.md"),
        checkout("docs/design.md"),
        std::fs::read_dir(format!("{ROOT}scripts")),
    ) else {
        eprintln!("not a checkout, skipped");
        return;
    };
    let arch_scripts: String = arch
        .lines()
        .skip_while(|l| l.trim() != "### `scripts/`")
        .take_while(|l| !l.starts_with("## "))
        .collect();
    for entry in dir {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            arch_scripts.contains(&format!("`{name}`")),
            "ARCHITECTURE.md's scripts/ section does not name {name}"
        );
        assert!(
            design.contains(&format!("`{name}`")),
            "docs/design.md's layout does not name {name}"
        );
    }
}

/// ARCHITECTURE.md's code map names every source, test and example file of the core, async
/// and load-generator crates (by its path in the crate, by its folder's row, or by name in
/// its folder's row), so a file added without a line there fails here.
#[test]
fn every_file_is_in_the_code_map() {
    let Some(arch) = checkout("ARCHITECTURE.md") else {
        eprintln!("not a checkout, skipped");
        return;
    };
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut missing = Vec::new();
    for krate in ["tickwheel", "tickwheel-async", "tickwheel-loadgen"] {
        let base = std::path::PathBuf::from(format!("{ROOT}crates/{krate}"));
        let mut found = Vec::new();
        for part in ["src", "tests", "examples"] {
            files(&base.join(part), &mut found);
        }
        // The crate's section of the map: from its heading to the next.
        let heading = format!("### `crates/{krate}`");
        let section: String = arch
            .lines()
            .skip_while(|l| !l.starts_with(&heading))
            .skip(1)
            .take_while(|l| !l.starts_with("### "))
            .collect::<Vec<_>>()
            .join("\n");
        for path in found {
            let rel = path
                .strip_prefix(&base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let folder = rel.rsplit_once('/').map_or("", |(d, _)| d);
            let named = section.contains(&format!("`{rel}`"))
                || section.contains(&format!("`{folder}/`"))
                    && section.lines().any(|l| {
                        l.contains(&format!("`{folder}/`")) && l.contains(&format!("`{name}`"))
                    })
                || section.contains(&format!("`{folder}/`")) && name == "mod.rs"
                || rel == "src/lib.rs"
                || rel == "src/main.rs" && section.contains("`src/main.rs`");
            if !named {
                missing.push(format!("crates/{krate}/{rel}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name: {missing:#?}"
    );
}

/// README's pick for I/O timeouts quotes how much less time the hashed wheel spends in the
/// timer than the hierarchical wheel; this keeps that ratio equal to the one its own compare
/// table shows, so a new measurement changes the sentence with the table.
#[test]
fn the_recommendation_quotes_the_compare_table() {
    let Some(readme) = checkout("README.md") else {
        eprintln!("not a checkout, skipped");
        return;
    };
    // The columns the ratio reads: hashed first, hierarchical second.
    assert!(
        readme.contains("\n| | hashed | hierarchical |"),
        "README's compare table starts with the hashed and hierarchical columns"
    );
    let row: Vec<f64> = readme
        .lines()
        .find(|l| l.starts_with("| time inside the timer, % of one core |"))
        .expect("the compare table's time-inside-the-timer row")
        .split('|')
        .skip(2)
        .filter_map(|cell| cell.trim().parse().ok())
        .collect();
    let ratio = format!("{:.2}x", row[1] / row[0]);
    let sentence = format!("spends {ratio} less time in the timer than the hierarchical wheel");
    assert!(readme.contains(&sentence), "README should say {sentence:?}");
}
