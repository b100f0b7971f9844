//! Throughput and memory bench: the `recipes` commands against the plain Redis
//! recipes they replace, measured in ONE run on ONE server, interleaved.
//!
//! Run: `make bench` (builds the module first) or
//! `cargo build --release && cargo run --release --example bench`.
//!
//! What it does
//! - Starts its own `redis-server` on a free loopback port with the module
//!   loaded (`--save "" --appendonly no`, a temp `--dir`) and kills it at the
//!   end, also on panic and on Ctrl-C / SIGTERM (the server runs in its own
//!   process group; the bench stops after the current pipeline and cleans up).
//!   On Linux the server also gets SIGKILL if the bench itself is killed.
//! - A load generator in plain std Rust: C client threads, each with its own
//!   connection, sending pipelines of P pre-encoded RESP commands and reading
//!   exactly their replies. Any error reply fails the scenario loudly (a bench
//!   on error replies means nothing). A MULTI..EXEC block counts as one op.
//!   A recipe that is a conditional conversation (WATCH, read, decide, MULTI
//!   .. EXEC, retry) runs as a *dialog* instead: each client runs one whole
//!   operation at a time, request/reply, retries included in its time; the
//!   bench also prints its attempts per operation.
//! - Interleaving: for R rounds, every scenario of a group runs D ms in turn
//!   (the order rotates each round); write groups start every run from the same
//!   state (FLUSHALL + setup). Reported: median ops/s over rounds and the ratio
//!   to the group's baseline (the plain command), computed per round, then the
//!   median; also the CPU used during the runs by the server (~100% of a CPU =
//!   server-bound), by the bench's clients and by the rest of the machine (a
//!   busy machine makes the ratios unreliable: the bench says so).
//! - Memory: `MEMORY USAGE key SAMPLES 0` of the same data written the recipe's
//!   way and the module's way. Latency: SLOWLOG durations (server-side).
//! - Never asserts timings: goals are printed as met / not met. The exit code
//!   is non-zero only when something failed (error replies, I/O errors).
//!
//! Environment
//! - `BENCH_CLIENTS` (4), `BENCH_PIPELINE` (64): enough to keep one server core
//!   busy while the clients use ~10% of another on a 2-CPU machine.
//! - `BENCH_ROUNDS` (5), `BENCH_MS` (1000 ms per scenario run).
//! - `BENCH_KEYS` (10000 keys for the RV/TL write groups: with fewer, the
//!   plain-ZADD baseline grows its zsets past 128 entries within a run and
//!   converts them from listpack to skiplist, which is not the recipe's data).
//! - `BENCH_ONLY`: comma-separated group ids or prefixes, e.g. `rv` or
//!   `rv-write,topn-read` (groups: rv-write, rv-memory, tl-write, topn-write,
//!   topn-read, topn-last, topn-idle, topn-latency, ulist-write, ulist-gem,
//!   ulist-memory, ulist-reclaim, hcounter-write, hcounter-unique,
//!   hcounter-list, hcounter-memory, latency, ulist-small; `ulist` runs the
//!   ULIST groups (ulist-small described in `ulist_small.rs`), `hcounter` the
//!   four HCOUNTER groups, described in `hcounter.rs`; `latency`, described in
//!   `latency.rs`, writes `target/bench/latency.json`).
//!   topn-idle starts a replica of the bench's server for its replica
//!   measure, and waits about 30 s (buckets of 1 s must pass with no writes).
//!
//! The ULIST groups (the gem redis_counters' UniqueValuesLists)
//! - `ulist-write`: ULIST.ADD into `BENCH_KEYS` lists created empty
//!   (`VALUE user`) against plain SADD of the same values into one set per
//!   key (goal >= 0.6x); also with `SCOPE month PARTITION day` (30 days),
//!   and with `AT` given (then replicated verbatim: shows what building the
//!   replicated effect costs).
//! - `ulist-gem`: 8 clients add user ids drawn from 200,000 (half stored
//!   at the start, spread over 30 days) into 30 daily partitions of one month:
//!   the gem's Blocking algorithm as it runs it, one request/reply at a time
//!   (WATCH the partitions list, LRANGE it, WATCH each partition set,
//!   SISMEMBER each, then MULTI SADD [RPUSH] EXEC, retried while EXEC is nil)
//!   against ULIST.ADD by the same 8 clients at pipeline 1 (goal >= 10x), and
//!   pipelined for reference.
//! - `ulist-memory`: bytes per value at 100,000 values in 30 daily
//!   partitions, integer and `u<n>` ids: ULIST without expiry against the
//!   gem's Blocking layout (a set per partition + the partitions list), and
//!   ULIST with `EXPIRE 86400` against its Expirable layout (a zset per
//!   partition scored by the expiry); goal ULIST <= gem on MEMORY USAGE
//!   (the module's own estimate for its key), checked also on what the
//!   allocator holds (`used_memory` with minus without the keys).
//! - `ulist-reclaim`: 200,000 values that expire together in one untouched
//!   list; a client PINGs about every ms during the background reclaim and,
//!   just before, on the idle server: goal max <= idle max + 2 ms; also the
//!   reclaim time and the list's MEMORY USAGE before, after and when empty.
//! - `RECIPES_MODULE`: the .so (default `<repo>/target/release/librecipes.so`);
//!   `REDIS_SERVER`: the server binary (default `redis-server`).
//!
//! Adding a family: write a `fn xyz_group(s: &Settings) -> Group` with its
//! scenarios (each a name + setup + command generator; the first one is the
//! baseline), measures and comparisons with goals, and list it in
//! `all_groups`. A scenario or measure whose module command is unknown to the
//! server (`COMMAND INFO name` is nil) is skipped, not failed.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod hcounter;
mod json;
mod latency;
mod ulist_small;

// ======================================================================
// Settings
// ======================================================================

struct Settings {
    clients: usize,
    pipeline: usize,
    rounds: usize,
    ms: u64,
    keys: u64,
    only: Vec<String>,
    module: PathBuf,
    module_is_default: bool,
    redis_server: String,
}

fn env_num(name: &str, default: u64, min: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(v) if v.trim().is_empty() => Ok(default),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n >= min => Ok(n),
            _ => Err(format!("{name}={v:?}: expected an integer >= {min}")),
        },
    }
}

impl Settings {
    fn from_env() -> Result<Settings, String> {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let (module, module_is_default) = match std::env::var("RECIPES_MODULE") {
            Ok(p) if !p.is_empty() => (PathBuf::from(p), false),
            _ => (repo.join("target/release/librecipes.so"), true),
        };
        Ok(Settings {
            clients: env_num("BENCH_CLIENTS", 4, 1)? as usize,
            pipeline: env_num("BENCH_PIPELINE", 64, 1)? as usize,
            rounds: env_num("BENCH_ROUNDS", 5, 1)? as usize,
            ms: env_num("BENCH_MS", 1000, 10)?,
            keys: env_num("BENCH_KEYS", 10_000, 1)?,
            only: std::env::var("BENCH_ONLY")
                .unwrap_or_default()
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect(),
            module,
            module_is_default,
            redis_server: std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into()),
        })
    }

    fn wants(&self, group_id: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| group_id.starts_with(o.as_str()))
    }

    fn command_line(&self) -> String {
        let mut s = format!(
            "BENCH_CLIENTS={} BENCH_PIPELINE={} BENCH_ROUNDS={} BENCH_MS={} BENCH_KEYS={}",
            self.clients, self.pipeline, self.rounds, self.ms, self.keys
        );
        if !self.only.is_empty() {
            s += &format!(" BENCH_ONLY={}", self.only.join(","));
        }
        if !self.module_is_default {
            s += &format!(" RECIPES_MODULE={}", self.module.display());
        }
        s + " cargo run --release --example bench"
    }
}

// ======================================================================
// Small deterministic RNG (splitmix64) and per-thread generator state
// ======================================================================

/// What a command generator gets: a fast RNG and the wall clock in ms
/// (refreshed once per pipeline).
struct Gen {
    s: u64,
    now_ms: u64,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            s: seed ^ 0x5DEE_CE66_D1CE_4E5B,
            now_ms: now_ms(),
        }
    }
    fn next(&mut self) -> u64 {
        self.s = self.s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n.
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
    /// A random 9-digit id (a page id, a user id).
    fn id9(&mut self) -> u64 {
        100_000_000 + self.below(900_000_000)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

const HOUR_MS: u64 = 3_600_000;

/// Set by SIGINT / SIGTERM: runs stop after their current pipeline, the bench
/// reports "interrupted" and kills its server on the way out.
static STOP: AtomicBool = AtomicBool::new(false);

fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// CPU seconds the whole machine spent busy so far (all CPUs, from
/// /proc/stat; steal counts as busy), if it can be read.
fn machine_busy_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let f: Vec<u64> = line
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    if f.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest* are inside user)
    let total: u64 = f.iter().take(8).sum();
    let busy = total - f[3] - f[4];
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| busy as f64 / hz as f64)
}

/// CPU use during a run, in cores.
#[derive(Clone, Copy)]
struct CpuUse {
    /// the redis-server
    server: f64,
    /// this bench (the load generator)
    client: f64,
    /// everything else on the machine (other processes, steal), if known
    other: Option<f64>,
}

struct CpuSnap {
    server: f64,
    own: f64,
    machine: Option<f64>,
    at: Instant,
}

impl CpuSnap {
    fn take(c: &mut Conn) -> Result<CpuSnap, String> {
        Ok(CpuSnap {
            server: c.server_cpu()?,
            own: own_cpu(),
            machine: machine_busy_cpu(),
            at: Instant::now(),
        })
    }

    fn since(&self, before: &CpuSnap) -> CpuUse {
        let secs = (self.at - before.at).as_secs_f64().max(1e-9);
        let server = (self.server - before.server) / secs;
        let client = (self.own - before.own) / secs;
        let other = match (self.machine, before.machine) {
            (Some(a), Some(b)) => Some(((a - b) / secs - server - client).max(0.0)),
            _ => None,
        };
        CpuUse {
            server,
            client,
            other,
        }
    }
}

/// CPU seconds (user + sys) used by this process so far, all threads.
fn own_cpu() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut u) != 0 {
            return 0.0;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(u.ru_utime) + tv(u.ru_stime)
    }
}

// ======================================================================
// RESP encoding (requests are always arrays of bulk strings)
// ======================================================================

