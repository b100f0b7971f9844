//! The documentation is true: `docs/check.py` checks links and that each
//! command page says what `commands.json` says, and replays every
//! `redis-cli` session of README.md and docs/ on a fresh server with the
//! module, and the Python client's README (with the venv `make test`
//! makes first). The sessions show Redis 7.0 (Debian's server, what `make test`
//! runs): on other servers (`make test-compat`) some replies differ by
//! design (ACL categories in COMMAND DOCS, error wording), so there only the
//! offline checks run, and the test says so.
mod common;
use common::*;

use std::process::Command;

#[test]
fn every_session_link_and_reference_line_of_the_docs_holds() {
    let server = Server::start();
    let info = server.info("server");
    let shown_server = info_field(&info, "redis_version").is_some_and(|v| v.starts_with("7.0."))
        && info_field(&info, "server_name").is_none();
    let root = env!("CARGO_MANIFEST_DIR");
    let mut check = Command::new("python3");
    check.arg(format!("{root}/docs/check.py"));
    if shown_server {
        check.arg(server.port.to_string());
    } else {
        eprintln!(
            "docs sessions show Redis 7.0; on this server only links and references are checked"
        );
        check.arg("--offline");
    }
    let out = check
        .env("REDIS_CLI", redis_cli())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "docs/check.py found problems:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The INFO table of docs/operations.md names every `recipes_*` field that
/// `INFO recipes` prints: literally, or by a row's pattern
/// (`recipes_<family>_<command>_calls`).
#[test]
fn every_info_field_is_in_the_operations_table() {
    let root = env!("CARGO_MANIFEST_DIR");
    let page = std::fs::read_to_string(format!("{root}/docs/operations.md")).expect("read");
    let section = page
        .split("\n## INFO\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/operations.md has an INFO section");
    // The backticked names of each row's first cell.
    let documented: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .flat_map(|l| {
            let cell = l.split(" |").next().unwrap_or("");
            cell.split('`').step_by(2).map(str::trim)
        })
        .filter(|n| n.starts_with("recipes_"))
        .collect();
    let server = Server::start();
    let info = server.info("recipes");
    let fields: Vec<&str> = info
        .lines()
        .filter_map(|l| l.split_once(':').map(|(k, _)| k))
        .filter(|k| k.starts_with("recipes_"))
        .collect();
    assert!(fields.len() > 20, "INFO recipes printed {info}");
    let missing: Vec<&&str> = fields
        .iter()
        .filter(|f| !documented.iter().any(|d| matches_row(d, f)))
        .collect();
    assert!(
        missing.is_empty(),
        "INFO recipes fields missing from the table of docs/operations.md: {missing:?}"
    );
}

/// Whether `field` is `row`, a name where each `<...>` stands for one or more
/// of `[a-z0-9_]`.
fn matches_row(row: &str, field: &str) -> bool {
    match row.split_once('<') {
        None => row == field,
        Some((head, rest)) => {
            let Some(tail) = field.strip_prefix(head) else {
                return false;
            };
            let rest = rest.split_once('>').map_or("", |(_, r)| r);
            (1..=tail.len()).any(|n| {
                tail[..n]
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                    && matches_row(rest, &tail[n..])
            })
        }
    }
}
