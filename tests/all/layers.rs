//! The shape of the code, read from its `crate::` and `super::` paths (outside comments
//! and test modules): every top-level module imports only the layers below it
//! (shared/ARCHITECTURE.md's table), and no two files import each other, directly or
//! round a longer circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What each top-level module may import. `commands` and the crate root may import
/// everything; everything else only what is listed. `fmt` (numbers and words) and
/// `files` (reading a file without blocking on it) are the foundation every layer may use.
const ALLOWED: &[(&str, &[&str])] = &[
    ("fmt", &[]),
    ("files", &[]),
    ("model", &["fmt", "files"]),
    ("counters", &["model", "fmt", "files"]),
    ("worker", &["model", "counters", "fmt", "files"]),
    ("analysis", &["model", "fmt", "files"]),
    ("ui", &["model", "fmt", "files"]),
    ("export", &["analysis", "model", "counters", "fmt", "files"]),
    (
        "engine",
        &[
            "model", "counters", "worker", "analysis", "ui", "fmt", "files",
        ],
    ),
    (
        "error",
        &[
            "model", "counters", "worker", "analysis", "ui", "engine", "fmt", "files",
        ],
    ),
    (
        "cli",
        &["model", "analysis", "export", "error", "fmt", "files"],
    ),
];

/// Every .rs file under src/, by its path relative to src/.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let root = crate::common::repo_root().join("src");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

/// A file's code without its test module (by the crate's convention the last item, as
/// clippy's `items_after_test_module` keeps it), comments or string literals.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut kept = String::new();
        let mut in_str = false;
        let mut prev = ' ';
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if !in_str && c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' {
                in_str = !in_str;
            } else if !in_str {
                kept.push(c);
            }
            prev = if prev == '\\' && c == '\\' { ' ' } else { c };
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// The module path of a file: `export/folder.rs` → [export, folder]; `mod.rs`, `lib.rs`
/// and `main.rs` are their folder's.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The paths a file names: `crate::a::b::{c, d::e}` gives a::b, a::b::c and a::b::d::e;
/// `super::x` is resolved against the file's module.
fn paths_named(rel: &str, code: &str) -> Vec<Vec<String>> {
    let me = module_of(rel);
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for (start, base) in code
        .match_indices("crate::")
        .map(|(i, _)| (i, "crate"))
        .chain(code.match_indices("super::").map(|(i, _)| (i, "super")))
    {
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let rest = &code[start + base.len() + 2..];
        let ident_end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let segs: Vec<String> = rest[..ident_end]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        // `super` is the parent of the file's module (a mod.rs is its folder's module).
        let mut path = match base {
            "crate" => Vec::new(),
            _ => me[..me.len().saturating_sub(1)].to_vec(),
        };
        path.extend(segs);
        out.push(path.clone());
        if rest[ident_end..].starts_with('{') {
            let group = &rest[ident_end + 1..];
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let item = item.split_whitespace().next().unwrap_or("");
                if item.is_empty() || item == "self" {
                    continue;
                }
                let mut p = path.clone();
                p.extend(item.split("::").map(str::to_string));
                out.push(p);
            }
        }
    }
    out
}

/// For each file, the other files it names.
fn file_edges(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<Vec<String>, String> =
        files.keys().map(|r| (module_of(r), r.clone())).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in files {
        let set = edges.entry(rel.clone()).or_default();
        for path in paths_named(rel, &code(text)) {
            // The longest prefix that is a file of its own.
            if let Some(target) = (1..=path.len())
                .rev()
                .find_map(|k| by_module.get(&path[..k]))
            {
                if target != rel {
                    set.insert(target.clone());
                }
            }
        }
    }
    edges
}

#[test]
fn every_module_imports_only_the_layers_below_it() {
    let files = sources();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut upward = Vec::new();
    for (rel, text) in &files {
        let top = module_of(rel).first().cloned().unwrap_or_default();
        let Some(may) = allowed.get(top.as_str()) else {
            continue; // commands, bin, lib.rs, main.rs: the top
        };
        for path in paths_named(rel, &code(text)) {
            let Some(first) = path.first() else { continue };
            if *first != top && !may.contains(&first.as_str()) {
                upward.push(format!("{rel} names crate::{}", path.join("::")));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "{} upward or sideways imports:\n{}",
        upward.len(),
        upward.join("\n")
    );
}

#[test]
fn no_files_import_each_other_round_a_circle() {
    let edges = file_edges(&sources());
    // Tarjan's strongly connected components (the crate's files are few: recursion is
    // fine).
    struct Scc<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        found: Vec<Vec<&'a str>>,
    }
    impl<'a> Scc<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut c = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    c.push(w);
                    if w == v {
                        break;
                    }
                }
                if c.len() > 1 {
                    c.sort_unstable();
                    self.found.push(c);
                }
            }
        }
    }
    let mut s = Scc {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            s.visit(v);
        }
    }
    assert!(
        s.found.is_empty(),
        "files that import each other: {:?}",
        s.found
    );
    // The reader sees something: the writer and the renderers are files that name others.
    assert!(edges["export/results.rs"].contains("export/folder.rs"));
    assert!(!edges["export/folder.rs"].contains("export/results.rs"));
}

#[test]
fn the_reader_of_paths_sees_groups_super_and_skips_comments_and_strings() {
    let text = "use crate::a::{b, c::d};\n// crate::x::y\nlet s = \"crate::q\";\nsuper::e::f();\n#[cfg(test)]\nuse crate::z;";
    let got = paths_named("m/n.rs", &code(text));
    let joined: Vec<String> = got.iter().map(|p| p.join("::")).collect();
    assert_eq!(joined, ["a", "a::b", "a::c::d", "m::e::f"], "{joined:?}");
}
