//! The family table: what the generic tests (persistence, fuzz, cluster,
//! golden) need to know about each command family. Adding a family to the
//! tests = one file under `families/` and one line in [`FAMILIES`].
//!
//! An entry gives the family's commands and option keywords, a non-default
//! value for each of its configs, a workload (a mixed, seeded set of writes
//! on keys under the family's prefix), a reader (the logical content of one
//! key through the family's own read commands, so comparisons go beyond DUMP)
//! and a sample (a few commands on one key with their exact replies). For the
//! fault suite (`tests/faults/`) it adds counted writes ([`Tally`]), items that
//! expire and are reclaimed in the background ([`Reclaim`]), keys that owe
//! background upkeep, and whether a replica's DUMP is byte-equal to its
//! master's.

use super::{dump_all, pexpiretime, q, q_ok, reply_text, run, KeyDump, Server};
use rand::rngs::StdRng;
use redis::{Connection, Value};
use std::collections::BTreeMap;

pub mod hcounter;
pub mod rv;
pub mod tl;
pub mod topn;
pub mod topn_capacity;
pub mod ulist;

/// Every family, in the order the tests run them.
pub const FAMILIES: &[Family] = &[
    rv::FAMILY,
    tl::FAMILY,
    topn::FAMILY,
    topn_capacity::FAMILY,
    ulist::FAMILY,
    hcounter::FAMILY,
];

/// `workload(c, prefix, base, rng)`: writes on keys starting with `prefix`,
/// around `base` (Unix ms, about now). Deterministic given the rng, apart
/// from the server clock of the writes without AT (which must replicate as
/// their effects). It may run several times on the same prefix.
pub type Workload = fn(&mut Connection, &str, i64, &mut StdRng);

/// `read(c, key, base)`: the key's logical content as lines of text, read with
/// the family's own commands (times relative to `base`); equal lines = equal data.
/// The lines never name the key, so a copy reads the same as its original.
pub type Reader = fn(&mut Connection, &str, i64) -> Vec<String>;

/// One command and its exact reply, as [`reply_text`] prints it.
#[derive(Clone, Debug)]
pub struct Step {
    pub args: Vec<String>,
    pub reply: String,
}

impl Step {
    pub fn new(args: &[&str], reply: &str) -> Step {
        Step {
            args: args.iter().map(|a| a.to_string()).collect(),
            reply: reply.to_string(),
        }
    }
}

pub struct Family {
    /// Upper case, as the commands spell it: `"RV"`.
    pub name: &'static str,
    /// Every command of the family, as registered (`"RV.ADD"`, ...); none
    /// on a line for another shape of a family's keys (TOPN with CAPACITY):
    /// the family's own line has them, and its keywords and configs.
    pub commands: &'static [&'static str],
    /// Every option keyword its commands take (for the fuzzer).
    pub keywords: &'static [&'static str],
    /// Each of the family's configs with a value other than its default.
    pub configs: &'static [(&'static str, &'static str)],
    pub workload: Workload,
    pub read: Reader,
    /// `sample(key, at)`: commands on `key` only, writes first, ending with a
    /// read that shows what they wrote; `at` is a Unix time in ms (now).
    pub sample: fn(&str, i64) -> Vec<Step>,
    pub tally: Tally,
    /// For a family whose items expire and are reclaimed in the background.
    pub reclaim: Option<Reclaim>,
    /// For a family with background upkeep inside its keys (work no command
    /// asks for, on every server): commands that make `key` owe some within
    /// a few seconds.
    pub upkeep: Option<fn(&str) -> Vec<redis::Cmd>>,
}

/// Writes that can be counted afterwards: the crash and resharding tests
/// prove with them that no acknowledged write is lost or applied twice.
pub struct Tally {
    /// Commands that make `key` ready for counted writes (a CREATE), if any.
    pub setup: fn(&str) -> Vec<redis::Cmd>,
    /// The `i`-th counted write on `key`: each adds exactly one to the count.
    pub write: fn(&str, u64) -> redis::Cmd,
    /// How many counted writes `key` holds.
    pub count: fn(&mut Connection, &str) -> i64,
}

/// Items that expire and that the master reclaims in the background.
pub struct Reclaim {
    /// Commands that create `key` holding no item: what the key of
    /// [`Reclaim::expiring`] items is again once all are reclaimed (so its
    /// DUMP then equals the DUMP of such a key).
    pub create: fn(&str) -> Vec<redis::Cmd>,
    /// `expiring(key, n, due)`: `n` items, in a key `create` made, that
    /// expire at `due` (Unix ms).
    pub expiring: fn(&str, usize, i64) -> Vec<redis::Cmd>,
}

impl Family {
    /// Key prefix of this family's workload keys: `"rv:"`.
    pub fn prefix(&self) -> String {
        format!("{}:", self.name.to_lowercase())
    }

    /// This family's workload keys on a server, sorted.
    pub fn keys(&self, c: &mut Connection) -> Vec<String> {
        let mut keys: Vec<String> = q(c, &["KEYS", &format!("{}*", self.prefix())]);
        keys.sort();
        keys
    }

    pub fn run_workload(&self, c: &mut Connection, base: i64, rng: &mut StdRng) {
        (self.workload)(c, &self.prefix(), base, rng)
    }

    /// Every workload key with what [`Family::read`] sees in it.
    pub fn reads(&self, c: &mut Connection, base: i64) -> BTreeMap<String, Vec<String>> {
        self.keys(c)
            .into_iter()
            .map(|k| {
                let lines = (self.read)(c, &k, base);
                (k, lines)
            })
            .collect()
    }

