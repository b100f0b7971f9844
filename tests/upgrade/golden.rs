//! Golden AOFs: what older builds wrote, committed under `tests/golden/aof/`
//! (see `tests/golden/README.md`), so the check holds where the old commits
//! cannot be built. Each loads on this build with no `CRITICAL` line and
//! answers as the build that wrote it did.
//!
//! Making the missing ones (never rewriting one), those of release R:
//!
//!     RECIPES_PREVIOUS_RELEASE=R RECIPES_PREVIOUS_MODULE=$(scripts/previous-release.sh R) \
//!     RECIPES_KEYWORD_NAMES_MODULE=$(scripts/previous-release.sh keyword-names) \
//!         cargo test --test upgrade -- --ignored write_missing_golden_aofs

use super::*;
use common::families::{run_steps, Step};
use std::path::Path;

/// 2100-01-01T00:00:00Z: every time in the golden sequences is after it, so
/// nothing they write expires before then and reads made any day agree.
const GOLDEN_BASE: i64 = 4_102_444_800_000;

/// Declarations with names that are keywords now (`group`, `count`), as the
/// build named `keyword-names` (a build before 0.1.0) accepted them from
/// clients (0.1.0 refuses them).
const KEYWORD_NAMES: &[&[&str]] = &[
    &["ULIST.CREATE", "teams", "VALUE", "user", "SCOPE", "group"],
    &["ULIST.ADD", "teams", "user", "1", "group", "a"],
    &[
        "HCOUNTER.CREATE",
        "hits",
        "PARTITION",
        "count",
        "GROUP",
        "page",
    ],
    &["HCOUNTER.INCR", "hits", "count", "x", "page", "p1"],
];

/// Writes to the keys of [`KEYWORD_NAMES`] by those names in `name value`
/// pairs, as clients may send them to 0.2.0.
const KEYWORD_NAME_WRITES: &[&[&str]] = &[
    &["ULIST.ADD", "teams", "group", "b", "user", "2"],
    &["ULIST.ADD", "teams", "user", "3", "group", "count"],
    &["HCOUNTER.INCRBY", "hits", "4", "page", "p2", "count", "y"],
    &["HCOUNTER.INCR", "hits", "count", "x", "page", "group"],
];

/// What the keys of [`KEYWORD_NAMES`] must answer.
fn keyword_name_reads() -> Vec<Step> {
    vec![
        Step::new(&["ULIST.HAS", "teams", "user", "1", "group", "a"], "1"),
        Step::new(&["ULIST.DATA", "teams"], "[[user, 1, group, a]]"),
        Step::new(&["HCOUNTER.GET", "hits", "count", "x", "page", "p1"], "1"),
        Step::new(
            &["HCOUNTER.DATA", "hits", "count", "x"],
            "[[count, x, page, p1, value, 1]]",
        ),
        Step::new(&["DBSIZE"], "2"),
    ]
}

/// The build before 0.1.0 named `keyword-names` in
/// `scripts/previous-release.sh` (`$RECIPES_KEYWORD_NAMES_MODULE`).
fn keyword_names_module() -> std::path::PathBuf {
    module_from_env(
        "RECIPES_KEYWORD_NAMES_MODULE",
        "scripts/previous-release.sh keyword-names",
    )
}

/// Which build wrote a golden AOF.
#[derive(Clone, Copy)]
enum Writer {
    /// The release so named (`$RECIPES_PREVIOUS_MODULE` when
    /// `$RECIPES_PREVIOUS_RELEASE` names it).
    Release(&'static str),
    /// The build before 0.1.0 named `keyword-names`.
    KeywordNamesBuild,
}

impl Writer {
    /// The writer's module, or what this run lacks to have it.
    fn module(self) -> Result<std::path::PathBuf, String> {
        match self {
            Writer::Release(name) if previous_release() == name => Ok(previous_module()),
            Writer::Release(name) => Err(format!(
                "RECIPES_PREVIOUS_RELEASE={name} \
                 RECIPES_PREVIOUS_MODULE=$(scripts/previous-release.sh {name})"
            )),
            Writer::KeywordNamesBuild => Ok(keyword_names_module()),
        }
    }
}

/// What a golden AOF holds.
#[derive(Clone, Copy)]
enum Sequence {
    /// [`family_sequence`] of the family so named, its option commands after
    /// the rewrite only (`options_in_base: false`, 0.1.0's) or on other keys
    /// before it too; checked by `reads.txt`.
    Family {
        name: &'static str,
        options_in_base: bool,
    },
    /// [`KEYWORD_NAMES`]; checked by [`keyword_name_reads`].
    KeywordNames,
    /// The `keyword-names` build's [`KEYWORD_NAMES`] AOF loaded, `BGREWRITEAOF` (the writer's
    /// rewrite of names that are keywords now), then [`KEYWORD_NAME_WRITES`];
    /// checked by `reads.txt`.
    KeywordNamesRewritten,
}

struct GoldenAof {
    /// Folder under `tests/golden/aof/`: `appendonlydir/` as the server left
    /// it, and for a family's sequence `reads.txt`.
    dir: &'static str,
    writer: Writer,
    sequence: Sequence,
}

impl GoldenAof {
    /// Writes the sequence on a server with `appendonly yes`.
    fn write(&self, srv: &mut Server) {
        match self.sequence {
            Sequence::Family {
                name,
                options_in_base,
            } => family_sequence(srv, name, options_in_base),
            Sequence::KeywordNames => {
                for args in KEYWORD_NAMES {
                    let _: Value = q(&mut srv.conn(), args);
                }
            }
            Sequence::KeywordNamesRewritten => {
                load_golden_aof(srv, KEYWORD_NAMES_AOF.dir);
                let _: Value = q(&mut srv.conn(), &["BGREWRITEAOF"]);
                wait_for_bg_done(srv);
                keyword_name_writes(srv);
            }
        }
    }

