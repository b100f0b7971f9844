//! Bad bytes where a module value loads: crafted DUMP payloads (with a
//! valid checksum, so only the module can refuse them) cut short or with
//! bits flipped, given to RESTORE; and RDB files (saved with `rdbchecksum
//! no` and `rdbcompression no`, so the type's loader sees the bad bytes)
//! with bits flipped in module values or cut short. Every payload is refused
//! (RESTORE answers an error; a server refusing a file exits by itself,
//! never by a signal) or loads consistently (the key answers its family's
//! reads, and saves and loads again to the same reads); every refused
//! payload logs one warning naming its type, encoding version and what was
//! wrong.
//!
//! Files are not cut inside a module value: a server that fails to load an
//! RDB file runs Redis' own checker on it before exiting, and Redis 7.0's
//! checker loops forever on a module value cut short
//! (`rdbLoadCheckModuleValue` ignores the read error): Redis' fault, not the
//! module's, which has refused the value and logged why by then. Cut module
//! values are RESTOREd instead: the same loader sees the same bytes.

use super::*;
use common::families::run_workloads;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// RDB opcodes of a module value (`RDB_TYPE_MODULE_2`, `RDB_MODULE_OPCODE_STRING`, `..._EOF`).
const RDB_TYPE_MODULE_2: u8 = 7;
const OPCODE_STRING: u64 = 5;
const OPCODE_EOF: u8 = 0;
/// The low bits of a module type id hold the encoding version.
const ENCVER_BITS: u64 = 10;

/// A module value's DUMP payload taken apart (the value is one string
/// buffer, as `rdb_save` writes it).
struct ModulePayload {
    module_id: u64,
    /// The value's bytes, as the type's `encode` made them.
    body: Vec<u8>,
    rdb_version: [u8; 2],
}

impl ModulePayload {
    /// Needs a payload saved with `rdbcompression no`.
    fn parse(dump: &[u8]) -> ModulePayload {
        assert_eq!(dump[0], RDB_TYPE_MODULE_2, "not a module value: {dump:?}");
        let (module_id, n) = rdb_len(&dump[1..]);
        let mut pos = 1 + n;
        let (opcode, n) = rdb_len(&dump[pos..]);
        assert_eq!(opcode, OPCODE_STRING, "a module value of one string");
        pos += n;
        let (len, n) = rdb_len(&dump[pos..]);
        pos += n;
        let body = dump[pos..pos + len as usize].to_vec();
        pos += len as usize;
        assert_eq!(dump[pos], OPCODE_EOF);
        assert_eq!(
            dump.len(),
            pos + 1 + 2 + 8,
            "version and checksum end the payload"
        );
        ModulePayload {
            module_id,
            body,
            rdb_version: [dump[pos + 1], dump[pos + 2]],
        }
    }

    fn encver(&self) -> u64 {
        self.module_id & ((1 << ENCVER_BITS) - 1)
    }

