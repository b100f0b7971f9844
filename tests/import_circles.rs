//! No import circles in the crate, and each folder uses only what its layer
//! may use.
//!
//! The graph: one node per module file (src/**/*.rs, found by following the
//! `mod x;` declarations from src/lib.rs, `#[path]` included; an inline
//! `mod x { .. }` belongs to its file). File `a` uses file `b` when `a`'s code
//! (test code and macro bodies included, comments not) names a path that
//! resolves into `b`:
//! - `use` trees (`use crate::x::{y, z::W}`, `pub use`, globs), and paths in
//!   code (`crate::x::f()`, `$crate::x::T`, `super::T`, `self::y::f()`, or a
//!   module name in scope: a child module or one brought in by a `use`);
//! - a path resolves into the longest module prefix it names, so
//!   `crate::server::key::Key` is a use of server/key.rs and `crate::server::Key`
//!   one of server/mod.rs, even when mod.rs only re-exports it.
//!
//! Parents and children: declaring `mod x;` is not a use. A child naming its
//! parent's items (`super::T`, `crate::server::Ctx`) uses the parent; a parent
//! re-exporting or calling its child (`pub use key::Key`, `key::open()`) uses
//! the child. So a mod.rs that re-exports from a child must not also be used by
//! that child: what both need moves to a small module below both.
//!
//! A circle is a strongly connected set of files; the test prints each one with
//! the lines that close it, and fails. Layering rules (`LAYERS`) are checked on
//! the same graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Pure helpers: no FFI, nothing of the crate.
const PURE: &[&str] = &[
    "crate::args",
    "crate::docs",
    "crate::release",
    "crate::stats",
];
/// What a family may use: the layers below it, never another family.
const BELOW_FAMILIES: &[&str] = &[
    "crate::args",
    "crate::docs",
    "crate::family",
    "crate::release",
    "crate::server",
    "crate::stats",
    "crate::tuples",
];

/// Folders (module prefixes) and the only other modules they may use: each
/// folder's opening comment says the same in words.
const LAYERS: &[(&str, &[&str])] = &[
    ("crate::args", &[]),
    ("crate::docs", &[]),
    ("crate::release", &[]),
    ("crate::stats", &[]),
    // Data structures and encodings: pure.
    ("crate::tuples", PURE),
    // The FFI layer: the pure layers it serves, never a family.
    (
        "crate::server",
        &[
            "crate::args",
            "crate::docs",
            "crate::release",
            "crate::stats",
            "crate::tuples",
        ],
    ),
    // What the families declare and the INFO section over them.
    (
        "crate::family",
        &["crate::server", "crate::stats", "crate::docs"],
    ),
    (
        "crate::info",
        &[
            "crate::family",
            "crate::server",
            "crate::stats",
            "crate::release",
        ],
    ),
    ("crate::hcounter", BELOW_FAMILIES),
    ("crate::rv", BELOW_FAMILIES),
    ("crate::tl", BELOW_FAMILIES),
    ("crate::topn", BELOW_FAMILIES),
    ("crate::ulist", BELOW_FAMILIES),
];

#[test]
fn the_crate_has_no_import_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let krate = Crate::read(&root);
    let on_disk = rust_files(&root);
    let reached: BTreeSet<PathBuf> = krate.modules.values().cloned().collect();
    let unreached: Vec<_> = on_disk.difference(&reached).collect();
    assert!(
        unreached.is_empty(),
        "files the scan did not reach from src/lib.rs (a `mod` it cannot follow?): {unreached:?}"
    );
    let graph = krate.graph();
    assert!(
        graph.uses("lib.rs", "server/mod.rs") && graph.uses("info.rs", "family.rs"),
        "the scan misses plain uses; it cannot be trusted"
    );
    let circles = graph.circles();
    for circle in &circles {
        eprint!("{}", graph.describe(circle));
    }
    assert!(
        circles.is_empty(),
        "{} import circle(s), printed above",
        circles.len()
    );
}

