//! The docs, comments, test names and scripts speak to users about the
//! product: no commit hashes (other than a release's, in its CHANGELOG
//! heading), no numbers of a tracker users never see, no words about who
//! did the work. This test fails when one comes back, naming the line.
//!
//! The patterns are kept here: a hex word of 7 to 40 characters with both
//! digits and letters (a commit), `issue 12` / `task 12`, `agent`, `the
//! lead`, `this branch`, `item 3 of`. A hex word that is data, not a
//! commit, is listed in `DATA_HEX` with where it is used; the one line that
//! must name a commit other than a release's, in `NAMED_COMMITS`.

use std::fs;
use std::path::{Path, PathBuf};

/// What is read: every text file under these, from the crate's root.
const ROOTS: &[&str] = &[
    "README.md",
    "CHANGELOG.md",
    "Makefile",
    "docs",
    "src",
    "tests",
    "examples",
    "scripts",
    "clients",
    "packaging",
    ".ci",
];

/// Never read: built or fetched files, lockfiles and recorded data.
const SKIPPED: &[&str] = &[
    "node_modules",
    "dist",
    "target",
    "package-lock.json",
    "tests/golden",
    ".pytest_cache",
    "__pycache__",
];

/// Hex words that are data in a test or an example, not commits.
const DATA_HEX: &[&str] = &["0a0b0c0d0e0f01020304"];

/// Lines that may name a commit, by file and exact (trimmed) content. The
/// table of named builds in `scripts/previous-release.sh` must say which
/// commit each name builds: `make test-upgrade` needs a build before 0.1.0
/// (no release names it) for keys declared with names that are keywords
/// now, and everything else refers to that build by its name.
const NAMED_COMMITS: &[(&str, &str)] = &[(
    "scripts/previous-release.sh",
    "keyword-names) echo 7a559f0 ;;",
)];

/// Words about how the work was done, lower case, matched at word starts.
const WORK_WORDS: &[&str] = &["agent", "agents", "the lead", "subagent", "this branch"];

/// Words followed by a number that point into a tracker.
const TRACKER_WORDS: &[&str] = &["issue", "issues", "task", "item"];

fn files(root: &Path, rel: &str, out: &mut Vec<PathBuf>) {
    if SKIPPED.iter().any(|s| rel.ends_with(s) || rel == *s) {
        return;
    }
    let path = root.join(rel);
    if path.is_dir() {
        let mut names: Vec<String> = fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            files(root, &format!("{rel}/{name}"), out);
        }
    } else if path.is_file() {
        out.push(PathBuf::from(rel));
    }
}

/// The hex words of 7-40 characters, with a digit and a letter, in `line`.
fn commit_like(line: &str) -> Vec<&str> {
    line.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| (7..=40).contains(&w.len()))
        .filter(|w| {
            w.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
        .filter(|w| w.bytes().any(|b| b.is_ascii_digit()))
        .filter(|w| w.bytes().any(|b| b.is_ascii_alphabetic()))
        .filter(|w| !DATA_HEX.contains(w))
        .collect()
}

/// `word` at a word start in `lower`, followed by the end of a word (and,
/// for tracker words, a space and a digit).
fn has_word(lower: &str, word: &str, then_number: bool) -> bool {
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(at) = lower[from..].find(word) {
        let start = from + at;
        let end = start + word.len();
        let starts = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        let ends = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
        let numbered = bytes.get(end) == Some(&b' ')
            && bytes
                .get(end + 1)
                .is_some_and(|b| b.is_ascii_digit() || *b == b'#');
        if starts && ends && (!then_number || numbered) {
            return true;
        }
        from = end;
    }
    false
}

/// What `line` of `file` says about how the work was done, if anything.
fn offence(file: &str, line: &str) -> Option<String> {
    let release_heading = file == "CHANGELOG.md" && line.starts_with("## ");
    let named_commit = NAMED_COMMITS.contains(&(file, line.trim()));
    if !release_heading && !named_commit {
        if let Some(hex) = commit_like(line).first() {
            return Some(format!("a commit hash ({hex})"));
        }
    }
    let lower = line.to_ascii_lowercase();
    if let Some(w) = WORK_WORDS.iter().find(|w| has_word(&lower, w, false)) {
        return Some(format!("who did the work ('{w}')"));
    }
    if let Some(w) = TRACKER_WORDS.iter().find(|w| has_word(&lower, w, true)) {
        return Some(format!("a tracker number ('{w} N')"));
    }
    None
}

#[test]
fn docs_and_code_speak_about_the_product() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for r in ROOTS {
        files(root, r, &mut all);
    }
    let mut found = Vec::new();
    for rel in &all {
        let Ok(text) = fs::read_to_string(root.join(rel)) else {
            continue; // not text
        };
        let file = rel.to_string_lossy().replace('\\', "/");
        if file == "tests/product_words.rs" {
            continue; // the patterns themselves
        }
        for (n, line) in text.lines().enumerate() {
            if let Some(why) = offence(&file, line) {
                found.push(format!("{file}:{}: {why}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} lines speak about how the work was done, not about the product:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_patterns_catch_what_they_are_for() {
    assert!(offence("docs/design.md", "measured on e42ca29 against main").is_some());
    assert!(offence("src/x.rs", "// see issue 37's stream").is_some());
    assert!(offence("docs/x.md", "while another agent worked").is_some());
    assert!(offence("docs/x.md", "the lead's run").is_some());
    assert!(offence("docs/x.md", "where this branch summed buckets").is_some());
    assert!(offence("docs/x.md", "item 6 of the list").is_some());
    assert!(offence("CHANGELOG.md", "## 0.2.0 — commit a4d56322d7").is_none());
    assert!(offence("CHANGELOG.md", "- fixed in a4d5632").is_some());
    assert!(offence("docs/x.md", "an issue with 24 buckets, 1000000 members").is_none());
    assert!(offence("docs/x.md", "the management of keys; reagents").is_none());
    assert!(offence("src/x.rs", "let x = 0xdeadbeef;").is_none());
    let table = "        keyword-names) echo 7a559f0 ;;";
    assert!(offence("scripts/previous-release.sh", table).is_none());
    assert!(offence("scripts/previous-release.sh", "# e.g. 7a559f0").is_some());
    assert!(offence("Makefile", table).is_some());
}