/// One argument of a command.
#[allow(dead_code)]
enum A<'a> {
    /// text
    S(&'a str),
    /// bytes
    B(&'a [u8]),
    /// unsigned decimal
    U(u64),
    /// signed decimal
    I(i64),
    /// `prefix` followed by a number: `K("rv:", 42)` -> `rv:42`
    K(&'a str, u64),
    /// `prefix`, a number, `:`, a number: `K2("topn:", 3, 475000)` -> `topn:3:475000`
    K2(&'a str, u64, u64),
}

fn fmt_u(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = 20;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

fn put_header(out: &mut Vec<u8>, kind: u8, n: u64) {
    let mut t = [0u8; 20];
    out.push(kind);
    out.extend_from_slice(fmt_u(n, &mut t));
    out.extend_from_slice(b"\r\n");
}

fn put_bulk_parts(out: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    put_header(out, b'$', len as u64);
    for p in parts {
        out.extend_from_slice(p);
    }
    out.extend_from_slice(b"\r\n");
}

/// Append one command (a RESP array of bulk strings) to `out`.
fn enc(out: &mut Vec<u8>, args: &[A]) {
    put_header(out, b'*', args.len() as u64);
    for a in args {
        let mut t = [0u8; 20];
        let mut t2 = [0u8; 20];
        match a {
            A::S(s) => put_bulk_parts(out, &[s.as_bytes()]),
            A::B(b) => put_bulk_parts(out, &[b]),
            A::U(v) => put_bulk_parts(out, &[fmt_u(*v, &mut t)]),
            A::I(v) => {
                let d = fmt_u(v.unsigned_abs(), &mut t);
                put_bulk_parts(out, &[if *v < 0 { b"-" } else { b"" }, d])
            }
            A::K(p, v) => put_bulk_parts(out, &[p.as_bytes(), fmt_u(*v, &mut t)]),
            A::K2(p, a, b) => put_bulk_parts(
                out,
                &[p.as_bytes(), fmt_u(*a, &mut t), b":", fmt_u(*b, &mut t2)],
            ),
        }
    }
}

// ======================================================================
// RESP replies: a skipper for the load generator, a parser for control
// ======================================================================

#[derive(Debug, Clone)]
enum V {
    Nil,
    Int(i64),
    Str(Vec<u8>),
    Err(String),
    Arr(Vec<V>),
}

impl V {
    fn text(&self) -> String {
        match self {
            V::Nil => "(nil)".into(),
            V::Int(i) => i.to_string(),
            V::Str(s) => String::from_utf8_lossy(s).into_owned(),
            V::Err(e) => format!("(error) {e}"),
            V::Arr(a) => format!(
                "[{}]",
                a.iter().map(|v| v.text()).collect::<Vec<_>>().join(", ")
            ),
        }
    }
    fn int(&self) -> Result<i64, String> {
        match self {
            V::Int(i) => Ok(*i),
            V::Str(s) => std::str::from_utf8(s)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| format!("expected an integer, got {}", self.text())),
            _ => Err(format!("expected an integer, got {}", self.text())),
        }
    }
}

fn proto_err(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

struct Reader<R> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

impl<R: Read> Reader<R> {
    fn new(r: R) -> Self {
        Reader {
            r,
            buf: vec![0; 64 * 1024],
            pos: 0,
            end: 0,
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        let n = self.r.read(&mut self.buf[self.end..])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection",
            ));
        }
        self.end += n;
        Ok(())
    }

    /// Consume one CRLF-terminated line; returns its range in `buf` (without CRLF),
    /// valid until the next read.
    fn line(&mut self) -> io::Result<(usize, usize)> {
        let mut from = self.pos;
        loop {
            if let Some(i) = self.buf[from..self.end].iter().position(|&c| c == b'\n') {
                let nl = from + i;
                let s = self.pos;
                self.pos = nl + 1;
                let e = if nl > s && self.buf[nl - 1] == b'\r' {
                    nl - 1
                } else {
                    nl
                };
                if e == s {
                    return Err(proto_err("empty reply line".into()));
                }
                return Ok((s, e));
            }
            let scanned = self.end - self.pos;
            self.fill()?;
            from = self.pos + scanned;
        }
    }

    fn num(&self, s: usize, e: usize) -> io::Result<i64> {
        std::str::from_utf8(&self.buf[s + 1..e])
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .ok_or_else(|| {
                proto_err(format!(
                    "bad length {:?}",
                    String::from_utf8_lossy(&self.buf[s..e])
                ))
            })
    }

    fn skip_bytes(&mut self, mut n: usize) -> io::Result<()> {
        while n > 0 {
            if self.pos == self.end {
                self.fill()?;
            }
            let take = n.min(self.end - self.pos);
            self.pos += take;
            n -= take;
        }
        Ok(())
    }

    fn take_bytes(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.end - self.pos < n + 2 {
            self.fill()?;
        }
        let v = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n + 2;
        Ok(v)
    }

    /// Skip one complete reply of any type; returns how many error replies it
    /// contained (nested ones too) and keeps the first error's text.
    fn skip(&mut self, first_err: &mut Option<String>) -> io::Result<u64> {
        let (s, e) = self.line()?;
        match self.buf[s] {
            b'+' | b':' | b'_' | b',' | b'#' | b'(' => Ok(0),
            b'-' => {
                if first_err.is_none() {
                    *first_err = Some(String::from_utf8_lossy(&self.buf[s + 1..e]).into_owned());
                }
                Ok(1)
            }
            t @ (b'$' | b'=' | b'!') => {
                let n = self.num(s, e)?;
                if n >= 0 {
                    if t == b'!' && first_err.is_none() {
                        let v = self.take_bytes(n as usize)?;
                        *first_err = Some(String::from_utf8_lossy(&v).into_owned());
                    } else {
                        self.skip_bytes(n as usize + 2)?;
                    }
                }
                Ok((t == b'!') as u64)
            }
            t @ (b'*' | b'~' | b'>' | b'%' | b'|') => {
                let n = self.num(s, e)?;
                let n = if t == b'%' || t == b'|' { n * 2 } else { n };
                let mut errs = 0;
                for _ in 0..n.max(0) {
                    errs += self.skip(first_err)?;
                }
                if t == b'|' {
                    errs += self.skip(first_err)?; // an attribute precedes the real reply
                }
                Ok(errs)
            }
            other => Err(proto_err(format!(
                "unexpected reply type byte {:?}",
                other as char
            ))),
        }
    }

    /// Parse one complete reply (RESP2, plus the simple RESP3 types).
    fn value(&mut self) -> io::Result<V> {
        let (s, e) = self.line()?;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match self.buf[s] {
            b'+' | b',' | b'(' | b'#' => Ok(V::Str(self.buf[s + 1..e].to_vec())),
            b':' => Ok(V::Int(self.num(s, e)?)),
            b'_' => Ok(V::Nil),
            b'-' => Ok(V::Err(text(&self.buf[s + 1..e]))),
            t @ (b'$' | b'=' | b'!') => {
                let n = self.num(s, e)?;
                if n < 0 {
                    return Ok(V::Nil);
                }
                let v = self.take_bytes(n as usize)?;
                Ok(if t == b'!' {
                    V::Err(text(&v))
                } else {
                    V::Str(v)
                })
            }
            t @ (b'*' | b'~' | b'>' | b'%') => {
                let n = self.num(s, e)?;
                if n < 0 {
                    return Ok(V::Nil);
                }
                let n = if t == b'%' { n * 2 } else { n };
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(self.value()?);
                }
                Ok(V::Arr(items))
            }
            other => Err(proto_err(format!(
                "unexpected reply type byte {:?}",
                other as char
            ))),
        }
    }
}

// ======================================================================
// Control connection
// ======================================================================

struct Conn {
    w: TcpStream,
    r: Reader<TcpStream>,
    buf: Vec<u8>,
    known: HashMap<String, bool>,
}

fn connect(port: u16) -> io::Result<(TcpStream, Reader<TcpStream>)> {
    let s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    let r = s.try_clone()?;
    Ok((s, Reader::new(r)))
}

impl Conn {
    fn open(port: u16) -> io::Result<Conn> {
        let (w, r) = connect(port)?;
        Ok(Conn {
            w,
            r,
            buf: Vec::new(),
            known: HashMap::new(),
        })
    }

    /// One command; an error reply becomes `Err`.
    fn call(&mut self, args: &[A]) -> Result<V, String> {
        self.buf.clear();
        enc(&mut self.buf, args);
        self.w
            .write_all(&self.buf)
            .map_err(|e| format!("write: {e}"))?;
        match self.r.value().map_err(|e| format!("read: {e}"))? {
            V::Err(e) => Err(e),
            v => Ok(v),
        }
    }

    /// Several commands written at once (`write` encodes `n` of them), then
    /// their `n` replies; an error reply, also inside an EXEC reply, becomes
    /// `Err`.
    fn batch(&mut self, n: usize, write: impl FnOnce(&mut Vec<u8>)) -> Result<Vec<V>, String> {
        self.buf.clear();
        write(&mut self.buf);
        self.w
            .write_all(&self.buf)
            .map_err(|e| format!("write: {e}"))?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let v = self.r.value().map_err(|e| format!("read: {e}"))?;
            let err = match &v {
                V::Err(e) => Some(e.clone()),
                V::Arr(items) => items.iter().find_map(|i| match i {
                    V::Err(e) => Some(e.clone()),
                    _ => None,
                }),
                _ => None,
            };
            if let Some(e) = err {
                return Err(e);
            }
            out.push(v);
        }
        Ok(out)
    }

    /// A command given as one whitespace-separated line.
    fn cmd(&mut self, line: &str) -> Result<V, String> {
        let args: Vec<A> = line.split_whitespace().map(A::S).collect();
        self.call(&args).map_err(|e| format!("{line}: {e}"))
    }

    /// Whether the server knows a command (`COMMAND INFO name` is not nil).
    fn has(&mut self, name: &str) -> Result<bool, String> {
        let name = name.to_ascii_lowercase();
        if let Some(&k) = self.known.get(&name) {
            return Ok(k);
        }
        let v = self.call(&[A::S("COMMAND"), A::S("INFO"), A::S(&name)])?;
        let k = matches!(&v, V::Arr(items) if matches!(items.first(), Some(V::Arr(_))));
        self.known.insert(name, k);
        Ok(k)
    }

    /// Bulk load: `f(i, out)` appends command number i (0..n); sent in pipelines.
    /// The first error reply aborts the load.
    fn load(
        &mut self,
        what: &str,
        n: u64,
        mut f: impl FnMut(u64, &mut Vec<u8>),
    ) -> Result<(), String> {
        const BATCH: u64 = 1024;
        let mut i = 0;
        while i < n {
            if stopped() {
                return Err("interrupted".into());
            }
            let k = BATCH.min(n - i);
            self.buf.clear();
            for j in i..i + k {
                f(j, &mut self.buf);
            }
            self.w
                .write_all(&self.buf)
                .map_err(|e| format!("{what}: write: {e}"))?;
            let mut first = None;
            let mut errs = 0;
            for _ in 0..k {
                errs += self
                    .r
                    .skip(&mut first)
                    .map_err(|e| format!("{what}: read: {e}"))?;
            }
            if errs > 0 {
                return Err(format!(
                    "{what}: {errs} error replies, first: {}",
                    first.unwrap_or_default()
                ));
            }
            i += k;
        }
        Ok(())
    }

    fn script_load(&mut self, lua: &str) -> Result<String, String> {
        Ok(self
            .call(&[A::S("SCRIPT"), A::S("LOAD"), A::S(lua)])?
            .text())
    }

    fn memory_usage(&mut self, key: &str) -> Result<i64, String> {
        self.call(&[
            A::S("MEMORY"),
            A::S("USAGE"),
            A::S(key),
            A::S("SAMPLES"),
            A::S("0"),
        ])
        .and_then(|v| v.int())
        .map_err(|e| format!("MEMORY USAGE {key}: {e}"))
    }

    fn info_field(&mut self, section: &str, field: &str) -> Result<String, String> {
        let v = self.call(&[A::S("INFO"), A::S(section)])?.text();
        let pat = format!("{field}:");
        v.lines()
            .find_map(|l| l.strip_prefix(pat.as_str()).map(|x| x.trim().to_string()))
            .ok_or_else(|| format!("INFO {section}: no {field}"))
    }

    /// Server CPU seconds (user + sys) so far.
    fn server_cpu(&mut self) -> Result<f64, String> {
        let v = self.call(&[A::S("INFO"), A::S("cpu")])?.text();
        let mut t = 0.0;
        for l in v.lines() {
            if let Some(x) = l
                .strip_prefix("used_cpu_user:")
                .or_else(|| l.strip_prefix("used_cpu_sys:"))
            {
                t += x.trim().parse::<f64>().unwrap_or(0.0);
            }
        }
        Ok(t)
    }
}

// ======================================================================
// The bench's own redis-server
// ======================================================================

struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind 127.0.0.1:0: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