    /// A DUMP payload of `body` under `module_id`, with a valid checksum.
    fn build(&self, module_id: u64, body: &[u8]) -> Vec<u8> {
        let mut out = vec![RDB_TYPE_MODULE_2];
        out.extend(rdb_len_bytes(module_id));
        out.extend(rdb_len_bytes(OPCODE_STRING));
        out.extend(rdb_len_bytes(body.len() as u64));
        out.extend_from_slice(body);
        out.push(OPCODE_EOF);
        out.extend_from_slice(&self.rdb_version);
        let crc = crc64(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

/// An RDB length: its value and how many bytes it took.
fn rdb_len(b: &[u8]) -> (u64, usize) {
    match b[0] >> 6 {
        0 => (u64::from(b[0] & 0x3f), 1),
        1 => ((u64::from(b[0] & 0x3f) << 8) | u64::from(b[1]), 2),
        2 if b[0] == 0x80 => (
            u64::from(u32::from_be_bytes(b[1..5].try_into().unwrap())),
            5,
        ),
        2 if b[0] == 0x81 => (u64::from_be_bytes(b[1..9].try_into().unwrap()), 9),
        _ => panic!("an encoded (compressed?) string: save with rdbcompression no"),
    }
}

fn rdb_len_bytes(n: u64) -> Vec<u8> {
    match n {
        0..=0x3f => vec![n as u8],
        0x40..=0x3fff => vec![0x40 | (n >> 8) as u8, n as u8],
        0x4000..=0xffff_ffff => [&[0x80][..], &(n as u32).to_be_bytes()].concat(),
        _ => [&[0x81][..], &n.to_be_bytes()].concat(),
    }
}

/// Redis' CRC-64 (Jones, reflected), as DUMP payloads end with.
fn crc64(bytes: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in bytes {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x95ac_9329_ac4b_c9b5
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// Log lines of the module's refusals (`<recipes> recipesXX vN: ...`).
fn refusals(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("<recipes> recipes") && l.contains(" v"))
        .collect()
}

/// One workload key of each module type, by type name.
fn module_keys(c: &mut Connection) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut keys: Vec<String> = q(c, &["KEYS", "*"]);
    keys.sort();
    for key in keys {
        let kind: String = q(c, &["TYPE", &key]);
        if is_module_type(&kind) {
            out.entry(kind).or_insert(key);
        }
    }
    out
}

/// RESTOREs `payload` as `key`: must be refused with an error reply and one
/// new warning that names `kind`, version `encver` and contains `why`.
fn assert_refused(
    srv: &Server,
    c: &mut Connection,
    payload: &[u8],
    kind: &str,
    encver: u64,
    why: &str,
) {
    // Paced below the rate limit, so each refusal is logged.
    std::thread::sleep(Duration::from_millis(110));
    let before = refusals(&srv.log()).len();
    let mut restore = redis::cmd("RESTORE");
    restore.arg("restored").arg(0).arg(payload);
    let e = expect_err(c, &restore);
    assert!(e.contains("Bad data format"), "{kind}: {e}");
    assert!(!exists(c, "restored"));
    let log = srv.log();
    let new = &refusals(&log)[before..];
    assert_eq!(new.len(), 1, "{kind}: one warning for one refusal:\n{log}");
    let want = format!("{kind} v{encver}: ");
    assert!(
        new[0].contains(&want) && new[0].contains(why),
        "{kind}: the warning {:?} should name {want:?} and say {why:?}",
        new[0]
    );
}

#[test]
fn crc64_is_the_one_dump_payloads_carry() {
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["SET", "k", "v"]);
    let payload = dump(c, "k").unwrap();
    let (data, footer) = payload.split_at(payload.len() - 8);
    assert_eq!(crc64(data).to_le_bytes(), footer);
}

#[test]
fn a_refused_restore_payload_logs_one_warning_that_says_why() {
    let srv = Server::builder().config("rdbcompression", "no").start();
    let c = &mut srv.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("FAULTS_SEED", 5));
    run_workloads(c, now_ms(), &mut rng);
    let types = module_keys(c);
    assert!(!types.is_empty(), "no module type among the workload keys");
    for (kind, key) in &types {
        let p = ModulePayload::parse(&dump(c, key).unwrap());
        let v = p.encver();
        // The payload as saved restores; cut short, with a byte more, or
        // under a version the module does not know, it is refused.
        let mut restore = redis::cmd("RESTORE");
        restore
            .arg("restored")
            .arg(0)
            .arg(p.build(p.module_id, &p.body));
        let _: Value = run(c, &restore);
        q::<i64>(c, &["DEL", "restored"]);
        let cut = &p.body[..p.body.len() / 2];
        assert_refused(&srv, c, &p.build(p.module_id, cut), kind, v, "");
        let longer = [&p.body[..], &[0]].concat();
        assert_refused(&srv, c, &p.build(p.module_id, &longer), kind, v, "");
        let next = p.module_id + 1;
        // The refusal names what to do: the release that wrote it.
        let why = format!(
            "is unknown to recipes {}: it was written by a newer release; load it with that \
             release or a later one (docs/upgrading.md)",
            env!("CARGO_PKG_VERSION")
        );
        assert_refused(&srv, c, &p.build(next, &p.body), kind, v + 1, &why);
    }

    // A count larger than the payload: HCOUNTER v2 of one cell
    // (`HCOUNTER.CREATE k` + `HCOUNTER.INCR k`) with its cell count patched.
    q_ok(c, &["HCOUNTER.CREATE", "hc"]);
    q::<i64>(c, &["HCOUNTER.INCR", "hc", "AT", "5"]);
    let p = ModulePayload::parse(&dump(c, "hc").unwrap());
    // schema 12, flags 1, then varints: TTL, partitions, key length (and no
    // key bytes), AT 5 (zigzag 10): the cell count.
    let at = 12 + 1 + 1 + 1 + 1 + 1;
    assert_eq!(
        (p.encver(), p.body.len(), &p.body[at - 4..=at]),
        (2, 21, &[0, 1, 0, 10, 1][..]),
        "the HCOUNTER v2 layout this test patches"
    );
    // The count 1 becomes u32::MAX, a varint of 5 bytes.
    let body = [
        &p.body[..at],
        &[0xff, 0xff, 0xff, 0xff, 0x0f],
        &p.body[at + 1..],
    ]
    .concat();
    let why = "cell count 4294967295 exceeds the payload (key \"restored\")";
    assert_refused(&srv, c, &p.build(p.module_id, &body), "recipesHC", 2, why);

    // Many at once: a few lines a second, the rest counted.
    let bad = p.build(p.module_id, &body);
    std::thread::sleep(Duration::from_millis(1_100));
    let before = refusals(&srv.log()).len();
    let mut pipe = redis::pipe();
    for _ in 0..50 {
        pipe.cmd("RESTORE").arg("restored").arg(0).arg(&bad);
    }
    // Error replies: the pipeline's result is an error (its own connection).
    let _ = pipe.query::<Vec<Value>>(&mut srv.conn());
    let logged = refusals(&srv.log()).len() - before;
    assert!((1..50).contains(&logged), "{logged} lines for 50 refusals");
    std::thread::sleep(Duration::from_millis(1_100));
    let _ = expect_err(c, redis::cmd("RESTORE").arg("restored").arg(0).arg(&bad));
    let log = srv.log();
    let last = refusals(&log).last().copied().unwrap_or_default();
    assert!(last.contains("were not logged"), "{last}");
    assert_no_crash(&log, "refused payloads");
}

/// Payload variants per module key: cut at a random byte, or 1 to 3 bits
/// flipped.
const PAYLOAD_VARIANTS: usize = 24;

#[test]
fn cut_and_bit_flipped_restore_payloads_are_refused_or_load_consistently() {
    let seed = seed_from_env("FAULTS_SEED", 7);
    let mut rng = StdRng::seed_from_u64(seed);
    let srv = Server::builder().config("rdbcompression", "no").start();
    let c = &mut srv.conn();
    let base = now_ms();
    run_workloads(c, base, &mut rng);
    let (mut refused, mut loaded) = (0, 0);
    for fam in FAMILIES {
        for key in fam.keys(c) {
            let kind: String = q(c, &["TYPE", &key]);
            if !is_module_type(&kind) {
                continue;
            }
            let p = ModulePayload::parse(&dump(c, &key).unwrap());
            for _ in 0..PAYLOAD_VARIANTS {
                let mut body = p.body.clone();
                let what = if rng.gen_bool(0.3) {
                    let at = rng.gen_range(0..body.len());
                    body.truncate(at);
                    format!("seed {seed}: {key} cut at {at}")
                } else {
                    let flips: Vec<(usize, u8)> = (0..rng.gen_range(1..=3))
                        .map(|_| (rng.gen_range(0..body.len()), 1 << rng.gen_range(0..8)))
                        .collect();
                    for &(at, bit) in &flips {
                        body[at] ^= bit;
                    }
                    format!("seed {seed}: {key} with bits flipped (byte, mask) {flips:?}")
                };
                let mut restore = redis::cmd("RESTORE");
                restore.arg("bad").arg(0).arg(p.build(p.module_id, &body));
                match restore.query::<Value>(c) {
                    Err(e) => {
                        assert!(err_text(&e).contains("Bad data format"), "{what}: {e}");
                        assert!(!exists(c, "bad"), "{what}");
                        refused += 1;
                    }
                    Ok(_) => {
                        // It saves and loads again to the same reads.
                        let reads = tolerant_reads(fam, c, "bad", base);
                        let saved = dump(c, "bad").unwrap();
                        let mut restore = redis::cmd("RESTORE");
                        restore.arg("bad:again").arg(0).arg(&saved);
                        let _: Value = run(c, &restore);
                        assert_eq!(tolerant_reads(fam, c, "bad:again", base), reads, "{what}");
                        q::<i64>(c, &["DEL", "bad", "bad:again"]);
                        loaded += 1;
                    }
                }
            }
        }
    }
    assert!(refused > 0 && loaded + refused > 0);
    let _: String = q(c, &["PING"]);
    assert_no_crash(&srv.log(), &format!("seed {seed}"));
    eprintln!(
        "bad RESTORE payloads (seed {seed}): {refused} refused, {loaded} loaded \
         consistently, 0 crashes"
    );
}

/// Where each module value sits in an RDB file: its bytes (the string
/// `encode` made) and, around them, from its module id to its end marker,
/// where a cut makes Redis' own checker loop; `None` when one is not found
/// (it changed since the save: background reclaim).
struct Region {
    body: Range<usize>,
    framed: Range<usize>,
}

fn module_regions(c: &mut Connection, rdb: &[u8]) -> Option<Vec<Region>> {
    let keys: Vec<String> = q(c, &["KEYS", "*"]);
    let mut out = Vec::new();
    for key in keys {
        let kind: String = q(c, &["TYPE", &key]);
        if !is_module_type(&kind) {
            continue;
        }
        let p = ModulePayload::parse(&dump(c, &key).unwrap());
        let start = rdb.windows(p.body.len()).position(|w| w == p.body)?;
        let head = rdb_len_bytes(p.module_id).len()
            + rdb_len_bytes(OPCODE_STRING).len()
            + rdb_len_bytes(p.body.len() as u64).len();
        out.push(Region {
            body: start..start + p.body.len(),
            framed: start - head..start + p.body.len() + 1,
        });
    }
    Some(out)
}

/// The family's reads of `key`; `None` when one fails with an error reply
/// (the test's own read helpers then panic, printing it): flipped bits may
/// load a value no command makes (a TOPN window beyond what LAST takes, a
/// member name that is not UTF-8) which the reads do not expect.
fn tolerant_reads(fam: &Family, c: &mut Connection, key: &str, base: i64) -> Option<Vec<String>> {
    let reads = catch_unwind(AssertUnwindSafe(|| (fam.read)(c, key, base))).ok();
    let _: String = q(c, &["PING"]);
    reads
}

/// [`tolerant_reads`] of every key under a family's prefix.
fn reads_of_every_key(c: &mut Connection, base: i64) -> BTreeMap<String, Option<Vec<String>>> {
    let keys: Vec<String> = q(c, &["KEYS", "*"]);
    keys.into_iter()
        .map(|key| {
            let reads =
                family_of(key.as_bytes()).and_then(|fam| tolerant_reads(fam, c, &key, base));
            (key, reads)
        })
        .collect()
}

/// RDB variants: 1 to 3 bits flipped in a module value, or cut at a random
/// byte outside the module values.
const FLIPS: usize = 64;
const CUTS: usize = 16;

#[test]
fn bit_flipped_and_cut_rdb_files_are_refused_or_load_consistently() {
    let seed = seed_from_env("FAULTS_SEED", 6);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut srv = Server::builder()
        .config("rdbchecksum", "no")
        .config("rdbcompression", "no")
        .config("sanitize-dump-payload", "yes")
        .start();
    let c = &mut srv.conn();
    let base = now_ms();
    run_workloads(c, base, &mut rng);
    // Loading schedules background reclaim too.
    for fam in FAMILIES {
        if let Some(reclaim) = &fam.reclaim {
            let key = format!("{}reclaim", fam.prefix());
            run_all(c, &expiring_items(reclaim, &key, 50, &[base + 3_600_000]));
        }
    }
    // Saved again while values change (the workloads' expired items are
    // being reclaimed), until every value is found in the file.
    let path = srv.dir.join("dump.rdb");
    let (rdb, regions) = (0..20)
        .find_map(|_| {
            q_ok(c, &["SAVE"]);
            let rdb = std::fs::read(&path).unwrap();
            let regions = module_regions(c, &rdb)?;
            Some((rdb, regions))
        })
        .expect("an RDB file holding every module value as DUMP shows it");
    assert!(!regions.is_empty());
    srv.stop();

    let (mut refused, mut said_why, mut loaded) = (0, 0, 0);
    let mut reasons = std::collections::BTreeSet::new();
    for variant in 0..FLIPS + CUTS {
        let mut bytes = rdb.clone();
        let what = if variant < FLIPS {
            let within = regions[rng.gen_range(0..regions.len())].body.clone();
            let flips: Vec<(usize, u8)> = (0..rng.gen_range(1..=3))
                .map(|_| (rng.gen_range(within.clone()), 1 << rng.gen_range(0..8)))
                .collect();
            for &(at, bit) in &flips {
                bytes[at] ^= bit;
            }
            format!("bits flipped (byte, mask): {flips:?}")
        } else {
            let at = loop {
                let at = rng.gen_range(0..bytes.len());
                if !regions.iter().any(|r| r.framed.contains(&at)) {
                    break at;
                }
            };
            bytes.truncate(at);
            format!("cut at {at}")
        };
        let what = format!("seed {seed}, {what}");
        std::fs::write(&path, &bytes).unwrap();
        match srv.try_restart_with(&[]) {
            Err(failure) => {
                assert!(failure.exited_cleanly(), "{what}: {failure}");
                assert_no_crash(&failure.log, &what);
                refused += 1;
                if failure.log.contains("module is not able to load") {
                    assert!(
                        !refusals(&failure.log).is_empty(),
                        "{what}: Redis points to the module's log, which says nothing:\n{}",
                        failure.log
                    );
                    said_why += 1;
                    for line in refusals(&failure.log) {
                        let reason = line.split_once("<recipes> ").map_or(line, |(_, r)| r);
                        reasons.insert(reason.split(" (key").next().unwrap_or(reason).to_string());
                    }
                }
            }
            Ok(()) => {
                let c = &mut srv.conn();
                let reads = reads_of_every_key(c, base);
                let reply: Result<Value, _> = redis::cmd("DEBUG").arg("RELOAD").query(c);
                assert!(
                    reply.is_ok(),
                    "{what}: DEBUG RELOAD: {reply:?}\n{}",
                    srv.log()
                );
                let c = &mut srv.conn();
                let again = reads_of_every_key(c, base);
                for (key, read) in &reads {
                    assert_eq!(Some(read), again.get(key), "{what}: {key} after a reload");
                }
                assert_eq!(reads.len(), again.len(), "{what}: keys after a reload");
                assert_no_crash(&srv.log(), &what);
                loaded += 1;
                srv.stop();
            }
        }
    }
    eprintln!(
        "corrupt RDB files (seed {seed}): {refused} refused ({said_why} by the module, each \
         with its reason logged), {loaded} loaded consistently, 0 crashes; the reasons:\n  {}",
        reasons.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}