    /// Exact answers to check instead of `reads.txt` (which then is absent).
    fn answers(&self) -> Option<Vec<Step>> {
        match self.sequence {
            Sequence::KeywordNames => Some(keyword_name_reads()),
            Sequence::Family { .. } | Sequence::KeywordNamesRewritten => None,
        }
    }
}

/// A release's AOF of one family's sequence: 0.1.0's with its option
/// commands after the rewrite only, later ones before it too.
const fn release_aof(release: &'static str, dir: &'static str, family: &'static str) -> GoldenAof {
    GoldenAof {
        dir,
        writer: Writer::Release(release),
        sequence: Sequence::Family {
            name: family,
            options_in_base: !matches!(release.as_bytes(), b"0.1.0"),
        },
    }
}

/// A release's rewrite of the keys the `keyword-names` build declared, then
/// writes by those names ([`Sequence::KeywordNamesRewritten`]).
const fn keyword_names_rewritten(release: &'static str, dir: &'static str) -> GoldenAof {
    GoldenAof {
        dir,
        writer: Writer::Release(release),
        sequence: Sequence::KeywordNamesRewritten,
    }
}

const KEYWORD_NAMES_AOF: GoldenAof = GoldenAof {
    dir: "pre-0.1.0-keyword-names",
    writer: Writer::KeywordNamesBuild,
    sequence: Sequence::KeywordNames,
};

const GOLDEN_AOFS: &[GoldenAof] = &[
    release_aof("0.1.0", "0.1.0-rv", "RV"),
    release_aof("0.1.0", "0.1.0-tl", "TL"),
    release_aof("0.1.0", "0.1.0-topn", "TOPN"),
    release_aof("0.1.0", "0.1.0-ulist", "ULIST"),
    release_aof("0.1.0", "0.1.0-hcounter", "HCOUNTER"),
    KEYWORD_NAMES_AOF,
    release_aof("0.2.0", "0.2.0-rv", "RV"),
    release_aof("0.2.0", "0.2.0-tl", "TL"),
    release_aof("0.2.0", "0.2.0-topn", "TOPN"),
    release_aof("0.2.0", "0.2.0-ulist", "ULIST"),
    release_aof("0.2.0", "0.2.0-hcounter", "HCOUNTER"),
    keyword_names_rewritten("0.2.0", "0.2.0-keyword-names"),
    release_aof("0.3.0", "0.3.0-rv", "RV"),
    release_aof("0.3.0", "0.3.0-tl", "TL"),
    release_aof("0.3.0", "0.3.0-topn", "TOPN"),
    release_aof("0.3.0", "0.3.0-ulist", "ULIST"),
    release_aof("0.3.0", "0.3.0-hcounter", "HCOUNTER"),
    keyword_names_rewritten("0.3.0", "0.3.0-keyword-names"),
];

/// A family's golden sequence: its sample on `<family>:sample` (and with
/// `options_in_base` its option commands on keys under `<family>:base:`),
/// into the AOF's base after a `BGREWRITEAOF`; then its option commands
/// (times from [`GOLDEN_BASE`], as much as the build knows) and its sample
/// again on `<family>:sample2`, into the incr file.
pub(super) fn family_sequence(srv: &Server, name: &str, options_in_base: bool) {
    let fam = FAMILIES.iter().find(|f| f.name == name).expect("family");
    let c = &mut srv.conn();
    let key = |s: &str| format!("{}{s}", fam.prefix());
    let knows = Knows::of(c);
    let family_options = |prefix: &str| {
        option_commands(prefix, GOLDEN_BASE, knows)
            .into_iter()
            .filter(|(f, _)| *f == name)
            .map(|(_, k)| k)
    };
    run_steps(c, &(fam.sample)(&key("sample"), GOLDEN_BASE), name);
    if options_in_base {
        run_commands(c, family_options(&key("base:")));
    }
    let _: Value = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(srv);
    run_commands(c, family_options(&fam.prefix()));
    run_steps(c, &(fam.sample)(&key("sample2"), GOLDEN_BASE), name);
}

fn golden_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/aof")
        .join(name)
}