fn log_tail(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Remove temp dirs left by benches that were killed (SIGKILL leaves them).
fn remove_stale_dirs() {
    let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("recipes-bench-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn start_server(s: &Settings) -> Result<Server, String> {
    start_server_with(&s.redis_server, &s.module, &[])
}

/// A server of `redis_server` with `module` loaded and `extra` arguments (e.g. `--replicaof`).
fn start_server_with(
    redis_server: &str,
    module: &Path,
    extra: &[String],
) -> Result<Server, String> {
    if cfg!(target_os = "linux") {
        remove_stale_dirs();
    }
    let port = free_port()?;
    let dir = std::env::temp_dir().join(format!("recipes-bench-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let mut cmd = Command::new(redis_server);
    cmd.arg("--port")
        .arg(port.to_string())
        .args([
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
        ])
        .arg("--dir")
        .arg(&dir)
        .arg("--logfile")
        .arg(dir.join("redis.log"))
        .arg("--loadmodule")
        .arg(module)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            // Its own process group: a terminal's Ctrl-C reaches the bench only,
            // which then stops cleanly and kills the server itself.
            libc::setpgid(0, 0);
            // The server dies with the bench, whatever kills the bench.
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {redis_server}: {e}"))?;
    let mut server = Server { child, port, dir };
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(Some(st)) = server.child.try_wait() {
            return Err(format!(
                "redis-server exited at startup ({st}); log:\n{}",
                log_tail(&server.dir)
            ));
        }
        if let Ok(mut c) = Conn::open(port) {
            if let Ok(V::Str(p)) = c.call(&[A::S("PING")]) {
                if p == b"PONG" {
                    break;
                }
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "redis-server not ready after 15 s; log:\n{}",
                log_tail(&server.dir)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(server)
}

// ======================================================================
// Scenarios, measures, groups
// ======================================================================

/// Appends ONE operation (one command, or a whole MULTI..EXEC block) to the
/// buffer and returns how many replies it produces.
type OpFn = Arc<dyn Fn(&mut Gen, &mut Vec<u8>) -> usize + Send + Sync>;
/// Runs ONE operation as a request/reply conversation on the client's own
/// connection (a conditional protocol such as WATCH .. EXEC with retries,
/// which cannot be pre-encoded); returns how many attempts it took (1 = no
/// retry). Error replies fail the scenario, as in pipelined runs.
type DialogFn = Arc<dyn Fn(&mut Gen, &mut Conn) -> Result<u64, String> + Send + Sync>;
type SetupFn = Box<dyn Fn(&mut Conn) -> Result<(), String>>;
type ScenarioSetupFn = Box<dyn Fn(&mut Conn) -> Result<Load, String>>;

/// What each client of a run does.
enum Load {
    /// Pipelines of `pipeline` pre-encoded operations.
    Pipelined(OpFn),
    /// One conversation after the other (the pipeline depth does not apply).
    Dialog(DialogFn),
}
/// Returns the value and a note to print next to it.
type MeasureFn = Box<dyn Fn(&mut Conn) -> Result<(f64, String), String>>;

struct Scenario {
    /// Short name, used in comparisons and tables.
    id: &'static str,
    /// What one operation is.
    label: String,
    /// Module commands it needs; unknown -> the scenario is skipped.
    requires: Vec<&'static str>,
    /// Overrides of the global client count / pipeline depth (slow commands).
    clients: Option<usize>,
    pipeline: Option<usize>,
    /// Runs before each run (after FLUSHALL + group setup in reset groups):
    /// loads scripts, fills data, and returns the operation generator.
    setup: ScenarioSetupFn,
}

#[derive(Clone, Copy)]
enum Unit {
    Bytes,
    /// bytes per stored value (shown with a decimal)
    BytesPerValue,
    Micros,
    Millis,
}

struct Measure {
    id: &'static str,
    label: String,
    unit: Unit,
    requires: Vec<&'static str>,
    /// Returns the value and a note to print next to it.
    run: MeasureFn,
}

#[derive(Clone, Copy)]
enum Goal {
    AtLeast(f64),
    AtMost(f64),
}

impl Goal {
    fn met(self, x: f64) -> bool {
        match self {
            Goal::AtLeast(g) => x >= g,
            Goal::AtMost(g) => x <= g,
        }
    }
    fn text(self, unit: &str) -> String {
        match self {
            Goal::AtLeast(g) => format!(">= {}{unit}", trim_num(g)),
            Goal::AtMost(g) => format!("<= {}{unit}", trim_num(g)),
        }
    }
}

/// `a / b` (throughput: per-round ratio, then median; measures: value ratio),
/// or, with `b: None`, the measure `a` itself against an absolute goal.
struct Compare {
    a: &'static str,
    b: Option<&'static str>,
    goal: Option<Goal>,
}

struct Group {
    id: &'static str,
    title: String,
    /// true: FLUSHALL + group setup before every run (write groups);
    /// false: once at the start of the group (read groups on big data).
    reset_each: bool,
    setup: Option<SetupFn>,
    /// The first scenario is the baseline.
    scenarios: Vec<Scenario>,
    /// Measured once, after the throughput rounds, on the group's data.
    measures: Vec<Measure>,
    compares: Vec<Compare>,
}

impl Scenario {
    /// A scenario of one command per operation with nothing to set up:
    /// `args` writes the command.
    fn command(
        id: &'static str,
        label: impl Into<String>,
        requires: Vec<&'static str>,
        args: impl Fn(&mut Gen, &mut Vec<u8>) + Clone + Send + Sync + 'static,
    ) -> Scenario {
        Scenario {
            id,
            label: label.into(),
            requires,
            clients: None,
            pipeline: None,
            setup: Box::new(move |_| {
                let args = args.clone();
                Ok(op(move |g, out| {
                    args(g, out);
                    1
                }))
            }),
        }
    }
}

fn op(f: impl Fn(&mut Gen, &mut Vec<u8>) -> usize + Send + Sync + 'static) -> Load {
    Load::Pipelined(Arc::new(f))
}

fn dialog(f: impl Fn(&mut Gen, &mut Conn) -> Result<u64, String> + Send + Sync + 'static) -> Load {
    Load::Dialog(Arc::new(f))
}

fn cmp(a: &'static str, b: &'static str, goal: Option<Goal>) -> Compare {
    Compare {
        a,
        b: Some(b),
        goal,
    }
}

// ----------------------------------------------------------------------
// RV: recency list
// ----------------------------------------------------------------------

const RV_MAXLEN: u64 = 30;
const RV_TTL: u64 = 86_400;

const RV_LUA: &str = "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])\n\
                      redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -31)\n\
                      redis.call('EXPIRE', KEYS[1], 86400)";

fn rv_write_group(s: &Settings) -> Group {
    let keys = s.keys;
    Group {
        id: "rv-write",
        title: format!(
            "RV write: {keys} keys rv:<n>, random 9-digit members, lists full at {RV_MAXLEN} \
             (every add trims one), TTL {RV_TTL}; baseline: one plain ZADD (no trim, no expire)"
        ),
        reset_each: true,
        setup: Some(Box::new(move |c: &mut Conn| {
            // Every key starts full: 30 entries in the last 30 minutes, TTL set.
            let mut g = Gen::new(1);
            let t0 = now_ms() - 3_600_000;
            c.load("RV prefill", keys * 2, |i, out| {
                let k = i / 2;
                if i % 2 == 1 {
                    enc(out, &[A::S("EXPIRE"), A::K("rv:", k), A::U(RV_TTL)]);
                    return;
                }
                let mut args = vec![A::S("ZADD"), A::K("rv:", k)];
                for j in 0..RV_MAXLEN {
                    args.push(A::U(t0 + j * 60_000));
                    args.push(A::U(g.id9()));
                }
                enc(out, &args);
            })
        })),
        scenarios: vec![
            Scenario::command("ZADD", "ZADD key <ms> member", vec![], move |g, out| {
                let key = A::K("rv:", g.below(keys));
                enc(out, &[A::S("ZADD"), key, A::U(g.now_ms), A::U(g.id9())])
            }),
            Scenario::command(
                "RV.ADD",
                format!("RV.ADD key member MAXLEN {RV_MAXLEN} TTL {RV_TTL}"),
                vec!["rv.add"],
                move |g, out| {
                    let key = A::K("rv:", g.below(keys));
                    let (max, ttl) = (A::U(RV_MAXLEN), A::U(RV_TTL));
                    enc(out, &[A::S("RV.ADD"), key, A::U(g.id9()), A::S("MAXLEN"), max, A::S("TTL"), ttl])
                },
            ),
            Scenario {
                id: "Lua",
                label: "Lua recipe via EVALSHA: ZADD key <ms> member; ZREMRANGEBYRANK key 0 -31; EXPIRE key 86400".into(),
                requires: vec![],
                clients: None,
                pipeline: None,
                setup: Box::new(move |c| {
                    let sha = c.script_load(RV_LUA)?;
                    Ok(op(move |g, out| {
                        enc(
                            out,
                            &[
                                A::S("EVALSHA"),
                                A::S(&sha),
                                A::S("1"),
                                A::K("rv:", g.below(keys)),
                                A::U(g.now_ms),
                                A::U(g.id9()),
                            ],
                        );
                        1
                    }))
                }),
            },
            Scenario {
                id: "MULTI",
                label: "MULTI; ZADD key <ms> member; ZREMRANGEBYRANK key 0 -31; EXPIRE key 86400; EXEC".into(),
                requires: vec![],
                clients: None,
                pipeline: None,
                setup: Box::new(move |_| {
                    Ok(op(move |g, out| {
                        let k = g.below(keys);
                        enc(out, &[A::S("MULTI")]);
                        enc(out, &[A::S("ZADD"), A::K("rv:", k), A::U(g.now_ms), A::U(g.id9())]);
                        enc(out, &[A::S("ZREMRANGEBYRANK"), A::K("rv:", k), A::S("0"), A::S("-31")]);
                        enc(out, &[A::S("EXPIRE"), A::K("rv:", k), A::U(RV_TTL)]);
                        enc(out, &[A::S("EXEC")]);
                        5
                    }))
                }),
            },
        ],
        measures: vec![],
        compares: vec![
            cmp("RV.ADD", "ZADD", Some(Goal::AtLeast(0.6))),
            cmp("RV.ADD", "Lua", Some(Goal::AtLeast(2.0))),
            cmp("RV.ADD", "MULTI", None),
        ],
    }
}

/// The 30 (seconds, member) pairs of the memory comparison.
fn rv_mem_data() -> Vec<(u64, u64)> {
    let mut g = Gen::new(7);
    (0..RV_MAXLEN)
        .map(|i| (1_364_218_200 + i * 60, g.id9()))
        .collect()
}

fn rv_mem_zadd(id: &'static str, label: &str, key: &'static str, scale: u64) -> Measure {
    Measure {
        id,
        label: label.into(),
        unit: Unit::Bytes,
        requires: vec![],
        run: Box::new(move |c| {
            let mut args = vec![A::S("ZADD"), A::S(key)];
            let data = rv_mem_data();
            for (t, m) in &data {
                args.push(A::U(t * scale));
                args.push(A::U(*m));
            }
            c.call(&args)?;
            let enc = c
                .call(&[A::S("OBJECT"), A::S("ENCODING"), A::S(key)])?
                .text();
            Ok((c.memory_usage(key)? as f64, format!("{key}, {enc}")))
        }),
    }
}

fn rv_mem_rvadd(id: &'static str, label: &str, key: &'static str, scale: u64) -> Measure {
    Measure {
        id,
        label: label.into(),
        unit: Unit::Bytes,
        requires: vec!["rv.add"],
        run: Box::new(move |c| {
            for (t, m) in rv_mem_data() {
                c.call(&[
                    A::S("RV.ADD"),
                    A::S(key),
                    A::U(m),
                    A::S("AT"),
                    A::U(t * scale),
                    A::S("MAXLEN"),
                    A::U(RV_MAXLEN),
                ])?;
            }
            let n = c.call(&[A::S("ZCARD"), A::S(key)])?.int()?;
            let enc = c
                .call(&[A::S("OBJECT"), A::S("ENCODING"), A::S(key)])?
                .text();
            Ok((
                c.memory_usage(key)? as f64,
                format!("{key}, {enc}, {n} entries"),
            ))
        }),
    }
}

fn rv_memory_group(_s: &Settings) -> Group {
    Group {
        id: "rv-memory",
        title: "RV memory: one key rv:<9 digits>, 30 entries, 9-digit members, times 1364218200 + i*60 s \
                (a listpack zset of this data is 440 B on Redis 7.0.15; the recipe's author measured 429 B)"
            .into(),
        reset_each: false,
        setup: None,
        scenarios: vec![],
        measures: vec![
            rv_mem_zadd("ZADD s", "ZADD, scores in seconds (the recipe as published)", "rv:100000001", 1),
            rv_mem_rvadd("RV.ADD AT s", "RV.ADD with AT = those seconds (the same numbers as the recipe)", "rv:100000002", 1),
            rv_mem_zadd("ZADD ms", "ZADD, scores in milliseconds", "rv:100000003", 1000),
            rv_mem_rvadd("RV.ADD AT ms", "RV.ADD with AT = seconds * 1000 (real use: RV keeps ms)", "rv:100000004", 1000),
        ],
        compares: vec![
            cmp("RV.ADD AT s", "ZADD s", Some(Goal::AtMost(1.0))),
            cmp("RV.ADD AT ms", "ZADD ms", Some(Goal::AtMost(1.0))),
            cmp("RV.ADD AT ms", "ZADD s", None),
        ],
    }
}

// ----------------------------------------------------------------------
// TL: capped timeline
// ----------------------------------------------------------------------

const TL_MAXLEN: u64 = 100;
const TL_SLACK: u64 = 20;

const TL_LUA: &str = "local n = redis.call('LPUSH', KEYS[1], ARGV[1])\n\
                      if n >= 120 then redis.call('LTRIM', KEYS[1], 0, 99) end\n\
                      return n";

fn tl_write_group(s: &Settings) -> Group {
    let keys = s.keys;
    Group {
        id: "tl-write",
        title: format!(
            "TL write: {keys} keys tl:<n> starting at {TL_MAXLEN} items, random 9-digit items, \
             MAXLEN {TL_MAXLEN} SLACK {TL_SLACK}; baseline: one plain LPUSH (no trim)"
        ),
        reset_each: true,
        setup: Some(Box::new(move |c: &mut Conn| {
            let mut g = Gen::new(2);
            c.load("TL prefill", keys, |k, out| {
                let mut args = vec![A::S("RPUSH"), A::K("tl:", k)];
                for _ in 0..TL_MAXLEN {
                    args.push(A::U(g.id9()));
                }
                enc(out, &args);
            })
        })),
        scenarios: vec![
            Scenario::command("LPUSH", "LPUSH key item", vec![], move |g, out| {
                enc(out, &[A::S("LPUSH"), A::K("tl:", g.below(keys)), A::U(g.id9())])
            }),
            Scenario::command(
                "TL.PUSH",
                format!("TL.PUSH key item MAXLEN {TL_MAXLEN} SLACK {TL_SLACK}"),
                vec!["tl.push"],
                move |g, out| {
                    let key = A::K("tl:", g.below(keys));
                    let (max, slack) = (A::U(TL_MAXLEN), A::U(TL_SLACK));
                    enc(out, &[A::S("TL.PUSH"), key, A::U(g.id9()), A::S("MAXLEN"), max, A::S("SLACK"), slack])
                },
            ),
            Scenario {
                id: "Lua",
                label: "Lua recipe via EVALSHA: LPUSH key item; LTRIM key 0 99 once the length reaches 120".into(),
                requires: vec![],
                clients: None,
                pipeline: None,
                setup: Box::new(move |c| {
                    let sha = c.script_load(TL_LUA)?;
                    Ok(op(move |g, out| {
                        enc(out, &[A::S("EVALSHA"), A::S(&sha), A::S("1"), A::K("tl:", g.below(keys)), A::U(g.id9())]);
                        1
                    }))
                }),
            },
            Scenario {
                id: "MULTI",
                label: "MULTI; LPUSH key item; LTRIM key 0 99; EXEC".into(),
                requires: vec![],
                clients: None,
                pipeline: None,
                setup: Box::new(move |_| {
                    Ok(op(move |g, out| {
                        let k = g.below(keys);
                        enc(out, &[A::S("MULTI")]);
                        enc(out, &[A::S("LPUSH"), A::K("tl:", k), A::U(g.id9())]);
                        enc(out, &[A::S("LTRIM"), A::K("tl:", k), A::S("0"), A::S("99")]);
                        enc(out, &[A::S("EXEC")]);
                        4
                    }))
                }),
            },
        ],
        measures: vec![],
        compares: vec![
            cmp("TL.PUSH", "LPUSH", Some(Goal::AtLeast(0.7))),
            cmp("TL.PUSH", "Lua", Some(Goal::AtLeast(2.0))),
            cmp("TL.PUSH", "MULTI", None),
        ],
    }
}

// ----------------------------------------------------------------------
// TOPN: top-N over a sliding window of hourly buckets
// ----------------------------------------------------------------------

const TOPN_KEYS: u64 = 10;
const TOPN_POOL: u64 = 10_000;
const TOPN_READ_MEMBERS: u64 = 50_000;
const TOPN_BUCKETS: u64 = 24;
const TOPN_LAT_MEMBERS: u64 = 100_000;

const TOPN_LUA: &str = "local n = redis.call('ZINCRBY', KEYS[1], 1, ARGV[1])\n\
                        redis.call('EXPIRE', KEYS[1], 90000)\n\
                        return n";

fn topn_member(i: u64) -> u64 {
    100_000_000 + i
}

/// Fill the hour bucket zsets `topn:<k>:<hour>` with every pool member once.
fn topn_prefill_zsets(c: &mut Conn, expire: bool) -> Result<(), String> {
    let hour = now_ms() / HOUR_MS;
    const PER: u64 = 1000;
    let per_key = TOPN_POOL.div_ceil(PER);
    c.load("TOPN zset prefill", TOPN_KEYS * per_key, |i, out| {
        let (k, chunk) = (i / per_key, i % per_key);
        let mut args = vec![A::S("ZADD"), A::K2("topn:", k, hour)];
        for m in chunk * PER..((chunk + 1) * PER).min(TOPN_POOL) {
            args.push(A::S("1"));
            args.push(A::U(topn_member(m)));
        }
        enc(out, &args);
    })?;
    if expire {
        c.load("TOPN zset expire", TOPN_KEYS, |k, out| {
            enc(
                out,
                &[A::S("EXPIRE"), A::K2("topn:", k, hour), A::S("90000")],
            )
        })?;
    }
    Ok(())
}

fn topn_write_group(_s: &Settings) -> Group {
    Group {
        id: "topn-write",
        title: format!(
            "TOPN write: {TOPN_KEYS} top-N keys, members from a pool of {TOPN_POOL} 9-digit ids \
             (each already counted once), hourly buckets; baseline: one plain ZINCRBY (no expire)"
        ),
        reset_each: true,
        setup: None,
        scenarios: vec![
            Scenario {
                id: "ZINCRBY",
                label: "ZINCRBY key:<hour> 1 member".into(),
                requires: vec![],
                clients: None,
                pipeline: None,
                setup: Box::new(|c| {
                    topn_prefill_zsets(c, false)?;
                    Ok(op(|g, out| {
                        let k = g.below(TOPN_KEYS);
                        let m = topn_member(g.below(TOPN_POOL));
                        enc(
                            out,
                            &[
                                A::S("ZINCRBY"),
                                A::K2("topn:", k, g.now_ms / HOUR_MS),
                                A::S("1"),
                                A::U(m),
                            ],
                        );
                        1
                    }))
                }),
            },
            Scenario {
                id: "TOPN.INCR",
                label: "TOPN.INCR key member".into(),
                requires: vec!["topn.incr"],
                clients: None,
                pipeline: None,
                setup: Box::new(|c| {
                    c.load("TOPN prefill", TOPN_KEYS * TOPN_POOL, |i, out| {
                        let (k, m) = (i / TOPN_POOL, i % TOPN_POOL);
                        enc(
                            out,
                            &[A::S("TOPN.INCR"), A::K("topn:", k), A::U(topn_member(m))],
                        );
                    })?;
                    Ok(op(|g, out| {
                        let k = g.below(TOPN_KEYS);
                        enc(
                            out,
                            &[
                                A::S("TOPN.INCR"),
                                A::K("topn:", k),
                                A::U(topn_member(g.below(TOPN_POOL))),
                            ],
                        );
                        1
                    }))
                }),
            },
            Scenario {
                id: "Lua",
                label:
                    "Lua recipe via EVALSHA: ZINCRBY key:<hour> 1 member; EXPIRE key:<hour> 90000"
                        .into(),
                requires: vec![],
                clients: None,
                pipeline: None,
                setup: Box::new(|c| {
                    topn_prefill_zsets(c, true)?;
                    let sha = c.script_load(TOPN_LUA)?;
                    Ok(op(move |g, out| {
                        let k = g.below(TOPN_KEYS);
                        let m = topn_member(g.below(TOPN_POOL));
                        enc(
                            out,
                            &[
                                A::S("EVALSHA"),
                                A::S(&sha),
                                A::S("1"),
                                A::K2("topn:", k, g.now_ms / HOUR_MS),
                                A::U(m),
                            ],
                        );
                        1
                    }))
                }),
            },
        ],
        measures: vec![],
        compares: vec![
            cmp("TOPN.INCR", "ZINCRBY", Some(Goal::AtLeast(0.5))),
            cmp("TOPN.INCR", "Lua", None),
        ],
    }
}

/// Count of member `m` in bucket `b` for the read group (same for both layouts).
fn topn_read_count(b: u64, m: u64) -> u64 {
    let mut g = Gen::new(b.wrapping_mul(1_000_003) ^ m);
    1 + g.below(20)
}

fn topn_read_group(_s: &Settings) -> Group {
    let hour = now_ms() / HOUR_MS;
    let first = hour + 1 - TOPN_BUCKETS;
    Group {
        id: "topn-read",
        title: format!(
            "TOPN read: top 10 over {TOPN_BUCKETS} hourly buckets x {TOPN_READ_MEMBERS} distinct members \
             (zsets topn:z:<hour> vs one TOPN key filled with TOPN.INCR ... BY c AT <hour>); \
             baseline: the recipe's read (union of the buckets, then the top 10)"
        ),
        reset_each: false,
        setup: Some(Box::new(move |c: &mut Conn| {
            const PER: u64 = 1000;
            let per_bucket = TOPN_READ_MEMBERS.div_ceil(PER);
            eprintln!("  filling {TOPN_BUCKETS} bucket zsets ...");
            c.load("TOPN read: zsets", TOPN_BUCKETS * per_bucket, |i, out| {
                let (b, chunk) = (i / per_bucket, i % per_bucket);
                let mut args = vec![A::S("ZADD"), A::K("topn:z:", first + b)];
                for m in chunk * PER..((chunk + 1) * PER).min(TOPN_READ_MEMBERS) {
                    args.push(A::U(topn_read_count(b, m)));
                    args.push(A::U(topn_member(m)));
                }
                enc(out, &args);
            })?;
            if c.has("topn.incr")? {
                eprintln!("  filling the TOPN key ({} TOPN.INCR) ...", TOPN_BUCKETS * TOPN_READ_MEMBERS);
                c.load("TOPN read: TOPN.INCR", TOPN_BUCKETS * TOPN_READ_MEMBERS, |i, out| {
                    let (b, m) = (i / TOPN_READ_MEMBERS, i % TOPN_READ_MEMBERS);
                    enc(
                        out,
                        &[
                            A::S("TOPN.INCR"),
                            A::S("topn:r"),
                            A::U(topn_member(m)),
                            A::S("BY"),
                            A::U(topn_read_count(b, m)),
                            A::S("AT"),
                            A::U((first + b) * HOUR_MS),
                        ],
                    );
                })?;
            }
            Ok(())
        })),
        scenarios: vec![
            Scenario {
                id: "ZUNIONSTORE",
                label: format!(
                    "ZUNIONSTORE tmp {TOPN_BUCKETS} <bucket keys>; ZREVRANGE tmp 0 9 WITHSCORES \
                     (1 client, no pipeline)"
                ),
                requires: vec![],
                clients: Some(1),
                pipeline: Some(1),
                setup: Box::new(move |_| {
                    Ok(op(move |_, out| {
                        let mut args = vec![A::S("ZUNIONSTORE"), A::S("topn:tmp"), A::U(TOPN_BUCKETS)];
                        for b in 0..TOPN_BUCKETS {
                            args.push(A::K("topn:z:", first + b));
                        }
                        enc(out, &args);
                        enc(out, &[A::S("ZREVRANGE"), A::S("topn:tmp"), A::S("0"), A::S("9"), A::S("WITHSCORES")]);
                        2
                    }))
                }),
            },
            // AT pins the window to the filled buckets even if the wall clock
            // crosses an hour during the bench.
            Scenario::command(
                "TOPN.TOP24",
                "TOPN.TOP24 key 10 AT <ms in the newest bucket>",
                vec!["topn.top24", "topn.incr"],
                move |_, out| {
                    let at = A::U((first + TOPN_BUCKETS - 1) * HOUR_MS + 1000);
                    enc(out, &[A::S("TOPN.TOP24"), A::S("topn:r"), A::S("10"), A::S("AT"), at])
                },
            ),
        ],
        measures: vec![
            Measure {
                id: "zsets",
                label: format!("{TOPN_BUCKETS} bucket zsets (sum of MEMORY USAGE)"),
                unit: Unit::Bytes,
                requires: vec![],
                run: Box::new(move |c| {
                    let mut total = 0;
                    for b in 0..TOPN_BUCKETS {
                        total += c.memory_usage(&format!("topn:z:{}", first + b))?;
                    }
                    Ok((total as f64, format!("{} entries", TOPN_BUCKETS * TOPN_READ_MEMBERS)))
                }),
            },
            Measure {
                id: "TOPN key",
                label: "the TOPN key (MEMORY USAGE)".into(),
                unit: Unit::Bytes,
                requires: vec!["topn.incr"],
                run: Box::new(|c| Ok((c.memory_usage("topn:r")? as f64, "topn:r".into()))),
            },
        ],
        compares: vec![
            cmp("TOPN.TOP24", "ZUNIONSTORE", Some(Goal::AtLeast(100.0))),
            cmp("TOPN key", "zsets", Some(Goal::AtMost(0.5))),
        ],
    }
}

const TOPN_LAT_TRIALS: usize = 3;

/// Max server-side time (SLOWLOG) of TOPN.* commands around a bucket boundary
/// where the expiring bucket and the newest one hold 100k members each; the
/// median over a few trials on fresh keys, since SLOWLOG times are wall-clock
/// and one preemption of the server by another process adds milliseconds.
fn topn_boundary_latency(c: &mut Conn) -> Result<(f64, String), String> {
    let mut maxes = Vec::new();
    let mut notes = Vec::new();
    for trial in 0..TOPN_LAT_TRIALS {
        let (max, note) = topn_boundary_trial(c, &format!("topn:lat:{trial}"))?;
        maxes.push(max as f64);
        notes.push(format!("trial {}: max {max} us, {note}", trial + 1));
    }
    let med = median(&mut maxes.clone()).unwrap_or(0.0);
    Ok((
        med,
        format!(
            "median of {TOPN_LAT_TRIALS} trials' max\n{}",
            notes
                .iter()
                .map(|n| format!("      {n}"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    ))
}

/// One trial: returns the slowest TOPN.* call's duration (us) and stats.
fn topn_boundary_trial(c: &mut Conn, key: &str) -> Result<(i64, String), String> {
    // The boundary crossed: the next one, so that every AT used keeps the key
    // alive (the oldest bucket's data, 24 h older, is not yet expired now).
    let t0 = (now_ms() / HOUR_MS + 1) * HOUR_MS;
    let oldest = t0 - TOPN_BUCKETS * HOUR_MS; // leaves the window at t0
    let newest = t0 - HOUR_MS;
    const MIDDLE: u64 = 1000; // members in each bucket in between
    eprintln!(
        "  filling {key}: 2 x {TOPN_LAT_MEMBERS} members + {} x {MIDDLE} ...",
        TOPN_BUCKETS - 2
    );
    c.load(
        "TOPN latency fill",
        2 * TOPN_LAT_MEMBERS + (TOPN_BUCKETS - 2) * MIDDLE,
        |i, out| {
            let (at, m) = if i < TOPN_LAT_MEMBERS {
                (oldest, i)
            } else if i < 2 * TOPN_LAT_MEMBERS {
                (newest, i - TOPN_LAT_MEMBERS + TOPN_LAT_MEMBERS / 2) // half shared with the oldest
            } else {
                let j = i - 2 * TOPN_LAT_MEMBERS;
                (oldest + (1 + j / MIDDLE) * HOUR_MS, j % MIDDLE)
            };
            enc(
                out,
                &[
                    A::S("TOPN.INCR"),
                    A::S(key),
                    A::U(topn_member(m)),
                    A::S("AT"),
                    A::U(at + 1000),
                ],
            );
        },
    )?;
    c.cmd("CONFIG SET slowlog-max-len 1000000")?;
    c.cmd("CONFIG SET slowlog-log-slower-than 0")?;
    c.cmd("SLOWLOG RESET")?;
    // Writes and reads from 1 s before the boundary to 5 s after it, 1 ms apart.
    let mut g = Gen::new(11);
    let (from, n) = (t0 - 1000, 6000u64);
    let res = c.load("TOPN boundary crossing", n, |i, out| {
        let at = from + i;
        if i % 10 == 5 {
            enc(
                out,
                &[
                    A::S("TOPN.TOP24"),
                    A::S(key),
                    A::S("10"),
                    A::S("AT"),
                    A::U(at),
                ],
            );
        } else {
            let m = topn_member(g.below(2 * TOPN_LAT_MEMBERS));
            enc(
                out,
                &[A::S("TOPN.INCR"), A::S(key), A::U(m), A::S("AT"), A::U(at)],
            );
        }
    });
    c.cmd("CONFIG SET slowlog-log-slower-than 10000")?;
    res?;
    let log = c.cmd("SLOWLOG GET 1000000")?;
    c.cmd("CONFIG SET slowlog-max-len 128")?;
    c.cmd("SLOWLOG RESET")?;
    // (duration us, command name, AT relative to the boundary in ms)
    let mut durs: Vec<(i64, String, i64)> = Vec::new();
    if let V::Arr(entries) = log {
        for e in entries {
            let V::Arr(f) = e else { continue };
            let (Some(d), Some(V::Arr(args))) = (f.get(2), f.get(3)) else {
                continue;
            };
            let args: Vec<String> = args.iter().map(|a| a.text()).collect();
            let name = args
                .first()
                .cloned()
                .unwrap_or_default()
                .to_ascii_uppercase();
            if !name.starts_with("TOPN.") {
                continue;
            }
            let at = args
                .iter()
                .position(|a| a.eq_ignore_ascii_case("AT"))
                .and_then(|i| args.get(i + 1))
                .and_then(|x| x.parse::<i64>().ok())
                .map_or(0, |at| at - t0 as i64);
            durs.push((d.int()?, name, at));
        }
    }
    if durs.len() < n as usize {
        return Err(format!(
            "SLOWLOG holds only {} of the {n} TOPN.* calls",
            durs.len()
        ));
    }
    durs.sort_by_key(|d| std::cmp::Reverse(d.0));
    let p = |q: f64| durs[((durs.len() - 1) as f64 * (1.0 - q)) as usize].0;
    let slowest: Vec<String> = durs
        .iter()
        .take(5)
        .map(|(d, name, at)| format!("{d} us {name} at {at:+} ms"))
        .collect();
    let before = durs.iter().find(|d| d.2 < 0).map_or(0, |d| d.0);
    let over_1ms = durs.iter().filter(|d| d.0 > 1000).count();
    c.call(&[A::S("UNLINK"), A::S(key)])?;
    Ok((
        durs[0].0,
        format!(
            "{} calls, p50 {} us, p99 {} us, {over_1ms} over 1 ms, max before the boundary {before} us; \
             slowest (AT relative to the boundary): {}",
            durs.len(),
            p(0.5),
            p(0.99),
            slowest.join(", ")
        ),
    ))
}

fn topn_latency_group(_s: &Settings) -> Group {
    Group {
        id: "topn-latency",
        title: format!(
            "TOPN latency: server-side time (SLOWLOG) of TOPN.INCR / TOPN.TOP24 from 1 s before to 5 s after \
             a bucket boundary; the expiring bucket and the newest one hold {TOPN_LAT_MEMBERS} members each"
        ),
        reset_each: false,
        setup: None,
        scenarios: vec![],
        measures: vec![Measure {
            id: "max latency",
            label: "slowest TOPN.* call across the boundary".into(),
            unit: Unit::Micros,
            requires: vec!["topn.incr", "topn.top24"],
            run: Box::new(topn_boundary_latency),
        }],
        compares: vec![Compare { a: "max latency", b: None, goal: Some(Goal::AtMost(1000.0)) }],
    }
}

// ----------------------------------------------------------------------
// ULIST: unique-value lists (the gem redis_counters' UniqueValuesLists)
// ----------------------------------------------------------------------

/// The gem's scope (its "cluster", start_month_date) and 30 daily partitions.
const UL_MONTH: &str = "2024-05-01";
const UL_DAYS: u64 = 30;
/// ulist-gem: user ids drawn from this many, half of them already stored
/// (spread over the 30 days) when a run starts: half the adds repeat.
const UL_GEM_USERS: u64 = 200_000;
const UL_GEM_CLIENTS: usize = 8;
/// ulist-memory: values stored per layout.
const UL_MEM_VALUES: u64 = 100_000;
const UL_MEM_TTL: u64 = 86_400;
/// ulist-reclaim: values that expire together, and the idle PING window.
const UL_RECLAIM_VALUES: u64 = 200_000;
const UL_IDLE_PING_MS: u64 = 3_000;
/// ulist-reclaim: the values' AT is the load's start plus this, so that the
/// load (about 1 s on a busy 2-CPU machine) is over before they expire and
/// the PINGs measure the reclaim alone.
const UL_RECLAIM_LEAD_MS: u64 = 2_000;

fn ul_day(d: u64) -> String {
    format!("2024-05-{:02}", d + 1)
}

/// The ulist-gem user id number `n` (0..UL_GEM_USERS).
fn ul_user(n: u64) -> u64 {
    100_000_000 + n
}

/// Create `keys` ULIST keys `<prefix><n>` with the given declaration.
fn ul_create_keys(
    c: &mut Conn,
    prefix: &'static str,
    keys: u64,
    decl: &'static [&'static str],
) -> Result<(), String> {
    c.load("ULIST.CREATE", keys, |k, out| {
        let mut args = vec![A::S("ULIST.CREATE"), A::K(prefix, k)];
        args.extend(decl.iter().map(|d| A::S(d)));
        enc(out, &args);
    })
}

fn ulist_write_group(s: &Settings) -> Group {
    let keys = s.keys;
    let days: Arc<Vec<String>> = Arc::new((0..UL_DAYS).map(ul_day).collect());
    Group {
        id: "ulist-write",
        title: format!(
            "ULIST write: {keys} keys, random 9-digit user ids (almost all new); baseline: plain SADD \
             of the same values into one set per key; ULIST keys created empty in setup"
        ),
        reset_each: true,
        setup: None,
        scenarios: vec![
            Scenario::command("SADD", "SADD key <id>", vec![], move |g, out| {
                enc(out, &[A::S("SADD"), A::K("uw:", g.below(keys)), A::U(g.id9())])
            }),
            Scenario {
                id: "ULIST.ADD",
                label: "ULIST.ADD key user <id> (created with VALUE user)".into(),
                requires: vec!["ulist.add", "ulist.create"],
                clients: None,
                pipeline: None,
                setup: Box::new(move |c| {
                    ul_create_keys(c, "uw:", keys, &["VALUE", "user"])?;
                    Ok(op(move |g, out| {
                        let key = A::K("uw:", g.below(keys));
                        enc(out, &[A::S("ULIST.ADD"), key, A::S("user"), A::U(g.id9())]);
                        1
                    }))
                }),
            },
            // Diagnostic: with AT the call is deterministic as sent and is
            // replicated verbatim; without, the module builds the effect
            // (the call plus AT) for RM_Replicate, which looks the command up
            // by name each time.
            Scenario {
                id: "ULIST AT",
                label: "ULIST.ADD key AT <now ms> user <id> (diagnostic: replicated verbatim)".into(),
                requires: vec!["ulist.add", "ulist.create"],
                clients: None,
                pipeline: None,
                setup: Box::new(move |c| {
                    ul_create_keys(c, "uw:", keys, &["VALUE", "user"])?;
                    Ok(op(move |g, out| {
                        let key = A::K("uw:", g.below(keys));
                        let at = A::U(g.now_ms);
                        enc(out, &[A::S("ULIST.ADD"), key, A::S("AT"), at, A::S("user"), A::U(g.id9())]);
                        1
                    }))
                }),
            },
            Scenario {
                id: "ULIST scoped",
                label: format!(
                    "ULIST.ADD key month {UL_MONTH} day <1 of {UL_DAYS}> user <id> \
                     (created with VALUE user SCOPE month PARTITION day)"
                ),
                requires: vec!["ulist.add", "ulist.create"],
                clients: None,
                pipeline: None,
                setup: Box::new(move |c| {
                    ul_create_keys(
                        c,
                        "uw:",
                        keys,
                        &["VALUE", "user", "SCOPE", "month", "PARTITION", "day"],
                    )?;
                    let days = days.clone();
                    Ok(op(move |g, out| {
                        let key = A::K("uw:", g.below(keys));
                        let day = &days[g.below(UL_DAYS) as usize];
                        enc(
                            out,
                            &[
                                A::S("ULIST.ADD"),
                                key,
                                A::S("month"),
                                A::S(UL_MONTH),
                                A::S("day"),
                                A::S(day),
                                A::S("user"),
                                A::U(g.id9()),
                            ],
                        );
                        1
                    }))
                }),
            },
        ],
        measures: vec![],
        compares: vec![
            cmp("ULIST.ADD", "SADD", Some(Goal::AtLeast(0.6))),
            cmp("ULIST AT", "SADD", None),
            cmp("ULIST scoped", "SADD", None),
            cmp("ULIST AT", "ULIST.ADD", None),
            cmp("ULIST scoped", "ULIST.ADD", None),
        ],
    }
}

/// The gem's UniqueValuesLists::Blocking#add (process_value), as the gem
/// does it over redis-rb, one request/reply at a time:
/// WATCH `<name>:<scope>:partitions`; LRANGE it; WATCH each partition set
/// `<name>:<scope>:<partition>` (one call each); SISMEMBER the value in each,
/// newest first, until found; found -> UNWATCH, not new; else
/// `MULTI; SADD <today's set> value; [RPUSH list today]; EXEC` (redis-rb's
/// `multi` block: one round trip), retried from the top while EXEC is nil.
/// `also`: commands the caller's block adds inside the MULTI (the gem's
/// `add(params) { ... }`, e.g. UniqueHashCounter's HINCRBYFLOAT).
/// Returns (new, attempts).
fn gem_blocking_add(
    c: &mut Conn,
    name: &str,
    scope: &str,
    partition: &str,
    value: &[u8],
    also: &[&[A]],
) -> Result<(bool, u64), String> {
    let list = format!("{name}:{scope}:partitions");
    let today = format!("{name}:{scope}:{partition}");
    let mut attempts = 0;
    loop {
        attempts += 1;
        c.call(&[A::S("WATCH"), A::S(&list)])?;
        let parts: Vec<Vec<u8>> =
            match c.call(&[A::S("LRANGE"), A::S(&list), A::S("0"), A::S("-1")])? {
                V::Arr(items) => items
                    .into_iter()
                    .filter_map(|v| match v {
                        V::Str(p) if !p.is_empty() => Some(p),
                        _ => None,
                    })
                    .collect(),
                v => return Err(format!("LRANGE {list}: {}", v.text())),
            };
        let keys: Vec<Vec<u8>> = parts
            .iter()
            .map(|p| [name.as_bytes(), b":", scope.as_bytes(), b":", p].concat())
            .collect();
        for k in &keys {
            c.call(&[A::S("WATCH"), A::B(k)])?;
        }
        let mut exists = false;
        for k in keys.iter().rev() {
            if c.call(&[A::S("SISMEMBER"), A::B(k), A::B(value)])?.int()? == 1 {
                exists = true;
                break;
            }
        }
        if exists {
            c.call(&[A::S("UNWATCH")])?;
            return Ok((false, attempts));
        }
        let new_partition = !parts.iter().any(|p| p == partition.as_bytes());
        let replies = c.batch(3 + new_partition as usize + also.len(), |out| {
            enc(out, &[A::S("MULTI")]);
            enc(out, &[A::S("SADD"), A::S(&today), A::B(value)]);
            if new_partition {
                enc(out, &[A::S("RPUSH"), A::S(&list), A::S(partition)]);
            }
            for cmd in also {
                enc(out, cmd);
            }
            enc(out, &[A::S("EXEC")]);
        })?;
        if !matches!(replies.last(), Some(V::Nil)) {
            return Ok((true, attempts));
        }
    }
}

/// ulist-gem prefill, the gem's layout: users with an even number, each in
/// day (n / 2) % 30, and the 30 days in the partitions list.
fn ul_gem_prefill_sets(c: &mut Conn) -> Result<(), String> {
    let mut args = vec![A::S("RPUSH"), A::S("gem:2024-05-01:partitions")];
    let days: Vec<String> = (0..UL_DAYS).map(ul_day).collect();
    args.extend(days.iter().map(|d| A::S(d)));
    c.call(&args)?;
    let per_day = UL_GEM_USERS / 2 / UL_DAYS + 1;
    const PER: u64 = 1000;
    let chunks = per_day.div_ceil(PER);
    c.load("ULIST gem: sets", UL_DAYS * chunks, |i, out| {
        let (d, chunk) = (i / chunks, i % chunks);
        let key = format!("gem:{UL_MONTH}:{}", ul_day(d));
        let mut args = vec![A::S("SADD"), A::S(&key)];
        let mut any = false;
        for j in chunk * PER..((chunk + 1) * PER).min(per_day) {
            let n = (j * UL_DAYS + d) * 2;
            if n < UL_GEM_USERS {
                args.push(A::U(ul_user(n)));
                any = true;
            }
        }
        if !any {
            args = vec![A::S("PING")];
        }
        enc(out, &args);
    })
}

/// ulist-gem prefill, ULIST: the same values in the same days.
fn ul_gem_prefill_ulist(c: &mut Conn) -> Result<(), String> {
    c.cmd("ULIST.CREATE gem VALUE user SCOPE month PARTITION day")?;
    c.load("ULIST gem: ULIST.ADD", UL_GEM_USERS / 2, |j, out| {
        let n = j * 2;
        enc(
            out,
            &[
                A::S("ULIST.ADD"),
                A::S("gem"),
                A::S("month"),
                A::S(UL_MONTH),
                A::S("day"),
                A::S(&ul_day(j % UL_DAYS)),
                A::S("user"),
                A::U(ul_user(n)),
            ],
        );
    })
}

fn ul_gem_ulist_scenario(id: &'static str, pipeline: Option<usize>, what: &str) -> Scenario {
    let days: Arc<Vec<String>> = Arc::new((0..UL_DAYS).map(ul_day).collect());
    Scenario {
        id,
        label: format!(
            "ULIST.ADD gem month {UL_MONTH} day <d> user <u> ({UL_GEM_CLIENTS} clients, {what})"
        ),
        requires: vec!["ulist.add", "ulist.create"],
        clients: Some(UL_GEM_CLIENTS),
        pipeline,
        setup: Box::new(move |c| {
            ul_gem_prefill_ulist(c)?;
            let days = days.clone();
            Ok(op(move |g, out| {
                let day = &days[g.below(UL_DAYS) as usize];
                let user = ul_user(g.below(UL_GEM_USERS));
                enc(
                    out,
                    &[
                        A::S("ULIST.ADD"),
                        A::S("gem"),
                        A::S("month"),
                        A::S(UL_MONTH),
                        A::S("day"),
                        A::S(day),
                        A::S("user"),
                        A::U(user),
                    ],
                );
                1
            }))
        }),
    }
}

fn ulist_gem_group(s: &Settings) -> Group {
    Group {
        id: "ulist-gem",
        title: format!(
            "ULIST vs the gem's Blocking list: {UL_GEM_CLIENTS} concurrent clients add user ids drawn \
             from {UL_GEM_USERS} (half already stored at the start) into {UL_DAYS} daily partitions \
             of one month's scope; one op = one add (the gem's retries included)"
        ),
        reset_each: true,
        setup: None,
        scenarios: vec![
            Scenario {
                id: "gem Blocking",
                label: format!(
                    "gem Blocking add ({UL_GEM_CLIENTS} clients, request/reply): WATCH list; LRANGE; \
                     WATCH each of {UL_DAYS} sets; SISMEMBER each until found; \
                     MULTI SADD [RPUSH] EXEC, retried while EXEC is nil"
                ),
                requires: vec![],
                clients: Some(UL_GEM_CLIENTS),
                pipeline: Some(1),
                setup: Box::new(|c| {
                    ul_gem_prefill_sets(c)?;
                    let days: Vec<String> = (0..UL_DAYS).map(ul_day).collect();
                    Ok(dialog(move |g, c| {
                        let day = &days[g.below(UL_DAYS) as usize];
                        let mut t = [0u8; 20];
                        let user = fmt_u(ul_user(g.below(UL_GEM_USERS)), &mut t);
                        Ok(gem_blocking_add(c, "gem", UL_MONTH, day, user, &[])?.1)
                    }))
                }),
            },
            ul_gem_ulist_scenario("ULIST p1", Some(1), "request/reply"),
            ul_gem_ulist_scenario(
                "ULIST pipe",
                None,
                &format!("pipeline {} (reference)", s.pipeline),
            ),
        ],
        measures: vec![],
        compares: vec![
            cmp("ULIST p1", "gem Blocking", Some(Goal::AtLeast(10.0))),
            cmp("ULIST pipe", "gem Blocking", None),
        ],
    }
}

/// ulist-memory: the id of value `i`, as an integer or as `u<integer>`:
/// distinct 9-digit numbers in no particular order (users arrive in any
/// order; inserted in ascending order, the module's B-tree nodes end up
/// about half full: 88.8 B/value allocated instead of 72.4 measured here).
fn ul_mem_value(i: u64, strings: bool) -> String {
    let n = 100_000_000 + i * 2_654_435_761 % 900_000_000; // a permutation
    if strings {
        format!("u{n}")
    } else {
        n.to_string()
    }
}

fn used_memory(c: &mut Conn) -> Result<i64, String> {
    c.info_field("memory", "used_memory")?
        .parse()
        .map_err(|e| format!("used_memory: {e}"))
}

/// `used_memory` once it stops falling: a module frees a big value on a
/// thread of its own after DEL returns (at most 5 s of 20 ms polls).
fn settled_used_memory(c: &mut Conn) -> Result<i64, String> {
    let mut last = used_memory(c)?;
    for _ in 0..250 {
        std::thread::sleep(Duration::from_millis(20));
        let now = used_memory(c)?;
        if now >= last {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

/// Per layout id, the bytes per value the allocator holds for it.
type AllocBytes = std::rc::Rc<std::cell::RefCell<HashMap<&'static str, f64>>>;

/// Fills one layout with `fill` (`n` values), then reports MEMORY USAGE summed
/// over `keys` per value (the note: totals, the allocator's view, encodings),
/// and deletes the keys. The allocator's view: `used_memory` with the data
/// minus `used_memory` once its keys are deleted and freed,
/// so the loading connection's buffers count on neither side.
fn mem_measure(
    c: &mut Conn,
    id: &'static str,
    alloc: &AllocBytes,
    keys: &[String],
    n: u64,
    fill: impl FnOnce(&mut Conn) -> Result<(), String>,
) -> Result<(f64, String), String> {
    fill(c)?;
    let used1 = used_memory(c)?;
    let mut total = 0;
    for k in keys {
        total += c.memory_usage(k)?;
    }
    let enc_of = |c: &mut Conn, k: &str| -> Result<String, String> {
        Ok(c.call(&[A::S("OBJECT"), A::S("ENCODING"), A::S(k)])?.text())
    };
    let first_enc = enc_of(c, &keys[0])?;
    let encodings = if keys.len() > 1 {
        let last = keys.last().unwrap();
        format!(
            "{} keys, {} of the partitions like {}, {} of {last}",
            keys.len(),
            first_enc,
            keys[0],
            enc_of(c, last)?
        )
    } else {
        format!("1 key {}", keys[0])
    };
    let mut del = vec![A::S("DEL")];
    del.extend(keys.iter().map(|k| A::S(k)));
    c.call(&del)?;
    let used0 = settled_used_memory(c)?;
    let n = n as f64;
    alloc.borrow_mut().insert(id, (used1 - used0) as f64 / n);
    let note = format!(
        "MEMORY USAGE total {} B; allocated {} B = {:.1} B/value; {encodings}",
        thousands(total as f64),
        thousands((used1 - used0) as f64),
        (used1 - used0) as f64 / n
    );
    Ok((total as f64 / n, note))
}

/// ULIST layout: one key, VALUE user SCOPE month PARTITION day, value i in
/// day i % 30; `ttl`: per-value EXPIRE.
fn ul_mem_ulist(id: &'static str, strings: bool, ttl: Option<u64>, alloc: &AllocBytes) -> Measure {
    let alloc = alloc.clone();
    let label = format!(
        "ULIST, {} ids, {}: one key, {UL_MEM_VALUES} values in {UL_DAYS} day partitions",
        if strings { "u<n>" } else { "integer" },
        match ttl {
            Some(t) => format!("EXPIRE {t} per value"),
            None => "no expiry".into(),
        }
    );
    Measure {
        id,
        label,
        unit: Unit::BytesPerValue,
        requires: vec!["ulist.add", "ulist.create"],
        run: Box::new(move |c| {
            let key = format!("ulm:{id}");
            let keys = [key.clone()];
            let days: Vec<String> = (0..UL_DAYS).map(ul_day).collect();
            mem_measure(c, id, &alloc, &keys, UL_MEM_VALUES, |c| {
                c.call(&[
                    A::S("ULIST.CREATE"),
                    A::S(&key),
                    A::S("VALUE"),
                    A::S("user"),
                    A::S("SCOPE"),
                    A::S("month"),
                    A::S("PARTITION"),
                    A::S("day"),
                ])?;
                c.load("ULIST memory fill", UL_MEM_VALUES, |i, out| {
                    let v = ul_mem_value(i, strings);
                    let day = &days[(i % UL_DAYS) as usize];
                    let mut args = vec![A::S("ULIST.ADD"), A::S(&key)];
                    if let Some(t) = ttl {
                        args.extend([A::S("EXPIRE"), A::U(t)]);
                    }
                    args.extend([
                        A::S("month"),
                        A::S(UL_MONTH),
                        A::S("day"),
                        A::S(day),
                        A::S("user"),
                        A::S(&v),
                    ]);
                    enc(out, &args);
                })
            })
        }),
    }
}

/// The gem's layouts: per day partition a set (Blocking) or a zset scored by
/// the expiry in seconds (Expirable), plus the scope's partitions list.
fn ul_mem_gem(id: &'static str, strings: bool, expirable: bool, alloc: &AllocBytes) -> Measure {
    let alloc = alloc.clone();
    let label = format!(
        "gem {}, {} ids: {UL_DAYS} {} <name>:<month>:<day> + list <name>:<month>:partitions",
        if expirable { "Expirable" } else { "Blocking" },
        if strings { "u<n>" } else { "integer" },
        if expirable {
            "zsets (score = expiry s)"
        } else {
            "sets"
        },
    );
    Measure {
        id,
        label,
        unit: Unit::BytesPerValue,
        requires: vec![],
        run: Box::new(move |c| {
            let name = format!("gm{}{}", strings as u8, expirable as u8);
            let list = format!("{name}:{UL_MONTH}:partitions");
            let days: Vec<String> = (0..UL_DAYS).map(ul_day).collect();
            let sets: Vec<String> = days
                .iter()
                .map(|d| format!("{name}:{UL_MONTH}:{d}"))
                .collect();
            let mut keys = sets.clone();
            keys.push(list.clone());
            let expiry = now_ms() / 1000 + UL_MEM_TTL;
            mem_measure(c, id, &alloc, &keys, UL_MEM_VALUES, |c| {
                let mut args = vec![A::S("RPUSH"), A::S(&list)];
                args.extend(days.iter().map(|d| A::S(d)));
                c.call(&args)?;
                // The gem adds one value per call; the stored data is the same.
                c.load("gem memory fill", UL_MEM_VALUES, |i, out| {
                    let v = ul_mem_value(i, strings);
                    let set = A::S(&sets[(i % UL_DAYS) as usize]);
                    if expirable {
                        enc(out, &[A::S("ZADD"), set, A::U(expiry), A::S(&v)]);
                    } else {
                        enc(out, &[A::S("SADD"), set, A::S(&v)]);
                    }
                })
            })
        }),
    }
}

/// The allocator's bytes per value of layout `of` (measured by its measure,
/// which runs before).
fn mem_alloc(id: &'static str, of: &'static str, alloc: &AllocBytes) -> Measure {
    let alloc = alloc.clone();
    Measure {
        id,
        label: format!("{of}: allocated (used_memory with minus without the keys)"),
        unit: Unit::BytesPerValue,
        requires: if of.starts_with("ULIST") {
            vec!["ulist.add", "ulist.create"]
        } else {
            vec![]
        },
        run: Box::new(move |_| {
            let v = alloc.borrow().get(of).copied();
            v.map(|v| (v, String::new()))
                .ok_or_else(|| format!("{of} was not measured"))
        }),
    }
}

fn ulist_memory_group(_s: &Settings) -> Group {
    let a: AllocBytes = Default::default();
    Group {
        id: "ulist-memory",
        title: format!(
            "ULIST memory per stored value: {UL_MEM_VALUES} distinct users in {UL_DAYS} daily partitions \
             of one month scope, MEMORY USAGE ... SAMPLES 0 summed over each layout's keys"
        ),
        reset_each: false,
        setup: None,
        scenarios: vec![],
        measures: vec![
            ul_mem_ulist("ULIST int", false, None, &a),
            ul_mem_gem("Blocking int", false, false, &a),
            ul_mem_ulist("ULIST str", true, None, &a),
            ul_mem_gem("Blocking str", true, false, &a),
            ul_mem_ulist("ULIST exp int", false, Some(UL_MEM_TTL), &a),
            ul_mem_gem("Expirable int", false, true, &a),
            ul_mem_ulist("ULIST exp str", true, Some(UL_MEM_TTL), &a),
            ul_mem_gem("Expirable str", true, true, &a),
            mem_alloc("alloc ULIST int", "ULIST int", &a),
            mem_alloc("alloc Block int", "Blocking int", &a),
            mem_alloc("alloc ULIST str", "ULIST str", &a),
            mem_alloc("alloc Block str", "Blocking str", &a),
            mem_alloc("alloc ULIST exp i", "ULIST exp int", &a),
            mem_alloc("alloc Expir int", "Expirable int", &a),
            mem_alloc("alloc ULIST exp s", "ULIST exp str", &a),
            mem_alloc("alloc Expir str", "Expirable str", &a),
        ],
        // The goal is on MEMORY USAGE, which for a module key is the module's
        // own estimate (its mem_usage callback); the same goal is also
        // checked on what the allocator really holds.
        compares: vec![
            cmp("ULIST int", "Blocking int", Some(Goal::AtMost(1.0))),
            cmp("ULIST str", "Blocking str", Some(Goal::AtMost(1.0))),
            cmp("ULIST exp int", "Expirable int", Some(Goal::AtMost(1.0))),
            cmp("ULIST exp str", "Expirable str", Some(Goal::AtMost(1.0))),
            cmp("alloc ULIST int", "alloc Block int", Some(Goal::AtMost(1.0))),
            cmp("alloc ULIST str", "alloc Block str", Some(Goal::AtMost(1.0))),
            cmp("alloc ULIST exp i", "alloc Expir int", Some(Goal::AtMost(1.0))),
            cmp("alloc ULIST exp s", "alloc Expir str", Some(Goal::AtMost(1.0))),
        ],
    }
}

/// PING round trips of one client, about one per millisecond.
struct PingStats {
    /// (sent at, round trip)
    samples: Vec<(Instant, Duration)>,
}

impl PingStats {
    fn within(&self, from: Instant, to: Instant) -> PingStats {
        PingStats {
            samples: self
                .samples
                .iter()
                .filter(|(t, _)| *t >= from && *t <= to)
                .copied()
                .collect(),
        }
    }
    fn sorted_us(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .samples
            .iter()
            .map(|(_, d)| d.as_secs_f64() * 1e6)
            .collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    }
    fn max_us(&self) -> f64 {
        self.sorted_us().last().copied().unwrap_or(0.0)
    }
    /// The max of each consecutive window `len` long: a max over fewer
    /// samples is smaller, so a short run compares with these.
    fn window_maxes_us(&self, len: Duration) -> Vec<f64> {
        let Some(&(t0, _)) = self.samples.first() else {
            return vec![];
        };
        let len = len.max(Duration::from_millis(1));
        let mut maxes: Vec<f64> = Vec::new();
        let mut current: Option<(u32, f64)> = None;
        for (t, d) in &self.samples {
            let w = ((*t - t0).as_secs_f64() / len.as_secs_f64()) as u32;
            let us = d.as_secs_f64() * 1e6;
            current = match current {
                Some((cw, m)) if cw == w => Some((cw, m.max(us))),
                Some((_, m)) => {
                    maxes.push(m);
                    Some((w, us))
                }
                None => Some((w, us)),
            };
        }
        // the last window only if complete
        if let (Some((w, m)), Some(&(t, _))) = (current, self.samples.last()) {
            if (t - t0).as_secs_f64() >= (w + 1) as f64 * len.as_secs_f64() * 0.9 {
                maxes.push(m);
            }
        }
        maxes
    }
    fn text(&self) -> String {
        let v = self.sorted_us();
        if v.is_empty() {
            return "no samples".into();
        }
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        format!(
            "max {} us, p99 {} us, p50 {} us ({} PINGs)",
            thousands(q(1.0)),
            thousands(q(0.99)),
            thousands(q(0.5)),
            v.len()
        )
    }
}

/// PING, read the reply, sleep 1 ms, until `stop` (or 10 minutes).
fn ping_loop(port: u16, stop: &AtomicBool) -> Result<PingStats, String> {
    let mut c = Conn::open(port).map_err(|e| format!("PING client: connect: {e}"))?;
    let mut req = Vec::new();
    enc(&mut req, &[A::S("PING")]);
    let mut samples = Vec::new();
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) && !stopped() && start.elapsed() < Duration::from_secs(600)
    {
        let t = Instant::now();
        c.w.write_all(&req)
            .map_err(|e| format!("PING: write: {e}"))?;
        match c.r.value().map_err(|e| format!("PING: read: {e}"))? {
            V::Str(p) if p == b"PONG" => {}
            v => return Err(format!("PING: {}", v.text())),
        }
        samples.push((t, t.elapsed()));
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(PingStats { samples })
}

fn expired_values(c: &mut Conn) -> Result<i64, String> {
    c.info_field("recipes", "recipes_ulist_expired_values")?
        .parse()
        .map_err(|e| format!("recipes_ulist_expired_values: {e}"))
}

struct ReclaimOut {
    idle: PingStats,
    during: PingStats,
    /// From the values' expiry to the last one reclaimed.
    reclaim: Duration,
    /// From the expiry to the first one reclaimed.
    first: Option<Duration>,
    load: Duration,
    /// Load end minus expiry, ms (> 0: the load overran the expiry).
    overrun_ms: i64,
    reclaimed_at_load_end: i64,
    mem_empty: i64,
    mem_before: i64,
    mem_after: i64,
    used_grew: i64,
    used_after: i64,
    data_after: usize,
}

/// The ulist-reclaim experiment (once; the group's measures report parts).
fn ul_reclaim_run(c: &mut Conn) -> Result<ReclaimOut, String> {
    let port =
        c.w.peer_addr()
            .map_err(|e| format!("peer_addr: {e}"))?
            .port();
    let key = "ulr";
    c.call(&[A::S("ULIST.CREATE"), A::S(key), A::S("VALUE"), A::S("user")])?;
    let mem_empty = c.memory_usage(key)?;
    let expired0 = expired_values(c)?;

    // The same PING loop on the idle server, just before.
    let stop = AtomicBool::new(false);
    let idle = std::thread::scope(|sc| {
        let h = sc.spawn(|| ping_loop(port, &stop));
        std::thread::sleep(Duration::from_millis(UL_IDLE_PING_MS));
        stop.store(true, Ordering::Relaxed);
        h.join()
            .unwrap_or_else(|_| Err("PING thread panicked".into()))
    })?;

    // 200,000 values added at t0 with EXPIRE 1: all expire at t0 + 1 s.
    let used0 = used_memory(c)?;
    let t0 = now_ms() + UL_RECLAIM_LEAD_MS;
    let started = Instant::now();
    c.load("ULIST reclaim fill", UL_RECLAIM_VALUES, |i, out| {
        enc(
            out,
            &[
                A::S("ULIST.ADD"),
                A::S(key),
                A::S("EXPIRE"),
                A::S("1"),
                A::S("AT"),
                A::U(t0),
                A::S("user"),
                A::K("u", i),
            ],
        )
    })?;
    let load = started.elapsed();
    let expiry = started + Duration::from_millis(UL_RECLAIM_LEAD_MS + 1000);
    let reclaimed_at_load_end = expired_values(c)? - expired0;
    let mem_before = c.memory_usage(key)?;
    let used_grew = used_memory(c)? - used0;

    // PINGs from now on; the control connection polls the counter only
    // (MEMORY USAGE of the list walks its values: not during the reclaim).
    let stop = AtomicBool::new(false);
    let (all, first, done) = std::thread::scope(|sc| -> Result<_, String> {
        let h = sc.spawn(|| ping_loop(port, &stop));
        let mut first = None;
        let deadline = Instant::now() + Duration::from_secs(300);
        let res = loop {
            let n = expired_values(c)? - expired0;
            let now = Instant::now();
            if n > 0 && first.is_none() {
                first = Some(now);
            }
            if n >= UL_RECLAIM_VALUES as i64 {
                break Ok(now);
            }
            if now > deadline || stopped() {
                break Err(format!(
                    "reclaim incomplete after 300 s: {n} of {UL_RECLAIM_VALUES}"
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        stop.store(true, Ordering::Relaxed);
        let pings = h
            .join()
            .unwrap_or_else(|_| Err("PING thread panicked".into()))?;
        Ok((pings, first, res?))
    })?;
    let during = all.within(expiry.max(started + load), done);
    let mem_after = c.memory_usage(key)?;
    let data_after = match c.call(&[A::S("ULIST.DATA"), A::S(key)])? {
        V::Arr(rows) => rows.len(),
        v => return Err(format!("ULIST.DATA: {}", v.text())),
    };
    let used_after = used_memory(c)? - used0;
    c.call(&[A::S("DEL"), A::S(key)])?;
    Ok(ReclaimOut {
        idle,
        during,
        reclaim: done.saturating_duration_since(expiry),
        first: first.map(|f| f.saturating_duration_since(expiry)),
        load,
        overrun_ms: load.as_millis() as i64 - (UL_RECLAIM_LEAD_MS + 1000) as i64,
        reclaimed_at_load_end,
        mem_empty,
        mem_before,
        mem_after,
        used_grew,
        used_after,
        data_after,
    })
}

type Shared<T> = std::rc::Rc<std::cell::RefCell<Option<Result<T, String>>>>;

/// A measure reporting `f` of the shared experiment's result (run by the first).
fn ul_reclaim_measure(
    id: &'static str,
    label: &str,
    unit: Unit,
    shared: &Shared<ReclaimOut>,
    run_it: bool,
    f: impl Fn(&ReclaimOut) -> (f64, String) + 'static,
) -> Measure {
    let shared = shared.clone();
    Measure {
        id,
        label: label.into(),
        unit,
        requires: vec!["ulist.add", "ulist.create", "ulist.data"],
        run: Box::new(move |c| {
            if run_it {
                *shared.borrow_mut() = Some(ul_reclaim_run(c));
            }
            match &*shared.borrow() {
                Some(Ok(r)) => Ok(f(r)),
                Some(Err(e)) => Err(e.clone()),
                None => Err("the reclaim experiment did not run".into()),
            }
        }),
    }
}

fn ulist_reclaim_group(_s: &Settings) -> Group {
    let shared: Shared<ReclaimOut> = Default::default();
    let n = UL_RECLAIM_VALUES;
    Group {
        id: "ulist-reclaim",
        title: format!(
            "ULIST reclaim: {n} values added with EXPIRE 1 AT <load start + {UL_RECLAIM_LEAD_MS} ms> into one list nobody touches \
             afterwards; while the master reclaims them in the background, another client PINGs about \
             every ms (request/reply); the same PING loop ran {UL_IDLE_PING_MS} ms on the idle server just before"
        ),
        reset_each: false,
        setup: None,
        scenarios: vec![],
        measures: vec![
            ul_reclaim_measure(
                "PING max excess",
                "PING max during reclaim minus idle PING max",
                Unit::Micros,
                &shared,
                true,
                |r| {
                    let mut w = r.idle.window_maxes_us(r.reclaim);
                    let windows = match (median(&mut w), w.last()) {
                        (Some(m), Some(&worst)) => format!(
                            "; idle max per {} ms window (as long as the reclaim): median {} us, \
                             worst {} us over {} windows",
                            r.reclaim.as_millis(),
                            thousands(m),
                            thousands(worst),
                            w.len()
                        ),
                        _ => String::new(),
                    };
                    (
                        r.during.max_us() - r.idle.max_us(),
                        format!(
                            "during reclaim: {}; idle: {}{windows}",
                            r.during.text(),
                            r.idle.text()
                        ),
                    )
                },
            ),
            ul_reclaim_measure(
                "reclaim time",
                &format!("from the values' expiry until INFO recipes counts {n} expired values"),
                Unit::Millis,
                &shared,
                false,
                |r| {
                    let overrun = if r.overrun_ms > 0 {
                        format!(
                            "; the load overran the expiry by {} ms ({} values already reclaimed at its end)",
                            r.overrun_ms, r.reclaimed_at_load_end
                        )
                    } else {
                        String::new()
                    };
                    (
                        r.reclaim.as_secs_f64() * 1000.0,
                        format!(
                            "first value reclaimed {} after the expiry; {:.0} values/s; the load took {} ms{overrun}; \
                             ULIST.DATA after: {} rows",
                            r.first
                                .map(|f| format!("{} ms", f.as_millis()))
                                .unwrap_or_else(|| "?".into()),
                            UL_RECLAIM_VALUES as f64 / r.reclaim.as_secs_f64().max(1e-3),
                            r.load.as_millis(),
                            r.data_after
                        ),
                    )
                },
            ),
            ul_reclaim_measure(
                "memory before",
                &format!("MEMORY USAGE of the list holding the {n} values"),
                Unit::Bytes,
                &shared,
                false,
                |r| {
                    (
                        r.mem_before as f64,
                        format!("used_memory grew {} B with the load", thousands(r.used_grew as f64)),
                    )
                },
            ),
            ul_reclaim_measure(
                "memory after",
                "MEMORY USAGE of the list once all are reclaimed",
                Unit::Bytes,
                &shared,
                false,
                |r| {
                    (
                        r.mem_after as f64,
                        format!(
                            "used_memory vs before the load: {:+} B",
                            r.used_after
                        ),
                    )
                },
            ),
            ul_reclaim_measure(
                "memory empty",
                "MEMORY USAGE of the list right after ULIST.CREATE",
                Unit::Bytes,
                &shared,
                false,
                |r| (r.mem_empty as f64, String::new()),
            ),
        ],
        compares: vec![
            Compare {
                a: "PING max excess",
                b: None,
                goal: Some(Goal::AtMost(2000.0)),
            },
            cmp("memory after", "memory empty", None),
        ],
    }
}

// ----------------------------------------------------------------------
// TOPN: reads of an idle key, and of the LAST k buckets, on 24 buckets x
// 50k members whose popularity reverses half-way through the window
// ----------------------------------------------------------------------

const TOPN_REV_MEMBERS: u64 = 50_000;
/// Buckets between the newest bucket written and the idle read.
const TOPN_IDLE_AFTER: u64 = 18;
/// Calls whose server-side times (SLOWLOG) a read measure takes.
const TOPN_READ_CALLS: usize = 200;
/// Pause between the idle reads: a dashboard reads at arbitrary moments, also while the
/// server ages a bucket that just left the window (one a second with 1 s buckets).
const TOPN_READ_PAUSE: Duration = Duration::from_millis(10);

/// Count of member `m` in bucket `b` (0..24): one set of members leads the
/// first 12 buckets, the reverse set the last 12.
fn topn_rev_count(b: u64, m: u64) -> u64 {
    let rank = if b < TOPN_BUCKETS / 2 {
        m
    } else {
        TOPN_REV_MEMBERS - 1 - m
    };
    1 + (TOPN_REV_MEMBERS - rank) / 1000
}

/// Fills the TOPN key `key` with buckets `first .. first + 24` (of `bucket_ms`), bucket by
/// bucket, and the zsets `<zset_prefix><bucket>` of the buckets `zsets` (indexes 0..24).
fn topn_rev_fill(
    c: &mut Conn,
    key: &str,
    bucket_ms: u64,
    first: u64,
    zset_prefix: &'static str,
    zsets: std::ops::Range<u64>,
) -> Result<(), String> {
    eprintln!(
        "  filling {key}: {} TOPN.INCR ...",
        TOPN_BUCKETS * TOPN_REV_MEMBERS
    );
    c.load(
        "TOPN reversing fill",
        TOPN_BUCKETS * TOPN_REV_MEMBERS,
        |i, out| {
            let (b, m) = (i / TOPN_REV_MEMBERS, i % TOPN_REV_MEMBERS);
            enc(
                out,
                &[
                    A::S("TOPN.INCR"),
                    A::S(key),
                    A::U(topn_member(m)),
                    A::S("BY"),
                    A::U(topn_rev_count(b, m)),
                    A::S("AT"),
                    A::U((first + b) * bucket_ms + 1),
                ],
            );
        },
    )?;
    const PER: u64 = 1000;
    let per_bucket = TOPN_REV_MEMBERS.div_ceil(PER);
    let (z0, nz) = (zsets.start, zsets.end - zsets.start);
    eprintln!("  filling {nz} bucket zsets ...");
    c.load("TOPN reversing zsets", nz * per_bucket, |i, out| {
        let (b, chunk) = (z0 + i / per_bucket, i % per_bucket);
        let mut args = vec![A::S("ZADD"), A::K(zset_prefix, first + b)];
        for m in chunk * PER..((chunk + 1) * PER).min(TOPN_REV_MEMBERS) {
            args.push(A::U(topn_rev_count(b, m)));
            args.push(A::U(topn_member(m)));
        }
        enc(out, &args);
    })
}

/// Server-side times (SLOWLOG, us) of `n` operations run one at a time, each made of the
/// commands `op(i)` returns (whitespace-separated lines); per operation, the sum of its
/// commands' times.
fn slowlog_op_us(
    c: &mut Conn,
    n: usize,
    op: impl Fn(usize) -> Vec<String>,
) -> Result<Vec<i64>, String> {
    slowlog_op_us_paced(c, n, Duration::ZERO, op)
}

/// `slowlog_op_us` with `pause` between operations (reads at arbitrary moments, not in a
/// burst).
fn slowlog_op_us_paced(
    c: &mut Conn,
    n: usize,
    pause: Duration,
    op: impl Fn(usize) -> Vec<String>,
) -> Result<Vec<i64>, String> {
    let names: Vec<String> = op(0)
        .iter()
        .map(|l| {
            l.split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase()
        })
        .collect();
    c.cmd("CONFIG SET slowlog-max-len 100000")?;
    c.cmd("CONFIG SET slowlog-log-slower-than 0")?;
    c.cmd("SLOWLOG RESET")?;
    let mut run = || -> Result<(), String> {
        for i in 0..n {
            for line in op(i) {
                c.cmd(&line)?;
            }
            if !pause.is_zero() {
                std::thread::sleep(pause);
            }
        }
        Ok(())
    };
    let res = run();
    let log = c.cmd("SLOWLOG GET 100000");
    c.cmd("CONFIG SET slowlog-log-slower-than 10000")?;
    c.cmd("CONFIG SET slowlog-max-len 128")?;
    c.cmd("SLOWLOG RESET")?;
    res?;
    let mut durs = Vec::new();
    if let V::Arr(entries) = log? {
        // Newest first: oldest first, then one operation per `names.len()` entries.
        for e in entries.iter().rev() {
            let V::Arr(f) = e else { continue };
            let (Some(d), Some(V::Arr(args))) = (f.get(2), f.get(3)) else {
                continue;
            };
            let name = args.first().map(|a| a.text().to_ascii_uppercase());
            if name.is_some_and(|x| names.contains(&x)) {
                durs.push(d.int()?);
            }
        }
    }
    if durs.len() != n * names.len() {
        return Err(format!(
            "SLOWLOG holds {} entries of {names:?}, expected {}",
            durs.len(),
            n * names.len()
        ));
    }
    Ok(durs.chunks(names.len()).map(|c| c.iter().sum()).collect())
}

/// `(median, note with p50 / p99 / max)` of server-side times.
fn us_summary(mut v: Vec<i64>, what: &str) -> (f64, String) {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (
        at(0.5) as f64,
        format!(
            "median of {} {what}; p99 {} us, max {} us",
            v.len(),
            at(0.99),
            v[v.len() - 1]
        ),
    )
}

/// The counts of a `member, count, ...` reply (TOPN WITHCOUNTS or ZREVRANGE WITHSCORES).
fn reply_counts(v: &V) -> Vec<i64> {
    match v {
        V::Arr(items) => items
            .chunks(2)
            .filter_map(|p| p.get(1).and_then(|x| x.int().ok()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The idle key's zsets that the recipe's union of the window at `now_ms` names (24 keys; the
/// older ones no longer exist, as the recipe's TTL would have removed them).
fn topn_idle_union(now_ms: u64) -> Vec<String> {
    let hi = now_ms / 1000;
    let keys: Vec<String> = (hi + 1 - TOPN_BUCKETS..=hi)
        .map(|b| format!("topn:iz:{b}"))
        .collect();
    vec![
        format!("ZUNIONSTORE topn:itmp {TOPN_BUCKETS} {}", keys.join(" ")),
        "ZREVRANGE topn:itmp 0 9 WITHSCORES".into(),
    ]
}

fn topn_idle_group(s: &Settings) -> Group {
    // The replica lives as long as the group (its measures use it).
    let replica: Rc<RefCell<Option<Server>>> = Rc::new(RefCell::new(None));
    let (server_bin, module) = (s.redis_server.clone(), s.module.clone());
    let setup_replica = replica.clone();
    let replica_read = replica.clone();
    Group {
        id: "topn-idle",
        title: format!(
            "TOPN idle key: BUCKET 1 WINDOW 24, {TOPN_BUCKETS} buckets x {TOPN_REV_MEMBERS} members \
             (popularity reverses half-way), then no writes; TOPN.TOP key 10 at the server's time \
             {TOPN_IDLE_AFTER} buckets after the newest bucket written, on the master and on a \
             replica (server-side, SLOWLOG); baseline: the recipe's union of the window's bucket zsets"
        ),
        reset_each: false,
        setup: Some(Box::new(move |c: &mut Conn| {
            if !c.has("topn.incr")? {
                return Ok(());
            }
            let port = c.info_field("server", "tcp_port")?;
            let replica = start_server_with(
                &server_bin,
                &module,
                &["--replicaof".into(), "127.0.0.1".into(), port],
            )?;
            *setup_replica.borrow_mut() = Some(replica);
            c.cmd("TOPN.CREATE topn:idle BUCKET 1 WINDOW 24")?;
            // Oldest bucket 14 s ago: every event is inside the window when written (future
            // buckets are), whatever the fill takes.
            let first = now_ms() / 1000 - 14;
            let newest = first + TOPN_BUCKETS - 1;
            let read_at = (newest + TOPN_IDLE_AFTER) * 1000;
            // The buckets still inside the window at the read: zsets for the recipe's union.
            let kept = TOPN_BUCKETS - TOPN_IDLE_AFTER;
            topn_rev_fill(c, "topn:idle", 1000, first, "topn:iz:", TOPN_BUCKETS - kept..TOPN_BUCKETS)?;
            let rport = setup_replica.borrow().as_ref().map(|r| r.port).unwrap_or(0);
            let mut rc = Conn::open(rport).map_err(|e| format!("replica: {e}"))?;
            let offsets_equal = |c: &mut Conn, rc: &mut Conn| -> Result<bool, String> {
                Ok(rc.info_field("replication", "master_link_status")? == "up"
                    && c.info_field("replication", "master_repl_offset")?
                        == rc.info_field("replication", "slave_repl_offset")?)
            };
            eprintln!("  waiting for the replica, then {TOPN_IDLE_AFTER} s of no writes ...");
            let deadline = Instant::now() + Duration::from_secs(120);
            while !offsets_equal(c, &mut rc)? {
                if Instant::now() > deadline || stopped() {
                    return Err("the replica did not catch up".into());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let aged = |c: &mut Conn| -> Result<i64, String> {
                c.info_field("recipes", "recipes_topn_aged_buckets")?
                    .parse::<i64>()
                    .map_err(|e| e.to_string())
            };
            while now_ms() < read_at + 300 {
                if stopped() {
                    return Err("interrupted".into());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            // Each server's timer has aged the buckets that left the window by itself.
            let deadline = Instant::now() + Duration::from_secs(60);
            while aged(c)? < TOPN_IDLE_AFTER as i64 || aged(&mut rc)? < TOPN_IDLE_AFTER as i64 {
                if Instant::now() > deadline || stopped() {
                    return Err(format!(
                        "buckets aged: master {}, replica {} (expected {TOPN_IDLE_AFTER})",
                        aged(c)?,
                        aged(&mut rc)?
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            // The answer is the union's (counts compared: ties order differently).
            let top = c.cmd("TOPN.TOP topn:idle 10 WITHCOUNTS")?;
            let mut union = V::Nil;
            for line in topn_idle_union(now_ms()) {
                union = c.cmd(&line)?;
            }
            if reply_counts(&top) != reply_counts(&union) || reply_counts(&top).len() != 10 {
                return Err(format!(
                    "TOPN.TOP and the union disagree: {} vs {}",
                    top.text(),
                    union.text()
                ));
            }
            Ok(())
        })),
        scenarios: vec![],
        measures: vec![
            Measure {
                id: "idle master",
                label: "TOPN.TOP key 10 (server's time) on the master".into(),
                unit: Unit::Micros,
                requires: vec!["topn.incr"],
                run: Box::new(|c| {
                    let v = slowlog_op_us_paced(c, TOPN_READ_CALLS, TOPN_READ_PAUSE, |_| {
                        vec!["TOPN.TOP topn:idle 10".into()]
                    })?;
                    Ok(us_summary(v, "reads, 10 ms apart"))
                }),
            },
            Measure {
                id: "idle replica",
                label: "TOPN.TOP key 10 (server's time) on the replica".into(),
                unit: Unit::Micros,
                requires: vec!["topn.incr"],
                run: Box::new(move |_| {
                    let port = replica_read.borrow().as_ref().map(|r| r.port).ok_or("no replica")?;
                    let mut rc = Conn::open(port).map_err(|e| format!("replica: {e}"))?;
                    let v = slowlog_op_us_paced(&mut rc, TOPN_READ_CALLS, TOPN_READ_PAUSE, |_| {
                        vec!["TOPN.TOP topn:idle 10".into()]
                    })?;
                    Ok(us_summary(v, "reads, 10 ms apart"))
                }),
            },
            Measure {
                id: "union (idle)",
                label: "recipe: ZUNIONSTORE tmp 24 <window's bucket keys, 6 left>; ZREVRANGE tmp 0 9 WITHSCORES".into(),
                unit: Unit::Micros,
                requires: vec!["topn.incr"],
                run: Box::new(|c| {
                    let v = slowlog_op_us(c, 7, |_| topn_idle_union(now_ms()))?;
                    Ok(us_summary(v, "unions"))
                }),
            },
        ],
        compares: vec![
            cmp("union (idle)", "idle master", None),
            Compare { a: "idle master", b: None, goal: Some(Goal::AtMost(1000.0)) },
            Compare { a: "idle replica", b: None, goal: Some(Goal::AtMost(1000.0)) },
        ],
    }
}

/// `TOPN.TOP topn:l 10 LAST k AT <ms in the newest bucket>`.
fn topn_last_cmd(newest: u64, k: u64) -> String {
    format!("TOPN.TOP topn:l 10 LAST {k} AT {}", newest * HOUR_MS + 1000)
}

/// The recipe's read of the newest `k` hourly bucket zsets (a union, or one zset).
fn topn_last_union(newest: u64, k: u64) -> Vec<String> {
    if k == 1 {
        return vec![format!("ZREVRANGE topn:lz:{newest} 0 9 WITHSCORES")];
    }
    let keys: Vec<String> = (newest + 1 - k..=newest)
        .map(|b| format!("topn:lz:{b}"))
        .collect();
    vec![
        format!("ZUNIONSTORE topn:ltmp {k} {}", keys.join(" ")),
        "ZREVRANGE topn:ltmp 0 9 WITHSCORES".into(),
    ]
}

/// A scenario of the whitespace-separated command lines `lines`, one client, no pipeline.
fn lines_scenario(
    id: &'static str,
    label: String,
    requires: Vec<&'static str>,
    lines: Vec<String>,
) -> Scenario {
    Scenario {
        id,
        label,
        requires,
        clients: Some(1),
        pipeline: Some(1),
        setup: Box::new(move |_| {
            let lines = lines.clone();
            Ok(op(move |_, out| {
                for l in &lines {
                    let args: Vec<A> = l.split_whitespace().map(A::S).collect();
                    enc(out, &args);
                }
                lines.len()
            }))
        }),
    }
}

fn topn_last_group(_s: &Settings) -> Group {
    let hour = now_ms() / HOUR_MS;
    let first = hour + 1 - TOPN_BUCKETS;
    let newest = hour;
    let last_measure = |id: &'static str, k: u64| Measure {
        id,
        label: format!("TOPN.TOP key 10 LAST {k} (server-side)"),
        unit: Unit::Micros,
        requires: vec!["topn.incr"],
        run: Box::new(move |c| {
            let v = slowlog_op_us(c, 50, |_| vec![topn_last_cmd(newest, k)])?;
            Ok(us_summary(v, "reads"))
        }),
    };
    let union_label = |k: u64| {
        if k == 1 {
            "ZREVRANGE <newest bucket zset> 0 9 WITHSCORES (1 client)".to_string()
        } else {
            format!("ZUNIONSTORE tmp {k} <newest {k} bucket zsets>; ZREVRANGE tmp 0 9 WITHSCORES (1 client)")
        }
    };
    Group {
        id: "topn-last",
        title: format!(
            "TOPN LAST k: hourly key, {TOPN_BUCKETS} buckets x {TOPN_REV_MEMBERS} members (popularity \
             reverses half-way), read at the newest bucket; each against the recipe's read of the \
             same k bucket zsets"
        ),
        reset_each: false,
        setup: Some(Box::new(move |c: &mut Conn| {
            if !c.has("topn.incr")? {
                return Ok(());
            }
            topn_rev_fill(c, "topn:l", HOUR_MS, first, "topn:lz:", 0..TOPN_BUCKETS)?;
            for k in [1, 6, 12] {
                let top = c.cmd(&(topn_last_cmd(newest, k) + " WITHCOUNTS"))?;
                let mut union = V::Nil;
                for line in topn_last_union(newest, k) {
                    union = c.cmd(&line)?;
                }
                if reply_counts(&top) != reply_counts(&union) {
                    return Err(format!("LAST {k} and the union disagree: {} vs {}", top.text(), union.text()));
                }
            }
            Ok(())
        })),
        scenarios: vec![
            lines_scenario("union 12", union_label(12), vec![], topn_last_union(newest, 12)),
            lines_scenario("union 6", union_label(6), vec![], topn_last_union(newest, 6)),
            lines_scenario("zset 1", union_label(1), vec![], topn_last_union(newest, 1)),
            lines_scenario("LAST 12", format!("{} (1 client)", topn_last_cmd(newest, 12)), vec!["topn.incr"], vec![topn_last_cmd(newest, 12)]),
            lines_scenario("LAST 6", format!("{} (1 client)", topn_last_cmd(newest, 6)), vec!["topn.incr"], vec![topn_last_cmd(newest, 6)]),
            lines_scenario("LAST 1", format!("{} (1 client)", topn_last_cmd(newest, 1)), vec!["topn.incr"], vec![topn_last_cmd(newest, 1)]),
        ],
        measures: vec![
            last_measure("LAST 1 us", 1),
            last_measure("LAST 6 us", 6),
            last_measure("LAST 12 us", 12),
        ],
        compares: vec![
            cmp("LAST 12", "union 12", None),
            cmp("LAST 6", "union 6", None),
            cmp("LAST 1", "zset 1", None),
            Compare { a: "LAST 1 us", b: None, goal: Some(Goal::AtMost(5000.0)) },
            Compare { a: "LAST 6 us", b: None, goal: Some(Goal::AtMost(5000.0)) },
            Compare { a: "LAST 12 us", b: None, goal: Some(Goal::AtMost(5000.0)) },
        ],
    }
}

fn all_groups(s: &Settings) -> Vec<Group> {
    vec![
        rv_write_group(s),
        rv_memory_group(s),
        tl_write_group(s),
        topn_write_group(s),
        topn_read_group(s),
        topn_last_group(s),
        topn_idle_group(s),
        topn_latency_group(s),
        ulist_write_group(s),
        ulist_gem_group(s),
        ulist_memory_group(s),
        ulist_reclaim_group(s),
        ulist_small::group(s),
        hcounter::write_group(s),
        hcounter::unique_group(s),
        hcounter::list_group(s),
        hcounter::memory_group(s),
        latency::group(s),
    ]
}

// ======================================================================
// Running
// ======================================================================

struct RunOut {
    ops: u64,
    secs: f64,
    /// Attempts of dialog operations (retries included); 0 for pipelined runs.
    attempts: u64,
}

/// Per client: (operations, attempts, start, end).
type ClientOut = (u64, u64, Instant, Instant);

/// Drive one scenario for `dur` with `clients` connections of `pipeline`-deep
/// pipelines (or, for a dialog, one conversation at a time).
fn run_load(
    port: u16,
    clients: usize,
    pipeline: usize,
    dur: Duration,
    load: &Load,
    seed: u64,
) -> Result<RunOut, String> {
    let barrier = Barrier::new(clients);
    let results: Vec<Result<ClientOut, String>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..clients)
            .map(|t| {
                let barrier = &barrier;
                sc.spawn(move || -> Result<ClientOut, String> {
                    let conn = connect(port);
                    barrier.wait();
                    let (mut w, mut r) = conn.map_err(|e| format!("connect: {e}"))?;
                    let mut g =
                        Gen::new(seed.wrapping_mul(31).wrapping_add(t as u64 * 0x1_0000_0001));
                    let f = match load {
                        Load::Pipelined(f) => f,
                        Load::Dialog(d) => {
                            let mut c = Conn {
                                w,
                                r,
                                buf: Vec::new(),
                                known: HashMap::new(),
                            };
                            let (mut ops, mut attempts) = (0u64, 0u64);
                            let start = Instant::now();
                            let deadline = start + dur;
                            loop {
                                g.now_ms = now_ms();
                                attempts += d(&mut g, &mut c)?;
                                ops += 1;
                                if Instant::now() >= deadline || stopped() {
                                    break;
                                }
                            }
                            return Ok((ops, attempts, start, Instant::now()));
                        }
                    };
                    let mut out = Vec::with_capacity(pipeline * 128);
                    let mut ops = 0u64;
                    let start = Instant::now();
                    let deadline = start + dur;
                    loop {
                        out.clear();
                        g.now_ms = now_ms();
                        let mut replies = 0;
                        for _ in 0..pipeline {
                            replies += f(&mut g, &mut out);
                        }
                        w.write_all(&out).map_err(|e| format!("write: {e}"))?;
                        let mut first = None;
                        let mut errs = 0;
                        for _ in 0..replies {
                            errs += r.skip(&mut first).map_err(|e| format!("read: {e}"))?;
                        }
                        if errs > 0 {
                            return Err(format!(
                                "{errs} error replies, first: {}",
                                first.unwrap_or_default()
                            ));
                        }
                        ops += pipeline as u64;
                        if Instant::now() >= deadline || stopped() {
                            break;
                        }
                    }
                    Ok((ops, 0, start, Instant::now()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("client thread panicked".into()))
            })
            .collect()
    });
    let (mut ops, mut attempts) = (0, 0);
    let mut start: Option<Instant> = None;
    let mut end: Option<Instant> = None;
    for r in results {
        let (o, a, s, e) = r?;
        ops += o;
        attempts += a;
        start = Some(start.map_or(s, |x| x.min(s)));
        end = Some(end.map_or(e, |x| x.max(e)));
    }
    let secs = (end.unwrap() - start.unwrap()).as_secs_f64();
    Ok(RunOut {
        ops,
        secs,
        attempts,
    })
}

enum Status {
    Ok,
    Skipped(String),
    Failed(String),
}

struct ScenResult {
    ops: Vec<Option<f64>>,
    /// Server CPU and bench (client) CPU during the run, in cores.
    cpu: Vec<Option<CpuUse>>,
    /// Dialogs: attempts per operation (1 = never retried).
    attempts: Vec<Option<f64>>,
    status: Status,
}

struct MeasureResult {
    value: Option<f64>,
    note: String,
    status: Status,
}

/// One row of the final markdown table.
struct Row {
    group: &'static str,
    what: String,
    result: String,
    ratio: String,
    goal: String,
    met: String,
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn thousands(x: f64) -> String {
    let n = x.abs().round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    if x.round() < 0.0 {
        out.push('-');
    }
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn fmt_ops(x: f64) -> String {
    if x < 100.0 {
        format!("{x:.1}")
    } else {
        thousands(x)
    }
}

fn trim_num(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{}x", thousands(r))
    } else if r >= 10.0 {
        format!("{r:.1}x")
    } else {
        format!("{r:.2}x")
    }
}

fn fmt_value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Bytes if v >= 10_000_000.0 => format!("{:.1} MB", v / 1e6),
        Unit::Bytes => format!("{} B", thousands(v)),
        Unit::BytesPerValue => format!("{v:.1} B/value"),
        Unit::Micros => format!("{} us", thousands(v)),
        Unit::Millis => format!("{} ms", thousands(v)),
    }
}

fn unit_suffix(unit: Unit) -> &'static str {
    match unit {
        Unit::Bytes => " B",
        Unit::BytesPerValue => " B/value",
        Unit::Micros => " us",
        Unit::Millis => " ms",
    }
}

fn missing(c: &mut Conn, requires: &[&'static str]) -> Result<Option<String>, String> {
    let mut miss = vec![];
    for r in requires {
        if !c.has(r)? {
            miss.push(r.to_ascii_uppercase());
        }
    }
    Ok(if miss.is_empty() {
        None
    } else {
        Some(format!(
            "skipped: {} unknown to the server",
            miss.join(", ")
        ))
    })
}

/// Run a measure; for timings, also report how busy the rest of the machine
/// was (SLOWLOG durations are wall-clock: preemption inflates them).
fn timed_measure(c: &mut Conn, m: &Measure, busy: &mut Vec<f64>) -> Result<(f64, String), String> {
    if !matches!(m.unit, Unit::Micros) {
        return (m.run)(c);
    }
    let before = CpuSnap::take(c)?;
    let (v, note) = (m.run)(c)?;
    let cpu = CpuSnap::take(c)?.since(&before);
    Ok(match cpu.other {
        Some(o) => {
            busy.push(o);
            (
                v,
                format!(
                    "{note}; other load on the machine {:.0}% of a CPU",
                    o * 100.0
                ),
            )
        }
        None => (v, note),
    })
}

fn run_group(
    s: &Settings,
    port: u16,
    c: &mut Conn,
    grp: &Group,
    failed: &mut bool,
    busy: &mut Vec<f64>,
) -> Result<Vec<Row>, String> {
    println!();
    println!("== {} ==", grp.title);
    let n = grp.scenarios.len();
    let mut res: Vec<ScenResult> = Vec::with_capacity(n);
    for sc in &grp.scenarios {
        let status = match missing(c, &sc.requires)? {
            Some(why) => Status::Skipped(why),
            None => Status::Ok,
        };
        res.push(ScenResult {
            ops: vec![None; s.rounds],
            cpu: vec![None; s.rounds],
            attempts: vec![None; s.rounds],
            status,
        });
    }
    c.cmd("FLUSHALL")?;
    if let Some(setup) = &grp.setup {
        setup(c).map_err(|e| format!("{}: setup: {e}", grp.id))?;
    }
    let dur = Duration::from_millis(s.ms);
    if n > 0 {
        for round in 0..s.rounds {
            let mut line = format!("  round {}/{}:", round + 1, s.rounds);
            for k in 0..n {
                let i = (k + round) % n;
                let sc = &grp.scenarios[i];
                if !matches!(res[i].status, Status::Ok) {
                    continue;
                }
                if stopped() {
                    return Err("interrupted".into());
                }
                let attempt = (|| -> Result<(RunOut, CpuUse), String> {
                    if grp.reset_each {
                        c.cmd("FLUSHALL")?;
                        if let Some(setup) = &grp.setup {
                            setup(c).map_err(|e| format!("group setup: {e}"))?;
                        }
                    }
                    let f = (sc.setup)(c).map_err(|e| format!("setup: {e}"))?;
                    let cpu0 = CpuSnap::take(c)?;
                    let out = run_load(
                        port,
                        sc.clients.unwrap_or(s.clients),
                        sc.pipeline.unwrap_or(s.pipeline),
                        dur,
                        &f,
                        (round * 1000 + i) as u64,
                    )?;
                    let cpu = CpuSnap::take(c)?.since(&cpu0);
                    Ok((out, cpu))
                })();
                match attempt {
                    _ if stopped() => return Err("interrupted".into()),
                    Ok((out, cpu)) => {
                        let ops = out.ops as f64 / out.secs;
                        res[i].ops[round] = Some(ops);
                        res[i].cpu[round] = Some(cpu);
                        if out.attempts > 0 {
                            res[i].attempts[round] = Some(out.attempts as f64 / out.ops as f64);
                        }
                        if let Some(o) = cpu.other {
                            busy.push(o);
                        }
                        line += &format!(" {} {}/s", sc.id, fmt_ops(ops));
                    }
                    Err(e) => {
                        eprintln!("!!! {} / {}: FAILED: {e}", grp.id, sc.id);
                        res[i].status = Status::Failed(e);
                        *failed = true;
                    }
                }
            }
            eprintln!("{line}");
        }
    }

    // Measures, on the group's data.
    let mut mres: Vec<MeasureResult> = Vec::new();
    for m in &grp.measures {
        let r = match missing(c, &m.requires)? {
            Some(why) => MeasureResult {
                value: None,
                note: String::new(),
                status: Status::Skipped(why),
            },
            None => match timed_measure(c, m, busy) {
                Ok((v, note)) => MeasureResult {
                    value: Some(v),
                    note,
                    status: Status::Ok,
                },
                Err(e) => {
                    eprintln!("!!! {} / {}: FAILED: {e}", grp.id, m.id);
                    *failed = true;
                    MeasureResult {
                        value: None,
                        note: String::new(),
                        status: Status::Failed(e),
                    }
                }
            },
        };
        mres.push(r);
    }

    let sidx = |id: &str| grp.scenarios.iter().position(|x| x.id == id);
    let midx = |id: &str| grp.measures.iter().position(|x| x.id == id);
    // Per-round ratio of scenario a to scenario b, then the median.
    let ratio_ops = |a: usize, b: usize| -> Option<f64> {
        let mut r: Vec<f64> = (0..s.rounds)
            .filter_map(|k| match (res[a].ops[k], res[b].ops[k]) {
                (Some(x), Some(y)) if y > 0.0 => Some(x / y),
                _ => None,
            })
            .collect();
        median(&mut r)
    };
    let compare_value = |cm: &Compare| -> Option<f64> {
        match (sidx(cm.a), cm.b.and_then(sidx)) {
            (Some(a), Some(b)) => ratio_ops(a, b),
            _ => {
                let va = midx(cm.a).and_then(|i| mres[i].value)?;
                match cm.b {
                    None => Some(va),
                    Some(b) => {
                        let vb = midx(b).and_then(|i| mres[i].value)?;
                        (vb > 0.0).then(|| va / vb)
                    }
                }
            }
        }
    };

    let mut rows = Vec::new();
    let status_text = |st: &Status| match st {
        Status::Ok => String::new(),
        Status::Skipped(w) => w.clone(),
        Status::Failed(e) => format!("FAILED: {e}"),
    };

    // Throughput detail.
    if n > 0 {
        let base = &grp.scenarios[0];
        println!(
            "  {:<12} {:>12} {:>23} {:>14} {:>7} {:>7} {:>7}  operation",
            "scenario",
            "ops/s median",
            "min .. max",
            format!("vs {}", base.id),
            "server",
            "bench",
            "other"
        );
        for (i, sc) in grp.scenarios.iter().enumerate() {
            let mut v: Vec<f64> = res[i].ops.iter().flatten().copied().collect();
            let mut srv: Vec<f64> = res[i].cpu.iter().flatten().map(|c| c.server).collect();
            let mut cli: Vec<f64> = res[i].cpu.iter().flatten().map(|c| c.client).collect();
            let mut oth: Vec<f64> = res[i]
                .cpu
                .iter()
                .flatten()
                .filter_map(|c| c.other)
                .collect();
            let med = median(&mut v);
            let ratio = ratio_ops(i, 0);
            let goal = grp
                .compares
                .iter()
                .find(|cm| cm.a == sc.id && cm.b == Some(base.id))
                .and_then(|cm| cm.goal);
            let pct = |x: &mut Vec<f64>| {
                median(x)
                    .map(|x| format!("{:.0}%", x * 100.0))
                    .unwrap_or_default()
            };
            match med {
                Some(m) => {
                    println!(
                        "  {:<12} {:>12} {:>23} {:>14} {:>7} {:>7} {:>7}  {}",
                        sc.id,
                        fmt_ops(m),
                        format!("{} .. {}", fmt_ops(v[0]), fmt_ops(*v.last().unwrap())),
                        ratio.map(fmt_ratio).unwrap_or_else(|| "n/a".into()),
                        pct(&mut srv),
                        pct(&mut cli),
                        pct(&mut oth),
                        sc.label
                    );
                    let mut att: Vec<f64> = res[i].attempts.iter().flatten().copied().collect();
                    if let Some(a) = median(&mut att) {
                        println!(
                            "  {:<12} {a:.2} attempts per operation (median over rounds; 1 = no retry)",
                            ""
                        );
                    }
                    if let Status::Failed(e) = &res[i].status {
                        println!("  {:<12} FAILED in a later round: {e}", "");
                    }
                }
                None => println!(
                    "  {:<12} {}  ({})",
                    sc.id,
                    status_text(&res[i].status),
                    sc.label
                ),
            }
            rows.push(Row {
                group: grp.id,
                what: format!("`{}`", sc.label),
                result: med
                    .map(|m| format!("{} ops/s", fmt_ops(m)))
                    .unwrap_or_else(|| status_text(&res[i].status)),
                ratio: if i == 0 {
                    "1.00x (baseline)".into()
                } else {
                    ratio
                        .map(|r| format!("{} vs {}", fmt_ratio(r), base.id))
                        .unwrap_or_else(|| "n/a".into())
                },
                goal: goal.map(|g| g.text("x")).unwrap_or_default(),
                met: match (goal, ratio) {
                    (Some(g), Some(r)) => if g.met(r) { "yes" } else { "NO" }.into(),
                    (Some(_), None) => "n/a".into(),
                    _ => String::new(),
                },
            });
        }
    }

    // Measure detail.
    for (i, m) in grp.measures.iter().enumerate() {
        let abs_goal = grp
            .compares
            .iter()
            .find(|cm| cm.a == m.id && cm.b.is_none())
            .and_then(|cm| cm.goal);
        let r = &mres[i];
        match r.value {
            Some(v) => {
                let (first, more) = r.note.split_once('\n').unwrap_or((&r.note, ""));
                println!(
                    "  {:<14} {:>12}  {}  ({first})",
                    m.id,
                    fmt_value(v, m.unit),
                    m.label
                );
                if !more.is_empty() {
                    println!("{more}");
                }
            }
            None => println!("  {:<14} {}  ({})", m.id, status_text(&r.status), m.label),
        }
        rows.push(Row {
            group: grp.id,
            what: format!("{}: {}", m.id, m.label),
            result: r
                .value
                .map(|v| fmt_value(v, m.unit))
                .unwrap_or_else(|| status_text(&r.status)),
            ratio: String::new(),
            goal: abs_goal
                .map(|g| g.text(unit_suffix(m.unit)))
                .unwrap_or_default(),
            met: match (abs_goal, r.value) {
                (Some(g), Some(v)) => if g.met(v) { "yes" } else { "NO" }.into(),
                (Some(_), None) => "n/a".into(),
                _ => String::new(),
            },
        });
    }

    // Comparisons not already shown as "vs baseline".
    let base_id = grp.scenarios.first().map(|x| x.id);
    let extra: Vec<&Compare> = grp
        .compares
        .iter()
        .filter(|cm| cm.b.is_some() && !(sidx(cm.a).is_some() && cm.b == base_id))
        .collect();
    let all_cmp: Vec<&Compare> = grp.compares.iter().filter(|cm| cm.b.is_some()).collect();
    if !all_cmp.is_empty() {
        println!("  comparisons:");
    }
    for cm in &all_cmp {
        let v = compare_value(cm);
        let b = cm.b.unwrap();
        let goal = match (cm.goal, v) {
            (Some(g), Some(x)) => format!(
                "  goal {}: {}",
                g.text("x"),
                if g.met(x) { "met" } else { "NOT met" }
            ),
            (Some(g), None) => format!("  goal {}", g.text("x")),
            _ => String::new(),
        };
        println!(
            "    {:<32} {:>9}{goal}",
            format!("{} / {}", cm.a, b),
            v.map(fmt_ratio).unwrap_or_else(|| "n/a".into())
        );
    }
    for cm in grp.compares.iter().filter(|cm| cm.b.is_none()) {
        if let (Some(g), Some(x)) = (cm.goal, compare_value(cm)) {
            let unit = midx(cm.a)
                .map(|i| unit_suffix(grp.measures[i].unit))
                .unwrap_or("");
            println!(
                "    {:<32} goal {}: {}",
                cm.a,
                g.text(unit),
                if g.met(x) { "met" } else { "NOT met" }
            );
        }
    }
    for cm in extra {
        let v = compare_value(cm);
        rows.push(Row {
            group: grp.id,
            what: format!("{} vs {}", cm.a, cm.b.unwrap()),
            result: String::new(),
            ratio: v.map(fmt_ratio).unwrap_or_else(|| "n/a".into()),
            goal: cm.goal.map(|g| g.text("x")).unwrap_or_default(),
            met: match (cm.goal, v) {
                (Some(g), Some(x)) => if g.met(x) { "yes" } else { "NO" }.into(),
                (Some(_), None) => "n/a".into(),
                _ => String::new(),
            },
        });
    }
    Ok(rows)
}

fn stale_warning(s: &Settings) -> Option<String> {
    if !s.module_is_default {
        return None;
    }
    let so = std::fs::metadata(&s.module).ok()?.modified().ok()?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut newest = None;
    let mut stack = vec![src];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(t) = e.metadata().and_then(|m| m.modified()) {
                if newest.is_none_or(|n| t > n) {
                    newest = Some(t);
                }
            }
        }
    }
    (newest? > so)
        .then(|| "warning: src/ is newer than the module; run `cargo build --release` first".into())
}

fn run() -> Result<bool, String> {
    install_signal_handlers();
    let s = Settings::from_env()?;
    if !s.module.is_file() {
        return Err(format!(
            "module not found: {}\n  build it with `cargo build --release` (or `make bench`), or set RECIPES_MODULE",
            s.module.display()
        ));
    }
    if let Some(w) = stale_warning(&s) {
        eprintln!("{w}");
    }
    let groups: Vec<Group> = all_groups(&s)
        .into_iter()
        .filter(|g| s.wants(g.id))
        .collect();
    if groups.is_empty() {
        return Err(format!(
            "BENCH_ONLY={} matches no group; groups: {}",
            s.only.join(","),
            all_groups(&s)
                .iter()
                .map(|g| g.id)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let server = start_server(&s)?;
    let mut c = Conn::open(server.port).map_err(|e| format!("connect: {e}"))?;
    let version = c.info_field("server", "redis_version")?;
    let modules = c.cmd("MODULE LIST")?.text();
    if !modules.contains("recipes") {
        return Err(format!("module not loaded? MODULE LIST: {modules}"));
    }
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    println!(
        "recipes bench: redis {version} (port {}), module {}",
        server.port,
        s.module.display()
    );
    println!(
        "settings: {} clients x pipeline {}, {} rounds x {} ms per scenario, {cpus} CPUs",
        s.clients, s.pipeline, s.rounds, s.ms
    );
    println!("command: {}", s.command_line());
    println!(
        "CPU columns: share of one CPU used during a run by the server (~100% = server-bound), \
         by this bench's clients, and by everything else on the machine"
    );

    let t = Instant::now();
    let mut failed = false;
    let mut busy = Vec::new();
    let mut rows = Vec::new();
    for g in &groups {
        rows.extend(run_group(
            &s,
            server.port,
            &mut c,
            g,
            &mut failed,
            &mut busy,
        )?);
    }

    println!();
    println!(
        "## Results (one run, interleaved; medians over {} rounds)",
        s.rounds
    );
    println!();
    println!("| group | scenario | result | ratio | goal | met? |");
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.group, r.what, r.result, r.ratio, r.goal, r.met
        );
    }
    println!();
    println!(
        "Redis {version}, {cpus} CPUs, {} clients x pipeline {}, {} rounds x {} ms, total {:.0} s.",
        s.clients,
        s.pipeline,
        s.rounds,
        s.ms,
        t.elapsed().as_secs_f64()
    );
    println!("Command: `{}`", s.command_line());
    if let (Some(med), Some(max)) = (
        median(&mut busy.clone()),
        busy.iter().copied().reduce(f64::max),
    ) {
        println!(
            "Other load on the machine during the runs: median {:.0}%, max {:.0}% of a CPU.",
            med * 100.0,
            max * 100.0
        );
        if med > 0.15 {
            println!(
                "WARNING: other processes competed for the CPUs during the runs; \
                 the ratios are unreliable: rerun on an idle machine."
            );
        }
    }
    drop(c);
    drop(server);
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
