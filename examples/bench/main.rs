//! Throughput, memory and latency bench: the `recipes` commands against the
//! plain Redis recipes they replace, measured in ONE run on ONE server,
//! interleaved.
//!
//! Run: `make bench` (builds the module first) or
//! `cargo build --release && cargo run --release --example bench`.
//!
//! - Starts its own `redis-server` with the module (the tests' starter,
//!   `tests/common/server.rs`) and stops it at the end, also on panic and on
//!   Ctrl-C / SIGTERM (the bench stops after the current pipeline); the
//!   server dies with the bench whatever kills it.
//! - Load: C client threads, each with its own connection, sending pipelines
//!   of P pre-encoded commands and reading exactly their replies (`pipe.rs`);
//!   any error reply fails the scenario loudly. A MULTI..EXEC block counts as
//!   one op. A recipe that is a conditional conversation (WATCH, read,
//!   decide, MULTI .. EXEC, retry) runs as a *dialog*, one whole operation at
//!   a time per client, retries included in its time.
//! - Interleaving (`run.rs`): for R rounds, every scenario of a group runs D
//!   ms in turn (the order rotates each round); write groups start every run
//!   from the same state (FLUSHALL + setup). Reported: median ops/s over
//!   rounds and the ratio to the group's baseline (the plain command),
//!   computed per round, then the median; also the CPU used during the runs
//!   by the server (~100% of a CPU = server-bound), by the bench's clients and
//!   by the rest of the machine (a busy machine makes the ratios unreliable:
//!   the bench says so).
//! - Memory: `MEMORY USAGE key SAMPLES 0` of the same data written each way.
//!   Latency: SLOWLOG durations (server-side) and a PING probe.
//! - Never asserts timings: goals are printed as met / not met. The exit code
//!   is non-zero only when something failed (error replies, I/O errors).
//! - Every group writes its results to `target/bench/<group>.json` (schema in
//!   `json.rs`), for plots and A/B comparisons.
//!
//! Environment
//! - `BENCH_CLIENTS` (4), `BENCH_PIPELINE` (64): enough to keep one server core
//!   busy while the clients use ~10% of another on a 2-CPU machine.
//! - `BENCH_ROUNDS` (5), `BENCH_MS` (1000 ms per scenario run).
//! - `BENCH_KEYS` (10000 keys for the RV/TL/ULIST write groups: with fewer, the
//!   plain-ZADD baseline grows its zsets past 128 entries within a run and
//!   converts them from listpack to skiplist, which is not the recipe's data).
//! - `BENCH_ONLY`: comma-separated group ids or prefixes, e.g. `rv` or
//!   `rv-write,topn-read`; the groups are listed in `all_groups` and described
//!   in their family's file (`rv.rs`, `tl.rs`, `topn.rs`, `ulist.rs`,
//!   `ulist_small.rs`, `hcounter.rs`, `latency.rs`, `plain_keys.rs`).
//! - `BENCH_LATENCY`: comma-separated prefixes of the latency group's scenarios
//!   to run, e.g. `topn-reads` (all when unset); `$` ends a whole id (`topn$`).
//! - `BENCH_TOPN_COMPACT_MAX`: `recipes.topn-compact-max` for the `topn-small`
//!   group's TOPN keys (unset: the server's default), e.g. 0 for the full layout.
//! - `BENCH_JSON_DIR`: where the group files go (default `target/bench`).
//! - `RECIPES_MODULE`: the .so (default: `librecipes.so` of this build);
//!   `REDIS_SERVER`: the server binary (default `redis-server`);
//!   `BENCH_MODULES`: more modules to load (space-separated paths; `make
//!   bench` names RedisBloom's, fetched once, for `topn-vs-topk`).
//!
//! Adding a family: a file with `fn xyz_group(s: &Settings) -> Group`: its
//! scenarios (the first is the baseline), measures and comparisons with goals
//! (`group.rs`), listed in `all_groups`. A scenario or measure whose module
//! command is unknown to the server (`COMMAND INFO name` is nil) is skipped,
//! not failed.