#[test]
fn each_folder_uses_only_what_its_layer_allows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let krate = Crate::read(&root);
    let graph = krate.graph();
    let mut broken = Vec::new();
    for (from, to, evidence) in graph.module_edges(&krate) {
        for (layer, allowed) in LAYERS {
            let inside = |m: &str| m == *layer || m.starts_with(&format!("{layer}::"));
            let allowed_target = |m: &str| {
                inside(m)
                    || allowed
                        .iter()
                        .any(|a| m == *a || m.starts_with(&format!("{a}::")))
            };
            if inside(&from) && !allowed_target(&to) {
                broken.push(format!("{layer} may not use {to}: {evidence}"));
            }
        }
    }
    assert!(broken.is_empty(), "layering broken:\n{}", broken.join("\n"));
}

/// The scan itself finds what it claims to (on sources written here).
#[test]
fn the_scan_finds_circles_through_paths_uses_and_parents() {
    let sources = [
        ("lib.rs", "mod a; mod b; mod e; mod p;\nfn main() { a::f(); }"),
        // A use tree with `self` and an alias, a path in code.
        ("a.rs", "use crate::{b::{self as bee}};\n// crate::p::x() in a comment is no use\nfn f() { bee::g(); let s = \"crate::p\"; }"),
        ("b.rs", "fn g() { crate::a::f(); }"),
        // A parent calling its child, the child naming its parent.
        ("p/mod.rs", "mod c;\n#[path = \"d_file.rs\"]\nmod d;\npub use c::T;"),
        ("p/c.rs", "pub struct T; fn h() -> super::U { todo!() }"),
        // A visibility restriction is no use.
        ("e.rs", "pub(in crate::a) fn e() {}"),
        // Declared only, and using its parent from an inline test module.
        ("p/d_file.rs", "#[cfg(test)]\nmod tests { use super::*; use super::super::c::T; }"),
    ];
    let krate = Crate::from_sources(&sources);
    let graph = krate.graph();
    let circles = graph.circles();
    let names: Vec<Vec<&str>> = circles
        .iter()
        .map(|c| c.iter().map(|&i| graph.files[i].as_str()).collect())
        .collect();
    assert_eq!(
        names,
        vec![vec!["a.rs", "b.rs"], vec!["p/c.rs", "p/mod.rs"]]
    );
    assert!(graph.uses("p/d_file.rs", "p/c.rs"));
    assert!(
        !graph.uses("p/mod.rs", "p/d_file.rs"),
        "declaring is no use"
    );
    assert!(
        !graph.uses("a.rs", "p/mod.rs"),
        "comments and strings are no use"
    );
}

// ---- the crate's module tree -------------------------------------------------

/// Module paths (`crate::server::key`) and the file of each.
struct Crate {
    modules: BTreeMap<String, PathBuf>,
    /// Each file's text, by path relative to src/.
    texts: BTreeMap<PathBuf, String>,
}

impl Crate {
    fn read(root: &Path) -> Crate {
        let texts = rust_files(root)
            .into_iter()
            .map(|p| {
                let text = fs::read_to_string(root.join(&p)).expect("readable source");
                (p, text)
            })
            .collect();
        Crate::build(texts)
    }

    fn from_sources(sources: &[(&str, &str)]) -> Crate {
        Crate::build(
            sources
                .iter()
                .map(|(p, t)| (PathBuf::from(p), t.to_string()))
                .collect(),
        )
    }

    fn build(texts: BTreeMap<PathBuf, String>) -> Crate {
        let mut modules = BTreeMap::new();
        let mut todo = vec![("crate".to_string(), PathBuf::from("lib.rs"))];
        while let Some((module, file)) = todo.pop() {
            let text = texts
                .get(&file)
                .unwrap_or_else(|| panic!("{module} declared but {file:?} not found"));
            // Where this file's children live: beside lib.rs/mod.rs, else in a
            // folder named after the file.
            let owns_dir = matches!(
                file.file_name().and_then(|n| n.to_str()),
                Some("lib.rs" | "mod.rs")
            );
            let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
            let child_dir = if owns_dir {
                dir.clone()
            } else {
                dir.join(file.file_stem().expect("file name"))
            };
            for decl in declared_modules(&tokens(text)) {
                let child = format!(
                    "{module}::{}",
                    decl.inline_path
                        .iter()
                        .chain([&decl.name])
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("::")
                );
                let child_file = match decl.path_attribute {
                    Some(p) => dir.join(p),
                    None => {
                        let flat = child_dir.join(format!("{}.rs", decl.name));
                        if texts.contains_key(&flat) {
                            flat
                        } else {
                            child_dir.join(&decl.name).join("mod.rs")
                        }
                    }
                };
                todo.push((child, child_file));
            }
            modules.insert(module, file);
        }
        Crate { modules, texts }
    }

