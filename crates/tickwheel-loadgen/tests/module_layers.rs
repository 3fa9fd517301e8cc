//! The loadgen's modules form layers: no module imports, directly or through others, a module
//! that imports it.
//!
//! The test reads `src/**/*.rs`, collects each file's references to other modules of the crate
//! (`use crate::x`, `crate::x::…` in code, `super::…` that leaves the module, and in the crate
//! root `x::…` for a module `x`), counts them per top-level module (`report/*.rs` is `report`,
//! `main.rs` is `main`), and asserts the graph has no cycle, printing the cycle if there is one.
//! `cargo test --test module_layers -- --nocapture` prints the graph and its layers.
//!
//! The scan reads code only: comments (intra-doc links among them, which rustdoc resolves in any
//! direction and which compile to nothing) and string literals are blanked first. Test modules
//! (`#[cfg(test)] mod tests`) are scanned like the rest: their imports are real edges, and none
//! of them creates a cycle, so none is ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Each module and the modules it references, by top-level name.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// Modules that must import nothing from the crate: the ground floor.
const GROUND: &[&str] = &["units", "op", "context"];

#[test]
fn modules_form_layers_without_a_cycle() {
    let graph = graph_of(&source_files());
    let printed = render(&graph);
    println!("{printed}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the modules import each other in a circle: {}\n\n{printed}",
            cycle.join(" -> ")
        );
    }
    for (i, layer) in layers(&graph).iter().enumerate() {
        println!("layer {i}: {}", layer.join(", "));
    }
}

#[test]
fn ground_modules_import_nothing_from_the_crate() {
    let graph = graph_of(&source_files());
    for module in GROUND {
        let imports = graph
            .get(*module)
            .unwrap_or_else(|| panic!("no module `{module}` in src/"));
        assert!(
            imports.is_empty(),
            "`{module}` is the ground floor but imports {imports:?}"
        );
    }
}

/// The scan sees each kind of reference, skips comments and strings, and reports a cycle.
#[test]
fn the_scan_finds_a_cycle() {
    let files = [
        (
            "main.rs",
            "//! [`c`](crate::c)\nmod a;\nmod b;\nmod c;\nfn main() { a::run(); }",
        ),
        (
            "a.rs",
            "use crate::{b::X, c};\n/// [`Y`](crate::main_only)\npub fn run() { \
             let _ = \"crate::d\"; }",
        ),
        ("b/mod.rs", "mod inner;\n// use crate::c;\n"),
        (
            "b/inner.rs",
            "#[cfg(test)]\nmod tests {\n    use super::super::super::a::run;\n}",
        ),
        (
            "c.rs",
            "/* crate::a */ fn f<'a>(x: &'a str) -> char { 'x' }",
        ),
        (
            "d.rs",
            "fn g() -> char { '\\'' } fn h() { crate::c::f(\"\"); }",
        ),
    ];
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(path, text)| (path.to_string(), text.to_string()))
        .collect();
    let graph = graph_of(&files);
    let edges = |m: &str| graph[m].iter().cloned().collect::<Vec<_>>();
    assert_eq!(edges("main"), ["a"]);
    assert_eq!(edges("a"), ["b", "c"]);
    assert_eq!(edges("b"), ["a"]);
    assert!(edges("c").is_empty());
    assert_eq!(edges("d"), ["c"]);
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".to_string(), "b".to_string(), "a".to_string()])
    );
    let mut acyclic = graph.clone();
    acyclic.get_mut("b").unwrap().clear();
    assert_eq!(find_cycle(&acyclic), None);
    assert_eq!(
        layers(&acyclic),
        [vec!["b", "c"], vec!["a", "d"], vec!["main"]]
            .map(|l| l.into_iter().map(String::from).collect::<Vec<_>>())
    );
}

/// Every `.rs` file under `src/`, as (path relative to `src/` with `/` separators, text).
fn source_files() -> Vec<(String, String)> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                walk(&path, &format!("{prefix}{name}/"), out);
            } else if name.ends_with(".rs") {
                let text = fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
                out.push((format!("{prefix}{name}"), text));
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "",
        &mut out,
    );
    assert!(
        out.iter().any(|(path, _)| path == "main.rs"),
        "src/main.rs not found"
    );
    out
}

