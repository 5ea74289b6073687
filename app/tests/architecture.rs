//! The folder tree is the architecture, and this test keeps it so: in `app/src` and
//! `server/src`, no module imports a module that imports it back (no cycle, through any number
//! of steps), no module of `app` imports one of a higher layer (the table below), no page imports
//! another page, no source file is over 600 lines, and no function over 100.
//!
//! Imports are read from the source text: every `crate::a::b` and `super::b` path outside
//! comments and unit-test modules, resolved to the deepest module that exists. A child using
//! its own folder's `mod.rs` (`db/events` → `db`) is not an edge: the folder is its home.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// `app`'s top-level modules by layer, lowest first. A module may import its own layer (without
/// a cycle) or a lower one, never a higher one.
const APP_LAYERS: &[&[&str]] = &[
    // Foundations: no knowledge of the database or the dashboard.
    &[
        "json",
        "url",
        "request_id",
        "model",
        "error",
        "blocking",
        "clock",
    ],
    // The domain's pure rules: deliveries, signatures, providers, how JSON is shown, routes.
    &["envelope", "schemes", "providers", "present", "routing"],
    // Configuration and the header policy built from it.
    &["config", "headers"],
    // The data layer.
    &["db"],
    // What hookbox does with the data: ingest, forwarding, retention, sign-in.
    &["ingest", "forward", "feed", "maintenance", "auth", "notify"],
    // What every server function checks first.
    &["guard"],
    // The dashboard: session functions, shared widgets, pages, the shell.
    &["session"],
    &["components"],
    &["pages"],
    &[""],
];

const MAX_LINES: usize = 600;

type Module = Vec<String>;

fn crate_root(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read the source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `db/events.rs` → `[db, events]`; `db/mod.rs` → `[db]`; `lib.rs` → `[]`.
fn module_of(root: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(root).expect("under the root");
    let mut parts: Module = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The text that counts: without comment lines and without the unit-test module.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths named in `code`, each as (`crate` or `super`, its segments), a `{a, b::c}` group
/// expanded to one path per member.
fn paths_in(code: &str) -> Vec<(bool, Vec<String>)> {
    let mut out = Vec::new();
    for (start, word) in [("crate::", true), ("super::", false)] {
        let mut rest = code;
        while let Some(at) = rest.find(start) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + start.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let mut segments = Vec::new();
            let mut tail = rest;
            loop {
                let name: String = tail
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name.is_empty() {
                    break;
                }
                tail = &tail[name.len()..];
                segments.push(name);
                match tail.strip_prefix("::") {
                    Some(next) => tail = next,
                    None => break,
                }
            }
            if let Some(group) = tail.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for member in group.split(',') {
                    let mut path = segments.clone();
                    path.extend(
                        member
                            .trim()
                            .split("::")
                            .take(1)
                            .filter(|s| !s.is_empty() && *s != "self")
                            .map(str::to_string),
                    );
                    out.push((word, path));
                }
            } else {
                out.push((word, segments));
            }
        }
    }
    out
}

struct Crate {
    /// Each module's file and the modules it imports.
    modules: BTreeMap<Module, (PathBuf, BTreeSet<Module>)>,
}

fn read(name: &str) -> Crate {
    let root = crate_root(name);
    let mut files = Vec::new();
    source_files(&root, &mut files);
    let known: BTreeSet<Module> = files.iter().map(|f| module_of(&root, f)).collect();
    let mut modules = BTreeMap::new();
    for file in files {
        let module = module_of(&root, &file);
        let is_folder = file
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs");
        let text = fs::read_to_string(&file).expect("read a source file");
        let mut imports = BTreeSet::new();
        for (from_root, segments) in paths_in(&code_of(&text)) {
            let mut path: Module = if from_root {
                Vec::new()
            } else {
                // `super` of `db/events.rs` is `db`; of `db/mod.rs`, the crate.
                let mut parent = module.clone();
                if !is_folder || !parent.is_empty() {
                    parent.pop();
                }
                parent
            };
            path.extend(segments);
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| known.contains(p))
                .unwrap_or_default();
            let own_ancestor = target.len() < module.len() && module.starts_with(&target);
            if target != module && !own_ancestor {
                imports.insert(target);
            }
        }
        modules.insert(module, (file, imports));
    }
    Crate { modules }
}

fn show(module: &Module) -> String {
    if module.is_empty() {
        "(root)".into()
    } else {
        module.join("/")
    }
}