    fn module_of(&self, file: &Path) -> &str {
        self.modules
            .iter()
            .find(|(_, f)| f.as_path() == file)
            .map(|(m, _)| m.as_str())
            .expect("reached file")
    }

    /// The file a full path (`crate::a::b::Item`) names: its longest module prefix.
    fn file_of(&self, path: &[String]) -> Option<&PathBuf> {
        (1..=path.len())
            .rev()
            .find_map(|n| self.modules.get(&path[..n].join("::")))
    }

    fn is_module(&self, path: &[String]) -> bool {
        self.modules.contains_key(&path.join("::"))
    }

    fn graph(&self) -> Graph {
        let files: Vec<String> = self
            .texts
            .keys()
            .filter(|f| self.modules.values().any(|m| m == *f))
            .map(|f| f.to_string_lossy().into_owned())
            .collect();
        let mut edges: BTreeMap<(usize, usize), String> = BTreeMap::new();
        for (from_index, name) in files.iter().enumerate() {
            let file = PathBuf::from(name);
            let module: Vec<String> = self
                .module_of(&file)
                .split("::")
                .map(String::from)
                .collect();
            for named in named_paths(self, &module, &tokens(&self.texts[&file])) {
                let Some(target) = self.file_of(&named.path) else {
                    continue;
                };
                let to_index = files
                    .iter()
                    .position(|f| Path::new(f) == target)
                    .expect("known file");
                if to_index != from_index {
                    edges.entry((from_index, to_index)).or_insert_with(|| {
                        format!("{name}:{}: {}", named.line, named.path.join("::"))
                    });
                }
            }
        }
        Graph { files, edges }
    }
}

fn rust_files(root: &Path) -> BTreeSet<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in fs::read_dir(dir).expect("readable folder") {
            let path = entry.expect("folder entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.insert(path.strip_prefix(root).expect("below root").to_path_buf());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}

// ---- tokens ------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    PathSep,
    Punct(char),
}

struct Token {
    tok: Tok,
    line: usize,
}

/// Rust source as identifiers, `::`, string literals and single punctuation;
/// comments, char literals and lifetimes dropped.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if i >= chars.len() {
                    break;
                } else if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if let Some((end, content)) = string_literal(&chars, i) {
            line += chars[i..end].iter().filter(|&&c| c == '\n').count();
            out.push(Token {
                tok: Tok::Str(content),
                line,
            });
            i = end;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if at(i + 1) == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // `r#ident` is the identifier.
            if word == "r" && at(i) == '#' && (at(i + 1).is_alphabetic() || at(i + 1) == '_') {
                i += 1;
                continue;
            }
            out.push(Token {
                tok: Tok::Ident(word),
                line,
            });
        } else if c == ':' && at(i + 1) == ':' {
            out.push(Token {
                tok: Tok::PathSep,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(c),
                line,
            });
            i += 1;
        }
    }
    out
}

/// A string literal starting at `i` ("..", r#".."#, b"..", br"..", c".."): its
/// end and content.
fn string_literal(chars: &[char], i: usize) -> Option<(usize, String)> {
    // A literal's prefix is not part of a longer identifier.
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    while j < chars.len() && j - i < 2 && matches!(chars[j], 'b' | 'c' | 'r') {
        j += 1;
    }
    let raw = chars[i..j].contains(&'r');
    let mut hashes = 0;
    while raw && chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    let start = j;
    while j < chars.len() {
        if !raw && chars[j] == '\\' {
            j += 2;
        } else if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
            return Some((j + 1 + hashes, chars[start..j].iter().collect()));
        } else {
            j += 1;
        }
    }
    Some((chars.len(), chars[start..].iter().collect()))
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t.map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

