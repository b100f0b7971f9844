//! Random calls of every command, with arguments drawn from keywords, edge
//! numbers and junk bytes, against one server: it must answer every call
//! (a reply or an error, never a dropped connection), never log a panic, and
//! still serve correct answers afterwards. Seed from `FUZZ_SEED`.
mod common;
use common::*;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const COMMANDS: &[&str] = &[
    "RV.ADD",
    "RV.GET",
    "RV.REM",
    "RV.LEN",
    "TL.PUSH",
    "TL.RANGE",
    "TL.REM",
    "TL.LEN",
    "TOPN.CREATE",
    "TOPN.INCR",
    "TOPN.TOP",
    "TOPN.TOP24",
    "TOPN.COUNT",
    "TOPN.INFO",
];

const WORDS: &[&str] = &[
    "AT",
    "at",
    "MAXLEN",
    "TTL",
    "PXAT",
    "SLACK",
    "LIMIT",
    "SINCE",
    "WITHSCORES",
    "OFFSET",
    "COUNT",
    "BUCKET",
    "WINDOW",
    "BY",
    "WITHCOUNTS",
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

/// Calls per run; `FUZZ_CALLS` for a longer hunt.
fn calls() -> usize {
    std::env::var("FUZZ_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6000)
}

fn token(rng: &mut StdRng) -> Vec<u8> {
    if rng.gen_bool(0.15) {
        let len = rng.gen_range(0..12);
        (0..len).map(|_| rng.gen()).collect()
    } else {
        WORDS[rng.gen_range(0..WORDS.len())].as_bytes().to_vec()
    }
}

#[test]
fn random_calls_never_break_the_server() {
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("fuzz seed {seed} (rerun with FUZZ_SEED={seed})");
    let mut rng = StdRng::seed_from_u64(seed);
    let srv = Server::start();
    let c = &mut srv.conn();
    let _: () = redis::cmd("SET").arg("str").arg("x").query(c).unwrap();
    let mut answered = 0;
    for _ in 0..calls() {
        let mut call = redis::cmd(COMMANDS[rng.gen_range(0..COMMANDS.len())]);
        for _ in 0..rng.gen_range(0..8) {
            call.arg(token(&mut rng));
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
    let _: i64 = redis::cmd("RV.ADD")
        .arg("after")
        .arg("m")
        .arg("AT")
        .arg(5)
        .query(c)
        .unwrap();
    let got: Vec<String> = redis::cmd("RV.GET").arg("after").query(c).unwrap();
    assert_eq!(got, ["m"]);
    let s: String = redis::cmd("GET").arg("str").query(c).unwrap();
    assert_eq!(s, "x");
}