/// Every cycle's modules, by Tarjan's strongly connected components.
fn cycles(krate: &Crate) -> Vec<Vec<String>> {
    struct Walk<'a> {
        krate: &'a Crate,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a Module) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        let krate = w.krate;
        for target in &krate.modules[v].1 {
            if !w.index.contains_key(target) {
                visit(w, target);
                let low = w.low[v].min(w.low[target]);
                w.low.insert(v, low);
            } else if w.stack.contains(&target) {
                let low = w.low[v].min(w.index[target]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(m) = w.stack.pop() {
                component.push(show(m));
                if m == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        krate,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for module in krate.modules.keys() {
        if !walk.index.contains_key(module) {
            visit(&mut walk, module);
        }
    }
    walk.found
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    for name in ["app", "server"] {
        let krate = read(name);
        assert!(krate.modules.len() > 10, "{name}: too few modules read");
        assert_eq!(
            cycles(&krate),
            Vec::<Vec<String>>::new(),
            "{name}: import cycles"
        );
    }
}

#[test]
fn no_module_of_app_imports_a_higher_layer_and_no_page_another_page() {
    let krate = read("app");
    let layer = |module: &Module| {
        let top = module.first().map(String::as_str).unwrap_or("");
        APP_LAYERS
            .iter()
            .position(|layer| layer.contains(&top))
            .unwrap_or_else(|| panic!("{}: not in APP_LAYERS", show(module)))
    };
    let mut upward = Vec::new();
    for (module, (_, imports)) in &krate.modules {
        for target in imports {
            let page = |m: &Module| m.len() == 2 && m[0] == "pages";
            if layer(target) > layer(module) || (page(module) && page(target)) {
                upward.push(format!("{} → {}", show(module), show(target)));
            }
        }
    }
    assert_eq!(upward, Vec::<String>::new(), "upward imports");
}

#[test]
fn no_source_file_is_over_600_lines() {
    let mut long = Vec::new();
    for name in ["app", "server"] {
        let mut files = Vec::new();
        source_files(&crate_root(name), &mut files);
        let tests = crate_root(name).join("../tests");
        if tests.is_dir() {
            source_files(&tests, &mut files);
        }
        for file in files {
            let lines = fs::read_to_string(&file).expect("read").lines().count();
            if lines > MAX_LINES {
                long.push(format!("{} ({lines} lines)", file.display()));
            }
        }
    }
    assert_eq!(long, Vec::<String>::new(), "files over {MAX_LINES} lines");
}

/// The longest a function may be, its signature and closing brace included.
const MAX_FUNCTION_LINES: usize = 100;

/// Each function of `text` (before its unit-test module) with its length in lines: from the
/// line of its `fn` to its closing brace, which rustfmt puts at the indentation of the `fn`.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let mut rest = code;
        for qualifier in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(qualifier).unwrap_or(rest);
        }
        let Some(signature) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The body opens where the signature ends; a declaration without one is skipped.
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';') || l.ends_with("{}")
        }) else {
            continue;
        };
        if !lines[open].trim_end().ends_with('{') {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = (open + 1..lines.len()).find(|&j| lines[j].trim_end() == close) {
            out.push((name, end - i + 1));
        }
    }
    out
}

#[test]
fn no_function_is_over_100_lines() {
    let mut long = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in ["app", "server"] {
        let mut files = Vec::new();
        source_files(&crate_root(name), &mut files);
        for file in files {
            // A unit-test module in a file of its own is tests, not the program.
            if file.file_name().is_some_and(|f| f == "tests.rs") {
                continue;
            }
            let shown = file
                .strip_prefix(&root)
                .expect("under the workspace")
                .to_string_lossy()
                .replace('\\', "/");
            let text = fs::read_to_string(&file).expect("read");
            for (function, lines) in function_lengths(&text) {
                if lines > MAX_FUNCTION_LINES {
                    long.push(format!("{shown}: {function} ({lines} lines)"));
                }
            }
        }
    }
    assert_eq!(
        long,
        Vec::<String>::new(),
        "functions over {MAX_FUNCTION_LINES} lines"
    );
}

#[test]
fn a_function_is_measured_from_its_fn_to_its_closing_brace() {
    let text = "pub async fn long(\n    a: u8,\n) -> u8 {\n    a\n}\n\nfn decl();\n    fn inner() {\n        1\n    }\n";
    assert_eq!(
        function_lengths(text),
        [("long".to_string(), 5), ("inner".to_string(), 3)]
    );
}

#[test]
fn the_reader_expands_groups_and_skips_comments_and_unit_tests() {
    let paths = paths_in("use crate::db::{events, filter::QueryError};\nx = super::contains::y;");
    assert_eq!(
        paths,
        [
            (true, vec!["db".into(), "events".into()]),
            (true, vec!["db".into(), "filter".into()]),
            (false, vec!["contains".into(), "y".into()]),
        ]
    );
    assert_eq!(
        code_of("a\n// crate::x\n#[cfg(test)]\nmod tests { crate::y }"),
        "a"
    );
}