fn is(t: Option<&Token>, want: &Tok) -> bool {
    t.is_some_and(|t| &t.tok == want)
}

// ---- declarations and paths ---------------------------------------------------

struct Declared {
    /// Inline modules around the declaration.
    inline_path: Vec<String>,
    name: String,
    path_attribute: Option<String>,
}

/// The inline modules open at each token (`mod x { .. }`), by brace depth.
fn inline_modules(toks: &[Token]) -> Vec<Vec<String>> {
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut at = Vec::with_capacity(toks.len());
    for (i, t) in toks.iter().enumerate() {
        match t.tok {
            Tok::Punct('{') => {
                depth += 1;
                if i >= 2 && ident(toks.get(i - 2)) == Some("mod") {
                    if let Some(name) = ident(toks.get(i - 1)) {
                        stack.push((name.to_string(), depth));
                    }
                }
            }
            Tok::Punct('}') => {
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
                depth -= 1;
            }
            _ => {}
        }
        at.push(stack.iter().map(|(n, _)| n.clone()).collect());
    }
    at
}

/// `mod x;` declarations (with their `#[path = ".."]`), in any inline module.
fn declared_modules(toks: &[Token]) -> Vec<Declared> {
    let inline = inline_modules(toks);
    let mut out = Vec::new();
    for (i, inline_path) in inline.iter().enumerate() {
        if ident(toks.get(i)) != Some("mod") || !is(toks.get(i + 2), &Tok::Punct(';')) {
            continue;
        }
        let Some(name) = ident(toks.get(i + 1)) else {
            continue;
        };
        // Attributes just before (`pub`, `pub(crate)` and `#[..]` may sit between).
        let mut path_attribute = None;
        let mut j = i;
        while j > 0 {
            j -= 1;
            match &toks[j].tok {
                Tok::Ident(w) if w == "path" && is(toks.get(j + 1), &Tok::Punct('=')) => {
                    if let Some(Token {
                        tok: Tok::Str(p), ..
                    }) = toks.get(j + 2)
                    {
                        path_attribute = Some(p.clone());
                    }
                }
                Tok::Punct(';' | '{' | '}') => break,
                _ => {}
            }
        }
        out.push(Declared {
            inline_path: inline_path.clone(),
            name: name.to_string(),
            path_attribute,
        });
    }
    out
}

/// Where a path is written: its module and how much of that is the file's.
struct Scope {
    module: Vec<String>,
    file_depth: usize,
}

struct Named {
    path: Vec<String>,
    line: usize,
}

