//! A multi-part AOF and an RDB written by the previous release while a writer
//! uses every family and every option it knew, loaded by this build.

use super::golden::add_keyword_named_keys;
use super::*;
use common::families::run_workloads;
use rand::rngs::StdRng;
use rand::SeedableRng;

/// Module types whose encoding this release changed: their `DUMP` payloads
/// differ from the previous release's by design (their reads are still
/// compared). A release that changes an encoding names its type here.
const ENCODINGS_CHANGED: &[&str] = &[];

/// `DUMP` of every module-type key but those of a type in
/// [`ENCODINGS_CHANGED`], once two reads 100 ms apart agree: items that
/// expired before the load are reclaimed in the background after it, at a
/// moment of each process's own.
fn comparable_dumps(c: &mut Connection) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let read = |c: &mut Connection| -> BTreeMap<Vec<u8>, Vec<u8>> {
        dump_all(c)
            .into_iter()
            .filter(|(_, d)| {
                is_module_type(&d.kind) && !ENCODINGS_CHANGED.contains(&d.kind.as_str())
            })
            .map(|(k, d)| (k, d.value.into_iter().next().unwrap_or_default()))
            .collect()
    };
    let mut last = read(c);
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let now = read(c);
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("the module keys' DUMPs never held still for 100 ms");
}

/// Panics naming the keys whose `DUMP` differs (or that one side lacks).
fn assert_same_dumps(
    old: &BTreeMap<Vec<u8>, Vec<u8>>,
    new: &BTreeMap<Vec<u8>, Vec<u8>>,
    what: &str,
) {
    assert!(!old.is_empty(), "{what}: no module key to compare");
    let differ: Vec<String> = old
        .keys()
        .chain(new.keys())
        .filter(|k| old.get(*k) != new.get(*k))
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    assert!(differ.is_empty(), "{what}: DUMP differs for {differ:?}");
}

#[test]
fn aof_and_rdb_of_the_previous_release_load_the_same() {
    let mut srv = previous_build()
        .config("appendonly", "yes")
        // The base file as commands too: this build replays the previous
        // build's AOF rewrite; the RDB below covers its RDB.
        .config("aof-use-rdb-preamble", "no")
        .start();
    add_keyword_named_keys(&mut srv);
    let base = now_ms();
    let mut rng = StdRng::seed_from_u64(seed_from_env("UPGRADE_SEED", 0));
    {
        let c = &mut srv.conn();
        run_workloads(c, base, &mut rng);
        option_writes(c, "opt:", base);
        let _: Value = q(c, &["BGREWRITEAOF"]);
        wait_for_bg_done(&srv);
        run_workloads(c, base, &mut rng);
        option_writes(c, "opt2:", base);
        q_ok(c, &["SAVE"]);
    }
    let manifest = std::fs::read_to_string(srv.dir.join("appendonlydir/appendonly.aof.manifest"))
        .expect("the AOF manifest");
    assert!(
        manifest.contains("type b") && manifest.contains("type i") && manifest.contains(".2."),
        "not a rewritten multi-part AOF:\n{manifest}"
    );
    // What the previous build answers from its own AOF, as the reference.
    srv.restart();
    let (old_reads, old_dumps) = {
        let c = &mut srv.conn();
        (all_key_reads(c, base), comparable_dumps(c))
    };
    let release = previous_release();
    restart_on_this_build(&mut srv);
    assert_no_critical(&srv, &format!("{release}'s AOF on this build"));
    let c = &mut srv.conn();
    let what = format!("{release}'s AOF");
    assert_same_key_reads(&old_reads, &all_key_reads(c, base), &what);
    assert_same_dumps(&old_dumps, &comparable_dumps(c), &what);

    // The RDB the previous build saved (this build writes none: `save ""`).
    srv.try_restart_once_with(&[("appendonly", "no")])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_no_critical(&srv, &format!("{release}'s RDB on this build"));
    let c = &mut srv.conn();
    let what = format!("{release}'s RDB");
    assert_same_key_reads(&old_reads, &all_key_reads(c, base), &what);
    assert_same_dumps(&old_dumps, &comparable_dumps(c), &what);
    eprintln!(
        "{} keys written by {release}: the same reads from its AOF and its RDB",
        old_reads.len()
    );
}