use std::process::ExitCode;
use std::time::Instant;

mod control;
mod gem;
mod group;
mod hcounter;
mod json;
mod latency;
mod memory;
mod pipe;
mod plain_keys;
mod probe;
mod report;
mod run;
mod rv;
#[allow(dead_code)] // the tests' helpers the bench does not use
#[path = "../../tests/common/server.rs"]
mod server;
mod settings;
mod tl;
mod topn;
mod topn_backfill;
mod topn_boundary;
mod topn_capacity;
mod topn_capacity_writes;
mod topn_small;
mod topn_topk;
mod ulist;
mod ulist_small;

use group::Group;
use run::{run_group, RunContext};
use settings::{install_signal_handlers, Settings};

fn all_groups(s: &Settings) -> Vec<Group> {
    vec![
        rv::write_group(s),
        rv::memory_group(s),
        tl::write_group(s),
        topn::write_group(s),
        topn::read_group(s),
        topn::last_group(s),
        topn::idle_group(s),
        topn::latency_group(s),
        topn_small::group(s),
        topn_topk::group(s),
        topn_capacity::group(s),
        topn_capacity_writes::group(s),
        topn_boundary::group(s),
        ulist::write_group(s),
        ulist::gem_group(s),
        ulist::memory_group(s),
        ulist::reclaim_group(s),
        ulist_small::group(s),
        hcounter::write_group(s),
        hcounter::unique_group(s),
        hcounter::list_group(s),
        hcounter::memory_group(s),
        latency::group(s),
        plain_keys::group(s),
    ]
}

fn run() -> Result<bool, String> {
    install_signal_handlers();
    let s = Settings::from_env()?;
    if let Some(w) = s.stale_warning() {
        eprintln!("{w}");
    }
    let groups: Vec<Group> = all_groups(&s)
        .into_iter()
        .filter(|g| s.wants(g.id))
        .collect();
    if groups.is_empty() {
        let ids: Vec<&str> = all_groups(&s).iter().map(|g| g.id).collect();
        return Err(format!(
            "BENCH_ONLY={} matches no group; groups: {}",
            s.only.join(","),
            ids.join(", ")
        ));
    }
    // Other modules to load beside recipes (RedisBloom's TOPK for topn-vs-topk).
    let modules = std::env::var("BENCH_MODULES").unwrap_or_default();
    let extra: Vec<&str> = modules
        .split_whitespace()
        .flat_map(|path| ["--loadmodule", path])
        .collect();
    let server = control::start_server(&extra)?;
    let mut c = control::Conn::open(server.port)?;
    let redis_version = c.info_field("server", "redis_version")?;
    let modules = control::text(&c.cmd("MODULE LIST")?);
    if !modules.contains("recipes") {
        return Err(format!("module not loaded? MODULE LIST: {modules}"));
    }
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let (clients, pipeline, rounds, ms) = (s.clients, s.pipeline, s.rounds, s.ms);
    println!(
        "recipes bench: redis {redis_version} (port {}), module {}",
        server.port,
        s.module.display()
    );
    println!(
        "settings: {clients} clients x pipeline {pipeline}, {rounds} rounds x {ms} ms per scenario, \
         {cpus} CPUs"
    );
    println!("command: {}", s.command_line());
    println!(
        "CPU columns: share of one CPU used during a run by the server (~100% = server-bound), \
         by this bench's clients, and by everything else on the machine"
    );

    let ctx = RunContext {
        settings: &s,
        port: server.port,
        redis_version,
        cpus,
    };
    let t = Instant::now();
    let (mut failed, mut busy, mut rows) = (false, Vec::new(), Vec::new());
    for g in &groups {
        let (group_rows, group_failed, group_busy) = run_group(&ctx, &mut c, g)?;
        rows.extend(group_rows);
        failed |= group_failed;
        busy.extend(group_busy);
    }

    report::print_summary(&ctx, &rows, &mut busy, t.elapsed());
    Ok(!failed)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("bench: some scenarios FAILED (see above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}