/// Every full module path a file's code names (`use` leaves and paths in code).
fn named_paths(krate: &Crate, file_module: &[String], toks: &[Token]) -> Vec<Named> {
    let inline = inline_modules(toks);
    let scope_at = |i: usize| Scope {
        module: file_module.iter().chain(&inline[i]).cloned().collect(),
        file_depth: file_module.len(),
    };
    // Module names `use` brings into scope (file-wide: close enough).
    let mut bound: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut uses = Vec::new();
    let mut in_use = vec![false; toks.len()];
    for i in 0..toks.len() {
        if ident(toks.get(i)) == Some("use") && !is(toks.get(i + 1), &Tok::Punct('<')) {
            let end = (i..toks.len())
                .find(|&j| is(toks.get(j), &Tok::Punct(';')))
                .unwrap_or(toks.len());
            in_use[i..end].iter_mut().for_each(|b| *b = true);
            let mut leaves = Vec::new();
            use_tree(&toks[i + 1..end], Vec::new(), &mut leaves);
            for (relative, alias) in leaves {
                let Some(path) = absolute(krate, &scope_at(i), &BTreeMap::new(), &relative) else {
                    continue;
                };
                if let Some(alias) = alias.filter(|_| krate.is_module(&path)) {
                    bound.insert(alias, path.clone());
                }
                uses.push(Named {
                    path,
                    line: toks[i].line,
                });
            }
        }
    }
    // Paths in code: `a::b..` not preceded by `::`.
    for i in 0..toks.len() {
        // `pub(in crate::x)` restricts visibility: no use.
        let visibility = i >= 3
            && ident(toks.get(i - 1)) == Some("in")
            && is(toks.get(i - 2), &Tok::Punct('('))
            && ident(toks.get(i - 3)) == Some("pub");
        if in_use[i] || visibility || (i > 0 && is(toks.get(i - 1), &Tok::PathSep)) {
            continue;
        }
        let dollar = is(toks.get(i), &Tok::Punct('$'));
        let first = if dollar { i + 1 } else { i };
        if dollar && ident(toks.get(first)) != Some("crate") {
            continue;
        }
        let mut segments = Vec::new();
        let mut j = first;
        while let Some(word) = ident(toks.get(j)) {
            segments.push(word.to_string());
            if !is(toks.get(j + 1), &Tok::PathSep) {
                break;
            }
            j += 2;
        }
        if segments.len() < 2 {
            continue;
        }
        if let Some(path) = absolute(krate, &scope_at(i), &bound, &segments) {
            uses.push(Named {
                path,
                line: toks[i].line,
            });
        }
    }
    uses
}

/// The leaves of a `use` tree, each with the name it binds (`None` for globs).
fn use_tree(toks: &[Token], prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut path = prefix;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].tok {
            Tok::Ident(w) if w == "as" => {
                let alias = ident(toks.get(i + 1)).map(String::from);
                out.push((path, alias));
                return;
            }
            Tok::Ident(w) => {
                path.push(w.clone());
                i += 1;
            }
            Tok::PathSep => i += 1,
            Tok::Punct('*') => {
                out.push((path, None));
                return;
            }
            Tok::Punct('{') => {
                // Split the group at its top-level commas.
                let mut depth = 0;
                let mut start = i + 1;
                for j in i..toks.len() {
                    match toks[j].tok {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => depth -= 1,
                        Tok::Punct(',') if depth == 1 => {
                            use_tree(&toks[start..j], path.clone(), out);
                            start = j + 1;
                            continue;
                        }
                        _ => continue,
                    }
                    if depth == 0 {
                        use_tree(&toks[start..j], path.clone(), out);
                        return;
                    }
                }
                return;
            }
            _ => i += 1,
        }
    }
    // `a::b::{self}` names `a::b`.
    if path.last().is_some_and(|s| s == "self") && path.len() > 1 {
        path.pop();
    }
    if !path.is_empty() {
        let name = path.last().cloned();
        out.push((path, name));
    }
}

/// A path as written in `module` made absolute (`crate::..`), if it names
/// something of this crate (not `std::..`, not a local item).
fn absolute(
    krate: &Crate,
    scope: &Scope,
    bound: &BTreeMap<String, Vec<String>>,
    path: &[String],
) -> Option<Vec<String>> {
    let first = path.first()?;
    let module = &scope.module;
    let (mut base, mut rest) = match first.as_str() {
        "crate" => (vec!["crate".to_string()], &path[1..]),
        "self" => (module.to_vec(), &path[1..]),
        "super" => (module.to_vec(), path),
        name => {
            // A child module of this module, or (from an inline test module
            // that glob-imports its parent) of an enclosing one in the file.
            let child = (scope.file_depth..=module.len())
                .rev()
                .map(|n| {
                    module[..n]
                        .iter()
                        .cloned()
                        .chain([name.to_string()])
                        .collect::<Vec<_>>()
                })
                .find(|c| krate.is_module(c));
            if let Some(child) = child {
                (child, &path[1..])
            } else if let Some(b) = bound.get(name) {
                (b.clone(), &path[1..])
            } else {
                return None;
            }
        }
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().filter(|s| s.as_str() != "self").cloned());
    Some(base)
}

// ---- the graph ---------------------------------------------------------------

