//! The documentation is true: `docs/check.py` replays every `redis-cli`
//! session of README.md and docs/ on a fresh server with the module, and
//! checks links and that each command page says what `commands.json` says.
mod common;
use common::*;

use std::process::Command;

#[test]
fn every_session_link_and_reference_line_of_the_docs_holds() {
    let server = Server::start();
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg(format!("{root}/docs/check.py"))
        .arg(server.port.to_string())
        .env("REDIS_CLI", redis_cli())
        .output()
        .expect("python3 runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "docs/check.py found problems:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