/// The top-level module a file belongs to: `config.rs` and `report/json.rs` give `config` and
/// `report`; the crate root `main.rs` gives `main`.
fn top_module(path: &str) -> String {
    let first = path.split('/').next().unwrap();
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// A file's module path inside the crate: `report/json.rs` is `[report, json]`,
/// `report/mod.rs` is `[report]`, `main.rs` is `[]`.
fn module_path(path: &str) -> Vec<String> {
    if path == "main.rs" {
        return Vec::new();
    }
    path.split('/')
        .filter(|part| *part != "mod.rs")
        .map(|part| part.strip_suffix(".rs").unwrap_or(part).to_string())
        .collect()
}

/// The module graph of `files` (paths relative to `src/`).
fn graph_of(files: &[(String, String)]) -> Graph {
    let modules: BTreeSet<String> = files.iter().map(|(path, _)| top_module(path)).collect();
    let mut graph = Graph::new();
    for (path, text) in files {
        let from = top_module(path);
        let targets = references(&module_path(path), &tokens(&code_only(text)), &modules);
        let entry = graph.entry(from.clone()).or_default();
        entry.extend(targets.into_iter().filter(|t| *t != from));
    }
    graph
}

/// `text` with comments removed and string and char literals emptied, so that only code is
/// scanned: an intra-doc link or a message naming a module is not an import.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if c == '/' && at(i + 1) == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && at(i + 1) == Some('*') {
            // Block comments nest.
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == Some('*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == Some('/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        // Raw strings: r"…", r#"…"#, br"…".
        if !ident_before && (c == 'r' || (c == 'b' && at(i + 1) == Some('r'))) {
            let mut j = i + if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while at(j) == Some('#') {
                hashes += 1;
                j += 1;
            }
            if at(j) == Some('"') {
                j += 1;
                while j < chars.len() {
                    if chars[j] == '"' && (1..=hashes).all(|h| at(j + h) == Some('#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                i = j;
                continue;
            }
        }
        if c == '"' {
            let mut j = i + 1;
            while j < chars.len() {
                match chars[j] {
                    '\\' => j += 2,
                    '"' => {
                        j += 1;
                        break;
                    }
                    _ => j += 1,
                }
            }
            out.push_str("\"\"");
            i = j;
            continue;
        }
        // A char literal ('x', '\n', '\'', '\u{…}'); a lifetime ('a) has no closing quote.
        if c == '\'' {
            if at(i + 1) == Some('\\') {
                let mut j = i + 3;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                out.push_str("' '");
                i = j + 1;
                continue;
            }
            if at(i + 2) == Some('\'') {
                out.push_str("' '");
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// A token of code: an identifier (or number), `::`, or one other character.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    PathSep,
    Punct(char),
}

fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Token::Punct(c));
            }
            i += 1;
        }
    }
    out
}

/// The top-level modules the code of one file references; `path` is the file's module path.
fn references(path: &[String], toks: &[Token], modules: &BTreeSet<String>) -> BTreeSet<String> {
    let word = |i: usize| match toks.get(i) {
        Some(Token::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let is = |i: usize, t: &Token| toks.get(i) == Some(t);
    // A path from the crate root: the module named at `i`, or every module of a `{…}` group.
    let from_root = |i: usize, out: &mut BTreeSet<String>| {
        let named = |name: &str| {
            if modules.contains(name) {
                name.to_string()
            } else {
                // An item of the crate root itself.
                "main".to_string()
            }
        };
        if let Some(name) = word(i) {
            out.insert(named(name));
        } else if is(i, &Token::Punct('{')) {
            let (mut depth, mut j, mut expect_name) = (1, i + 1, true);
            while depth > 0 && j < toks.len() {
                match &toks[j] {
                    Token::Punct('{') => depth += 1,
                    Token::Punct('}') => depth -= 1,
                    Token::Punct(',') if depth == 1 => expect_name = true,
                    Token::Word(w) if depth == 1 && expect_name => {
                        if w != "self" {
                            out.insert(named(w));
                        }
                        expect_name = false;
                    }
                    _ => {}
                }
                j += 1;
            }
        }
    };
    let mut out = BTreeSet::new();
    // Inline modules (`mod tests { … }`) open at a brace depth, and close back to it.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    for (i, tok) in toks.iter().enumerate() {
        let after_sep = i > 0 && (is(i - 1, &Token::PathSep) || is(i - 1, &Token::Punct('$')));
        match tok {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Token::Word(w) if w == "mod" => {
                if let (Some(name), true) = (word(i + 1), is(i + 2, &Token::Punct('{'))) {
                    inline.push((name.to_string(), depth));
                }
            }
            Token::Word(w) if w == "crate" && !after_sep && is(i + 1, &Token::PathSep) => {
                from_root(i + 2, &mut out);
            }
            Token::Word(w) if w == "super" && !after_sep && is(i + 1, &Token::PathSep) => {
                let mut here: Vec<String> = path.to_vec();
                here.extend(inline.iter().map(|(name, _)| name.clone()));
                let mut j = i;
                while word(j) == Some("super") && is(j + 1, &Token::PathSep) {
                    if here.pop().is_none() {
                        break;
                    }
                    j += 2;
                }
                match here.first() {
                    Some(top) => {
                        out.insert(top.clone());
                    }
                    None => from_root(j, &mut out),
                }
            }
            Token::Word(w)
                if !after_sep
                    && path.is_empty()
                    && inline.is_empty()
                    && modules.contains(w)
                    && is(i + 1, &Token::PathSep) =>
            {
                // In the crate root, a module is named without `crate::`.
                out.insert(w.clone());
            }
            _ => {}
        }
    }
    out
}

/// A cycle of `graph` as its modules in order, the first repeated at the end; `None` when
/// there is none.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = stack.iter().position(|s| s == node) {
            let mut cycle = stack[start..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

/// The modules of an acyclic `graph` by layer: layer 0 imports nothing from the crate, layer
/// `n` imports layer `n - 1` and maybe lower ones. Within a layer, modules keep name order.
fn layers(graph: &Graph) -> Vec<Vec<String>> {
    fn level(node: &str, graph: &Graph, memo: &mut BTreeMap<String, usize>) -> usize {
        if let Some(&l) = memo.get(node) {
            return l;
        }
        let l = graph
            .get(node)
            .into_iter()
            .flatten()
            .map(|next| level(next, graph, memo) + 1)
            .max()
            .unwrap_or(0);
        memo.insert(node.to_string(), l);
        l
    }
    let mut memo = BTreeMap::new();
    let mut out: Vec<Vec<String>> = Vec::new();
    for node in graph.keys() {
        let l = level(node, graph, &mut memo);
        if out.len() <= l {
            out.resize(l + 1, Vec::new());
        }
        out[l].push(node.clone());
    }
    out
}

/// One line per module: `config -> args, error, profile, thresholds, units`.
fn render(graph: &Graph) -> String {
    let mut out = String::from("module graph (module -> the modules it imports):\n");
    for (module, imports) in graph {
        let imports: Vec<&str> = imports.iter().map(String::as_str).collect();
        out.push_str(&format!("  {module} -> {}\n", imports.join(", ")));
    }
    out
}
