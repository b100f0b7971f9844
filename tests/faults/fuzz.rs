//! Random argument vectors for every command, with arguments drawn from the
//! families' keywords, edge numbers, junk bytes and the names of keys the
//! families' workloads wrote, against one server: it must answer every call
//! (a reply or an error, never a dropped connection), never log a panic, and
//! still serve correct answers afterwards. Seed from `FUZZ_SEED` (printed,
//! and named in every failure); `FUZZ_CALLS` calls per command.

use super::*;
use common::families::{all_keywords, module_commands, run_steps, run_workloads};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Arguments besides the families' keywords and workload keys: edge numbers,
/// junk and key names.
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

/// Every family's keywords, also in lower case, then [`WORDS`], then `keys`.
fn words(keys: &[String]) -> Vec<String> {
    let keywords = all_keywords();
    let lower = keywords.iter().map(|k| k.to_lowercase());
    keywords
        .iter()
        .map(|k| k.to_string())
        .chain(lower)
        .chain(WORDS.iter().map(|w| w.to_string()))
        .chain(keys.iter().cloned())
        .collect()
}

/// Calls per command; `FUZZ_CALLS` for a longer hunt.
fn calls_per_command() -> usize {
    std::env::var("FUZZ_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000)
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
    let commands: Vec<String> = module_commands(&srv)
        .into_iter()
        .map(|(name, _, _)| name)
        .collect();
    assert!(!commands.is_empty(), "the module registers no command");
    let c = &mut srv.conn();
    run_workloads(c, now_ms(), &mut rng);
    let keys: Vec<String> = q(c, &["KEYS", "*"]);
    let words = words(&keys);
    q_ok(c, &["SET", "str", "x"]);
    let per_command = calls_per_command();
    let mut answered = 0;
    for _ in 0..per_command {
        for name in &commands {
            let mut call = redis::cmd(name);
            for _ in 0..rng.gen_range(0..8) {
                call.arg(token(&mut rng, &words));
            }
            match call.query::<Value>(c) {
                Ok(_) => answered += 1,
                Err(e) if e.kind() != redis::ErrorKind::IoError => answered += 1,
                Err(e) => panic!("seed {seed}: connection lost on {}: {e}", cmd_text(&call)),
            }
        }
    }
    assert_eq!(answered, per_command * commands.len(), "seed {seed}");
    eprintln!(
        "fuzz: {answered} calls over {} commands answered (seed {seed})",
        commands.len()
    );
    assert_no_crash(&srv.log(), &format!("seed {seed}"));
    // Still serving, and still exact.
    let pong: String = q(c, &["PING"]);
    assert_eq!(pong, "PONG");
    for fam in FAMILIES {
        let key = format!("after:{}", fam.name);
        let steps = (fam.sample)(&key, now_ms());
        run_steps(c, &steps, &format!("seed {seed}: after the fuzz"));
    }
    let s: String = q(c, &["GET", "str"]);
    assert_eq!(s, "x", "seed {seed}");
}
