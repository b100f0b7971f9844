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