struct Graph {
    files: Vec<String>,
    /// (from, to) with the first line that makes the use.
    edges: BTreeMap<(usize, usize), String>,
}

impl Graph {
    fn index(&self, file: &str) -> usize {
        self.files
            .iter()
            .position(|f| f == file)
            .unwrap_or_else(|| panic!("no file {file}"))
    }

    fn uses(&self, from: &str, to: &str) -> bool {
        self.edges.contains_key(&(self.index(from), self.index(to)))
    }

    fn module_edges(&self, krate: &Crate) -> Vec<(String, String, String)> {
        let module = |i: usize| krate.module_of(Path::new(&self.files[i])).to_string();
        self.edges
            .iter()
            .map(|(&(a, b), why)| (module(a), module(b), why.clone()))
            .collect()
    }

    /// Strongly connected sets of two or more files (Tarjan), each sorted.
    fn circles(&self) -> Vec<Vec<usize>> {
        struct State<'g> {
            graph: &'g Graph,
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            on_stack: Vec<bool>,
            stack: Vec<usize>,
            next: usize,
            out: Vec<Vec<usize>>,
        }
        fn visit(s: &mut State, v: usize) {
            s.index[v] = Some(s.next);
            s.low[v] = s.next;
            s.next += 1;
            s.stack.push(v);
            s.on_stack[v] = true;
            let targets: Vec<usize> = s
                .graph
                .edges
                .keys()
                .filter(|(a, _)| *a == v)
                .map(|&(_, b)| b)
                .collect();
            for w in targets {
                match s.index[w] {
                    None => {
                        visit(s, w);
                        s.low[v] = s.low[v].min(s.low[w]);
                    }
                    Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(s.low[v]) == s.index[v] {
                let mut set = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack[w] = false;
                    set.push(w);
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    s.out.push(set);
                }
            }
        }
        let n = self.files.len();
        let mut s = State {
            graph: self,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next: 0,
            out: Vec::new(),
        };
        for v in 0..n {
            if s.index[v].is_none() {
                visit(&mut s, v);
            }
        }
        s.out.sort();
        s.out
    }

    /// The shortest circles through each use inside a strongly connected set
    /// (every use that closes one is shown), each hop with where it is made.
    fn describe(&self, set: &[usize]) -> String {
        let mut shown: BTreeSet<Vec<usize>> = BTreeSet::new();
        let mut text = String::new();
        for &(a, b) in self.edges.keys() {
            if !set.contains(&a) || !set.contains(&b) {
                continue;
            }
            let Some(mut circle) = self.shortest_path(b, a, set) else {
                continue;
            };
            // b .. a, closed: a, b, ..
            circle.pop();
            circle.insert(0, a);
            let start = circle
                .iter()
                .enumerate()
                .min_by_key(|(_, &f)| f)
                .map_or(0, |(i, _)| i);
            circle.rotate_left(start);
            if !shown.insert(circle.clone()) {
                continue;
            }
            let names: Vec<&str> = circle
                .iter()
                .chain([&circle[0]])
                .map(|&i| self.files[i].as_str())
                .collect();
            text += &format!("import circle: {}\n", names.join(" -> "));
            for (i, &from) in circle.iter().enumerate() {
                let to = circle[(i + 1) % circle.len()];
                text += &format!("    {}\n", self.edges[&(from, to)]);
            }
        }
        text
    }

    /// The shortest path `from` .. `to` (both included) inside `set`.
    fn shortest_path(&self, from: usize, to: usize, set: &[usize]) -> Option<Vec<usize>> {
        let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from]);
        let mut seen = BTreeSet::from([from]);
        while let Some(v) = queue.pop_front() {
            if v == to {
                let mut path = vec![to];
                while let Some(&p) = came_from.get(path.last().expect("non-empty")) {
                    path.push(p);
                }
                path.reverse();
                return Some(path);
            }
            for &(a, b) in self.edges.keys() {
                if a == v && set.contains(&b) && seen.insert(b) {
                    came_from.insert(b, v);
                    queue.push_back(b);
                }
            }
        }
        None
    }
}
