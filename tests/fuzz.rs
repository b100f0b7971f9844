//! Random calls of every command, with arguments drawn from keywords, edge
//! numbers and junk bytes, against one server: it must answer every call
//! (a reply or an error, never a dropped connection), never log a panic, and
//! still serve correct answers afterwards. Seed from `FUZZ_SEED`.
mod common;
use common::*;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Arguments besides the families' keywords (tests/common/families.rs):
/// edge numbers, junk and key names.
const WORDS: &[&str] = &[
    "0",
    "1",
    "-1",
    "10",
    "24",
    "3600",
    "9007199254740992",
    "9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999",
    "1.5",
    "nan",
    "inf",
    "-inf",
    "+1",
    " 1",
    "",
    "\0",
    "\r\n",
    "\u{ff}\u{fe}",
    "k",
    "k2",
    "str",
];

/// Every family's keywords, also in lower case, then [`WORDS`].
fn words() -> Vec<String> {
    let keywords = families::all_keywords();
    let lower = keywords.iter().map(|k| k.to_lowercase());
    keywords
        .iter()
        .map(|k| k.to_string())
        .chain(lower)
        .chain(WORDS.iter().map(|w| w.to_string()))
        .collect()
}

/// Calls per run; `FUZZ_CALLS` for a longer hunt.
fn calls() -> usize {
    std::env::var("FUZZ_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6000)
}

fn token(rng: &mut StdRng, words: &[String]) -> Vec<u8> {
    if rng.gen_bool(0.15) {
        let len = rng.gen_range(0..12);
        (0..len).map(|_| rng.gen()).collect()
    } else {
        words[rng.gen_range(0..words.len())].as_bytes().to_vec()
    }
}

#[test]
fn random_calls_never_break_the_server() {
    let seed = seed_from_env("FUZZ_SEED", 0);
    let mut rng = StdRng::seed_from_u64(seed);
    let srv = Server::start();
    // Every command the module registers, as the server lists them.
    let commands: Vec<String> = families::module_commands(&srv)
        .into_iter()
        .map(|(name, _, _)| name)
        .collect();
    assert!(!commands.is_empty(), "the module registers no command");
    let words = words();
    let c = &mut srv.conn();
    let _: () = redis::cmd("SET").arg("str").arg("x").query(c).unwrap();
    let mut answered = 0;
    for _ in 0..calls() {
        let mut call = redis::cmd(&commands[rng.gen_range(0..commands.len())]);
        for _ in 0..rng.gen_range(0..8) {
            call.arg(token(&mut rng, &words));
        }
        match call.query::<redis::Value>(c) {
            Ok(_) => answered += 1,
            Err(e) if e.kind() != redis::ErrorKind::IoError => answered += 1,
            Err(e) => panic!("seed {seed}: connection lost on {}: {e}", cmd_text(&call)),
        }
    }
    assert_eq!(answered, calls());
    let log = srv.log();
    assert!(
        !log.contains("panic"),
        "seed {seed}: a panic was logged:\n{log}"
    );
    // Still serving, and still exact.
    let pong: String = redis::cmd("PING").query(c).unwrap();
    assert_eq!(pong, "PONG");
    for fam in families::FAMILIES {
        let key = format!("after:{}", fam.name);
        let steps = (fam.sample)(&key, now_ms());
        families::run_steps(c, &steps, &format!("seed {seed}: after the fuzz"));
    }
    let s: String = redis::cmd("GET").arg("str").query(c).unwrap();
    assert_eq!(s, "x");
}