/// The AOF server config the golden files were written with: the base file
/// as commands (what the build's AOF rewrite emits).
pub(super) fn aof_server() -> ServerBuilder {
    Server::builder()
        .config("appendonly", "yes")
        .config("aof-use-rdb-preamble", "no")
}

/// [`key_reads`] of every key as `reads.txt` holds them: `key<TAB>line`.
pub(super) fn reads_text(c: &mut Connection) -> String {
    let mut out = String::new();
    for (key, lines) in all_key_reads(c, GOLDEN_BASE) {
        for line in lines {
            out += &format!("{key}\t{line}\n");
        }
    }
    out
}

/// Replaces the AOF of `srv` (which has `appendonly yes`) with the golden
/// one of `folder`, restarting it: the server then holds what it loaded.
fn load_golden_aof(srv: &mut Server, folder: &str) {
    srv.stop();
    let aof_dir = srv.dir.join("appendonlydir");
    std::fs::remove_dir_all(&aof_dir).expect("remove the server's AOF dir");
    copy_dir(&golden_dir(folder).join("appendonlydir"), &aof_dir);
    srv.restart();
}

/// [`KEYWORD_NAME_WRITES`], panicking on an error reply.
fn keyword_name_writes(srv: &Server) {
    run_commands(&mut srv.conn(), KEYWORD_NAME_WRITES.iter().map(|a| cmd(a)));
}

/// On a build that knows 0.2.0: the keys of [`KEYWORD_NAMES`], declared with
/// names that are keywords now (no client may declare those any more),
/// loaded from the `keyword-names` build's golden AOF, then [`KEYWORD_NAME_WRITES`]. What
/// `srv` held is gone: call it first, on a server with `appendonly yes`. On
/// an older build (which refuses those names on load), nothing.
pub fn add_keyword_named_keys(srv: &mut Server) {
    if Knows::of(&mut srv.conn()) < Knows::Release020 {
        return;
    }
    load_golden_aof(srv, KEYWORD_NAMES_AOF.dir);
    let what = format!(
        "{} loading tests/golden/aof/{}",
        previous_release(),
        KEYWORD_NAMES_AOF.dir
    );
    run_steps(&mut srv.conn(), &keyword_name_reads(), &what);
    keyword_name_writes(srv);
}

#[test]
fn golden_aofs_load_with_the_answers_of_the_build_that_wrote_them() {
    for golden in GOLDEN_AOFS {
        let dir = golden_dir(golden.dir);
        let mut srv = aof_server().start();
        load_golden_aof(&mut srv, golden.dir);
        let what = format!("tests/golden/aof/{}", golden.dir);
        assert_no_critical(&srv, &what);
        let c = &mut srv.conn();
        match golden.answers() {
            Some(answers) => run_steps(c, &answers, &what),
            None => {
                let want = std::fs::read_to_string(dir.join("reads.txt")).expect("reads.txt");
                let got = reads_text(c);
                assert!(!want.is_empty(), "{what}: reads.txt is empty");
                assert_eq!(got, want, "{what}: reads differ from reads.txt");
            }
        }
    }
}

/// The `keyword-names` build as master (it accepts names that are keywords now from
/// clients) and this build as its replica: the declarations reach the
/// replica, which answers with them.
#[test]
fn keyword_names_from_an_older_master_reach_this_builds_replica() {
    let mut master = Server::builder().module(&keyword_names_module()).start();
    let replica = Server::start();
    q_ok(
        &mut replica.conn(),
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    wait_for_sync(&master, &replica);
    KEYWORD_NAMES_AOF.write(&mut master);
    wait_for_sync(&master, &replica);
    assert_no_critical(&replica, "this build's replica of the keyword-names build");
    run_steps(&mut replica.conn(), &keyword_name_reads(), "the replica");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.expect("dir entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// Writes the golden AOFs that are missing, each with the build that its
/// entry names; fails naming those whose build this run does not have.
#[test]
#[ignore]
fn write_missing_golden_aofs() {
    let mut left = Vec::new();
    for golden in GOLDEN_AOFS {
        let dir = golden_dir(golden.dir);
        if dir.exists() {
            continue;
        }
        let module = match golden.writer.module() {
            Ok(module) => module,
            Err(how) => {
                left.push(format!("{} ({how})", golden.dir));
                continue;
            }
        };
        let mut builder = aof_server().module(&module);
        if let Writer::Release(_) = golden.writer {
            // Times in 2100: the guard on clients' times lifted.
            builder = builder.module_args(AHEAD_OF_THE_CLOCK);
        }
        let mut srv = builder.start();
        golden.write(&mut srv);
        let reads = match golden.answers() {
            Some(answers) => {
                run_steps(&mut srv.conn(), &answers, golden.dir);
                None
            }
            None => Some(reads_text(&mut srv.conn())),
        };
        srv.stop();
        copy_dir(&srv.dir.join("appendonlydir"), &dir.join("appendonlydir"));
        if let Some(reads) = reads {
            std::fs::write(dir.join("reads.txt"), reads).expect("write reads.txt");
        }
        eprintln!("wrote {}", dir.display());
    }
    assert!(left.is_empty(), "not written, run again with: {left:?}");
}