    /// `CONFIG SET` each of the family's configs to its non-default value.
    pub fn set_configs(&self, c: &mut Connection) {
        for (name, value) in self.configs {
            q_ok(c, &["CONFIG", "SET", name, value]);
        }
    }

    /// Whether `command` (any case) is one of this family's.
    pub fn has_command(&self, command: &str) -> bool {
        self.commands
            .iter()
            .any(|n| n.eq_ignore_ascii_case(command))
    }
}

/// The union of every family's keywords, in table order, each once.
pub fn all_keywords() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for k in FAMILIES.iter().flat_map(|f| f.keywords) {
        if !out.contains(k) {
            out.push(k);
        }
    }
    out
}

/// Every family's workload, one after the other, on one server.
pub fn run_workloads(c: &mut Connection, base: i64, rng: &mut StdRng) {
    for fam in FAMILIES {
        fam.run_workload(c, base, rng);
    }
}

/// Every family's reads of every workload key.
pub type Reads = BTreeMap<&'static str, BTreeMap<String, Vec<String>>>;

pub fn all_reads(c: &mut Connection, base: i64) -> Reads {
    FAMILIES
        .iter()
        .map(|f| (f.name, f.reads(c, base)))
        .collect()
}

/// Panics, naming the family and key, where two sets of reads differ; also
/// when a family has no key at all (its workload would then test nothing).
pub fn assert_same_reads(a: &Reads, b: &Reads, what: &str) {
    for fam in FAMILIES {
        let (ra, rb) = (&a[fam.name], &b[fam.name]);
        assert!(!ra.is_empty(), "{what}: family {} left no key", fam.name);
        assert_eq!(
            ra.keys().collect::<Vec<_>>(),
            rb.keys().collect::<Vec<_>>(),
            "{what}: family {} keys differ",
            fam.name
        );
        for (key, lines) in ra {
            assert_eq!(
                lines, &rb[key],
                "{what}: family {} key {key} reads differ",
                fam.name
            );
        }
    }
}

/// What a reload must keep: every key (type, expiry and, for Redis' own
/// types, value: `dump_all`) and every family's reads. A module type's DUMP
/// payload is left out: its encoding may order the same content otherwise
/// after a reload; the family's reads compare the content.
pub type State = (BTreeMap<Vec<u8>, KeyDump>, Reads);

pub fn state(c: &mut Connection, base: i64) -> State {
    let mut keys = dump_all(c);
    for k in keys.values_mut() {
        if !["string", "list", "set", "zset", "hash"].contains(&k.kind.as_str()) {
            k.value.clear();
        }
    }
    (keys, all_reads(c, base))
}

/// Panics, naming the family and key or the key, where two states differ.
pub fn assert_same_state(a: &State, b: &State, what: &str) {
    assert_same_reads(&a.1, &b.1, what);
    if a.0 != b.0 {
        let keys: Vec<_> = a.0.keys().chain(b.0.keys()).collect();
        for k in keys {
            assert_eq!(
                a.0.get(k),
                b.0.get(k),
                "{what}: key {:?} differs",
                String::from_utf8_lossy(k)
            );
        }
    }
}

/// Runs `steps` on `c`, asserting each exact reply.
pub fn run_steps(c: &mut Connection, steps: &[Step], ctx: &str) {
    for s in steps {
        let args: Vec<&str> = s.args.iter().map(|a| a.as_str()).collect();
        let v: Value = q(c, &args);
        assert_eq!(reply_text(&v), s.reply, "{ctx}: {args:?}");
    }
}

/// One line of a [`Reader`]: runs `args` (the key second) and prints the
/// command without its key, then the reply: `RV.GET WITHSCORES -> [a, 5]`.
pub fn read_line(c: &mut Connection, args: &[&str]) -> String {
    let v: Value = q(c, args);
    let mut label = vec![args[0]];
    label.extend_from_slice(&args[2..]);
    format!("{} -> {}", label.join(" "), reply_text(&v))
}

/// The key's type and absolute expiry: what a copy of it must keep besides its reads.
pub fn type_and_expiry(c: &mut Connection, key: &str) -> (String, i64) {
    (q(c, &["TYPE", key]), pexpiretime(c, key))
}

/// The server's current value of each config of every family.
pub fn config_values(c: &mut Connection) -> Vec<(String, String)> {
    FAMILIES
        .iter()
        .flat_map(|f| f.configs)
        .map(|(name, _)| {
            let v: Vec<String> = q(c, &["CONFIG", "GET", name]);
            assert_eq!(v.len(), 2, "CONFIG GET {name}: {v:?}");
            (v[0].clone(), v[1].clone())
        })
        .collect()
}

/// `COMMAND INFO` of every command the loaded module registers: name (upper
/// case), arity, and whether it is flagged `write`. Sorted by name.
pub fn module_commands(srv: &Server) -> Vec<(String, i64, bool)> {
    let c = &mut srv.conn();
    let mut names: Vec<String> = q(c, &["COMMAND", "LIST", "FILTERBY", "MODULE", "recipes"]);
    names.sort();
    let mut info = redis::cmd("COMMAND");
    info.arg("INFO");
    for n in &names {
        info.arg(n);
    }
    let infos: Vec<Value> = run(c, &info);
    infos
        .into_iter()
        .map(|v| {
            let Value::Array(fields) = v else {
                panic!("COMMAND INFO entry: {v:?}")
            };
            let name: String = redis::from_redis_value(&fields[0]).unwrap();
            let arity: i64 = redis::from_redis_value(&fields[1]).unwrap();
            let flags: Vec<String> = redis::from_redis_value(&fields[2]).unwrap();
            (
                name.to_uppercase(),
                arity,
                flags.iter().any(|f| f == "write"),
            )
        })
        .collect()
}
