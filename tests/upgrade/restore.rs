//! `DUMP` payloads of the previous release `RESTORE`d on this build: a key
//! of every encoding answers the same.

use super::golden::add_keyword_named_keys;
use super::*;
use common::families::run_workloads;
use rand::rngs::StdRng;
use rand::SeedableRng;

/// Keys that must be among those restored, one of each encoding: TOPN plain
/// (`topn:a`, big: `opt:topn:big`), ALIGN, CAPACITY and compact; ULIST
/// compact (`ulist:month`) and hashed; HCOUNTER compact (`hcounter:pages`),
/// big, FLOAT and UNIQUE; names that look like keywords.
const ENCODINGS: &[&str] = &[
    "topn:a",
    "opt:topn:big",
    "opt:topn:align",
    "opt:topn:capacity",
    "opt:topn:compact",
    "ulist:month",
    "opt:ulist:hashed",
    "opt:ulist:refresh",
    "opt:ulist:wordy",
    "hcounter:pages",
    "opt:hcounter:big",
    "hcounter:float",
    "hcounter:uniq",
    "opt:hcounter:wordy",
];

/// And from 0.2.0 on: TOPN with VIEWS (version byte 4; big, compact, with
/// ALIGN), written by `TOPN.INCRBY` too, also with CAPACITY; keys declared
/// with names that are keywords now.
const ENCODINGS_0_2_0: &[&str] = &[
    "topn:views",
    "topn:views:small",
    "opt:topn:views",
    "opt:topn:views:big",
    "opt:topn:capacity:incrby",
    "topn:many",
    "teams",
    "hits",
];

#[test]
fn dump_of_the_previous_release_restores_for_every_encoding() {
    // AOF on for the keys of names that are keywords now, loaded from one.
    let mut old = previous_build().config("appendonly", "yes").start();
    add_keyword_named_keys(&mut old);
    let new = Server::start();
    let base = now_ms();
    let (o, n) = (&mut old.conn(), &mut new.conn());
    let mut rng = StdRng::seed_from_u64(seed_from_env("UPGRADE_SEED", 2));
    run_workloads(o, base, &mut rng);
    option_writes(o, "opt:", base);
    let mut keys: Vec<String> = q(o, &["KEYS", "*"]);
    keys.sort();
    let mut encodings = ENCODINGS.to_vec();
    if Knows::of(o) >= Knows::Release020 {
        encodings.extend(ENCODINGS_0_2_0);
    }
    for want in encodings {
        assert!(keys.iter().any(|k| k == want), "no key {want} to restore");
    }
    let mut restored = 0;
    for key in &keys {
        let kind: String = q(o, &["TYPE", key]);
        if !is_module_type(&kind) {
            continue;
        }
        let payload: Vec<u8> = q(o, &["DUMP", key]);
        let expire_at = pexpiretime(o, key).max(0);
        let _: Value = redis::cmd("RESTORE")
            .arg(key)
            .arg(expire_at)
            .arg(&payload)
            .arg("ABSTTL")
            .query(n)
            .unwrap_or_else(|e| panic!("RESTORE {key} ({kind}): {}", err_text(&e)));
        assert_eq!(
            key_reads(n, key, base),
            key_reads(o, key, base),
            "{key} ({kind}) restored on this build reads otherwise"
        );
        restored += 1;
    }
    eprintln!(
        "{restored} DUMP payloads of {} restored, reads equal",
        previous_release()
    );
}
