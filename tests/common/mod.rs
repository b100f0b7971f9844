//! Test harness: real `redis-server` processes with the module loaded.
//!
//! Every test starts its own server(s) on a free loopback port with a fresh
//! temp dir, so tests run in parallel without `--test-threads=1`.
//!
//! ```ignore
//! mod common;
//! use common::*;
//! let srv = Server::start();                       // defaults
//! let srv = Server::builder()
//!     .config("appendonly", "yes")                 // --appendonly yes
//!     .config("appendfsync", "always")
//!     .config("recipes.rv-default-maxlen", "5")    // module config
//!     .module_args(&["rv-default-maxlen", "3"])    // loadmodule <so> rv-default-maxlen 3
//!     .start();
//! let mut c = srv.conn();
//! ```
//!
//! Persistence: AOF tests use `appendonly yes` + `appendfsync always` and
//! `restart()` (SIGTERM flushes the AOF; with AOF on, a start loads the AOF).
//! RDB tests use `restart_with_save()` (SAVE, then a start that loads the
//! RDB, with AOF on too). Both reuse the same dir and the same config.
//!
//! Faults: `crash()` kills a server with SIGKILL (nothing flushed), and
//! `try_restart()` starts it again on its dir, answering the log and how the
//! process ended when it refuses to start (a bad RDB or AOF).
//!
//! Env: `RECIPES_MODULE` = path of the .so (else found next to the test binary);
//! `REDIS_SERVER` = redis-server binary (default `redis-server`);
//! `REDIS_CLI` = the matching redis-cli, for tests that run it ([`redis_cli`]);
//! `REDIS_CHECK_AOF` = the matching redis-check-aof ([`redis_check_aof`]);
//! `KEEP_TMP` = keep temp dirs (their path is printed).
#![allow(dead_code)]

pub mod cluster;
pub mod families;
mod query;
mod tables;
pub use query::*;
#[allow(unused_imports)] // not every test binary has tables
pub use tables::*;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const STARTUP_DEADLINE: Duration = Duration::from_secs(15);
pub const STOP_DEADLINE: Duration = Duration::from_secs(10);
pub const SYNC_DEADLINE: Duration = Duration::from_secs(15);
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Path of the module .so: `$RECIPES_MODULE`, else `<target>/<profile>/librecipes.so`
/// next to the test executable (`<target>/<profile>/deps/<test-bin>`).
pub fn module_path() -> PathBuf {
    if let Ok(p) = std::env::var("RECIPES_MODULE") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "RECIPES_MODULE={} does not exist", p.display());
        return p;
    }
    let exe = std::env::current_exe().expect("current_exe");
    let mut tried = Vec::new();
    for dir in exe.ancestors().skip(1).take(3) {
        let cand = dir.join("librecipes.so");
        if cand.is_file() {
            return cand;
        }
        tried.push(cand);
    }
    panic!(
        "module librecipes.so not found (tried {:?}); build it with `cargo build` \
         or set RECIPES_MODULE=/path/to/librecipes.so",
        tried
    );
}

/// The redis-cli to run: `$REDIS_CLI`, else `redis-cli`. Tests run it only
/// through this, so it matches the server `REDIS_SERVER` names.
pub fn redis_cli() -> String {
    std::env::var("REDIS_CLI").unwrap_or_else(|_| "redis-cli".into())
}

/// The redis-check-aof to run: `$REDIS_CHECK_AOF`, else the one beside
/// `$REDIS_SERVER` (`<name>-check-aof` for `<name>-server`) when there is one,
/// else `redis-check-aof`.
pub fn redis_check_aof() -> String {
    if let Ok(path) = std::env::var("REDIS_CHECK_AOF") {
        return path;
    }
    if let Ok(server) = std::env::var("REDIS_SERVER") {
        let path = PathBuf::from(&server);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Some(stem) = name.as_deref().and_then(|n| n.strip_suffix("-server")) {
            let check = path.with_file_name(format!("{stem}-check-aof"));
            if check.is_file() {
                return check.display().to_string();
            }
        }
    }
    "redis-check-aof".into()
}

/// Current Unix time in ms (the test machine's clock = the server's clock).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Poll `f` every 10 ms until it returns true or `timeout` passes. Returns the last result.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind 127.0.0.1:0")
        .local_addr()
        .unwrap()
        .port()
}

/// A free port for a cluster node: its bus port (+10000) must be a port too
/// and free, so at most 55535.
fn free_cluster_port() -> u16 {
    for _ in 0..1000 {
        let port = free_port();
        if port <= 55535 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
    panic!("no free port pair for a cluster node");
}

fn fresh_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let dir = std::env::temp_dir().join(format!(
        "recipes-test-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        nanos
    ));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

#[derive(Clone, Default)]
pub struct ServerBuilder {
    extra: Vec<String>,
    module_args: Vec<String>,
    load_module: bool,
}

impl ServerBuilder {
    /// `--name value` on the redis-server command line (module configs too:
    /// `config("recipes.rv-default-maxlen", "5")`).
    pub fn config(mut self, name: &str, value: &str) -> Self {
        self.extra.push(format!("--{name}"));
        self.extra.push(value.to_string());
        self
    }
    /// Raw extra command-line args, appended as given.
    pub fn args(mut self, args: &[&str]) -> Self {
        self.extra.extend(args.iter().map(|s| s.to_string()));
        self
    }
    /// Args after `--loadmodule <so>` (e.g. `&["rv-default-maxlen", "3"]`).
    pub fn module_args(mut self, args: &[&str]) -> Self {
        self.module_args.extend(args.iter().map(|s| s.to_string()));
        self
    }
    /// Start without loading the module (plain Redis).
    pub fn without_module(mut self) -> Self {
        self.load_module = false;
        self
    }
    pub fn start(self) -> Server {
        let mut s = Server {
            port: 0,
            dir: fresh_dir(),
            child: None,
            builder: self,
        };
        s.spawn(true);
        s
    }
}

pub struct Server {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    builder: ServerBuilder,
}

impl Server {
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            load_module: true,
            ..Default::default()
        }
    }
    /// A server with the module loaded and default config.
    pub fn start() -> Server {
        Self::builder().start()
    }
    /// A replica of `master` (same module and extra config as `master`), not yet synced:
    /// call `wait_for_sync(&master, &replica)`.
    pub fn start_replica_of(master: &Server) -> Server {
        let port = master.port.to_string();
        master
            .builder
            .clone()
            .args(&["--replicaof", "127.0.0.1", &port])
            .start()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server not running").id()
    }
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("redis.log")
    }
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).unwrap()
    }
    /// A RESP2 connection with read/write timeouts (a hang becomes an error).
    pub fn conn(&self) -> redis::Connection {
        let c = self.client().get_connection().unwrap_or_else(|e| {
            panic!(
                "connect to port {}: {e}\n--- log ---\n{}",
                self.port,
                self.log()
            )
        });
        c.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        c.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        c
    }
    /// A RESP3 connection (`HELLO 3`).
    pub fn conn_resp3(&self) -> redis::Connection {
        let url = format!("redis://127.0.0.1:{}/?protocol=resp3", self.port);
        let c = redis::Client::open(url).unwrap().get_connection().unwrap();
        c.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        c.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        c
    }

    fn command_line(&self) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "--port".into(),
            self.port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--dir".into(),
            self.dir.display().to_string(),
            "--logfile".into(),
            "redis.log".into(),
            "--save".into(),
            "".into(),
            "--daemonize".into(),
            "no".into(),
            "--enable-debug-command".into(),
            "yes".into(),
            "--enable-module-command".into(),
            "yes".into(),
            // full sync at once instead of waiting 5 s for more replicas
            "--repl-diskless-sync-delay".into(),
            "0".into(),
        ];
        if self.builder.load_module {
            a.push("--loadmodule".into());
            a.push(module_path().display().to_string());
            a.extend(self.builder.module_args.iter().cloned());
        }
        a.extend(self.builder.extra.iter().cloned());
        a
    }

    /// Spawn on `self.dir`; `new_port`: pick a fresh port (else try the current one first).
    fn spawn(&mut self, new_port: bool) {
        if let Err(e) = self.try_spawn(new_port) {
            panic!("{e}");
        }
    }

    /// [`Server::spawn`], answering why the server did not start instead of panicking.
    fn try_spawn(&mut self, mut new_port: bool) -> Result<(), StartFailure> {
        let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        for attempt in 0..5 {
            if new_port || self.port == 0 {
                let cluster = self
                    .builder
                    .extra
                    .windows(2)
                    .any(|w| w[0] == "--cluster-enabled" && w[1] == "yes");
                self.port = if cluster {
                    free_cluster_port()
                } else {
                    free_port()
                };
            }
            let _ = std::fs::remove_file(self.log_path());
            let child = Command::new(&bin)
                .args(self.command_line())
                .current_dir(&self.dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run {bin}: {e} (is redis-server installed?)"));
            self.child = Some(child);
            let status = match self.wait_ready() {
                Ok(()) => return Ok(()),
                Err(Unready::PortTaken) if attempt < 4 => {
                    new_port = true;
                    continue;
                }
                Err(Unready::Exited(status)) => Some(status),
                Err(_) => {
                    self.kill_hard();
                    None
                }
            };
            self.child = None;
            let version = Command::new(&bin)
                .arg("--version")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            return Err(StartFailure {
                what: format!(
                    "{bin} ({version}) on port {} did not start (dir {})",
                    self.port,
                    self.dir.display()
                ),
                status,
                log: self.log(),
            });
        }
        unreachable!("the last attempt returns")
    }

    /// Ok when our process answers PING and has finished loading.
    fn wait_ready(&mut self) -> Result<(), Unready> {
        let end = Instant::now() + STARTUP_DEADLINE;
        let pid = self.pid();
        loop {
            if let Ok(Some(status)) = self.child.as_mut().unwrap().try_wait() {
                if self.log().contains("Address already in use") {
                    return Err(Unready::PortTaken);
                }
                return Err(Unready::Exited(status));
            }
            if Instant::now() >= end {
                return Err(Unready::Deadline);
            }
            if let Some(info) = probe_info(self.port, "server") {
                if info_field(&info, "process_id") != Some(pid.to_string()) {
                    // someone else's server on this port
                    self.kill_hard();
                    return Err(Unready::PortTaken);
                }
                let loaded = probe_info(self.port, "persistence")
                    .is_some_and(|i| info_field(&i, "loading").as_deref() == Some("0"));
                if loaded {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill_hard(&mut self) {
        if let Some(mut ch) = self.child.take() {
            let _ = ch.kill();
            let _ = ch.wait();
        }
    }

    /// SIGTERM and wait (SIGKILL after STOP_DEADLINE). SIGTERM flushes the AOF;
    /// with `save ""` it writes no RDB (use `restart_with_save`).
    pub fn stop(&mut self) {
        let Some(mut ch) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &ch.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let end = Instant::now() + STOP_DEADLINE;
        loop {
            match ch.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = ch.kill();
                    let _ = ch.wait();
                    return;
                }
            }
        }
    }

    /// Stop and start a new process on the same dir, same config (same port if free).
    /// Returns once the dataset is loaded.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn(false);
    }

    /// [`Server::restart`] with `extra` config on top of the server's own
    /// (kept for later restarts), answering why it did not start instead of
    /// panicking: for data the server may refuse.
    pub fn try_restart_with(&mut self, extra: &[(&str, &str)]) -> Result<(), StartFailure> {
        self.stop();
        for (name, value) in extra {
            self.builder = std::mem::take(&mut self.builder).config(name, value);
        }
        self.try_spawn(false)
    }

    /// SIGKILL, as a crash: nothing is flushed or saved. `restart()` brings it back.
    pub fn crash(&mut self) {
        self.kill_hard();
    }

    /// `SAVE`, then a restart that loads that RDB, with AOF on too: a plain
    /// restart would load the AOF then. So with AOF on, the new process
    /// starts with `appendonly no` (it loads `dump.rdb`), and turning the AOF
    /// on again rewrites it from the loaded data: later restarts load that.
    pub fn restart_with_save(&mut self) {
        let c = &mut self.conn();
        let aof: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("appendonly")
            .query(c)
            .expect("CONFIG GET appendonly");
        let _: () = redis::cmd("SAVE").query(c).expect("SAVE");
        if aof.get(1).map(String::as_str) != Some("yes") {
            self.restart();
            return;
        }
        self.stop();
        let configured = self.builder.clone();
        self.builder = configured.clone().config("appendonly", "no");
        let started = self.try_spawn(false);
        self.builder = configured;
        if let Err(e) = started {
            panic!("{e}");
        }
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("appendonly")
            .arg("yes")
            .query(&mut self.conn())
            .expect("CONFIG SET appendonly yes");
        wait_for_bg_done(self);
        let p = self.info("persistence");
        assert_eq!(
            (
                info_field(&p, "aof_enabled").as_deref(),
                info_field(&p, "aof_last_bgrewrite_status").as_deref()
            ),
            (Some("1"), Some("ok")),
            "AOF not back on after the RDB restart\n{p}"
        );
    }

    /// `INFO <section>` as text.
    pub fn info(&self, section: &str) -> String {
        redis::cmd("INFO")
            .arg(section)
            .query(&mut self.conn())
            .expect("INFO")
    }
}

/// Why a server did not start.
#[derive(Debug)]
pub struct StartFailure {
    pub what: String,
    /// How the process ended; `None` when it was still running at the deadline.
    pub status: Option<ExitStatus>,
    pub log: String,
}

impl StartFailure {
    /// The process exited by itself with an exit code, not by a signal (a crash).
    pub fn exited_cleanly(&self) -> bool {
        self.status
            .is_some_and(|s| s.code().is_some() && s.signal().is_none())
    }
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({:?})\n--- log ---\n{}",
            self.what, self.status, self.log
        )
    }
}

/// `INFO <section>` of the server on `port` over a plain socket with
/// timeouts, `None` without a reply: a server that accepts connections but
/// does not answer (busy, hung) cannot block the caller, as the client
/// crate's connection handshake, which has no read timeout, would.
fn probe_info(port: u16, section: &str) -> Option<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(2)))
        .ok()?;
    stream
        .write_all(format!("INFO {section}\r\n").as_bytes())
        .ok()?;
    let mut reply = BufReader::new(stream);
    let mut header = String::new();
    reply.read_line(&mut header).ok()?;
    let len: usize = header.strip_prefix('$')?.trim().parse().ok()?;
    let mut text = vec![0; len];
    reply.read_exact(&mut text).ok()?;
    String::from_utf8(text).ok()
}

/// Why a started process is not ready.
enum Unready {
    /// Another server answers on the port: retry on another.
    PortTaken,
    Exited(ExitStatus),
    Deadline,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        if std::env::var_os("KEEP_TMP").is_some() {
            eprintln!("KEEP_TMP: server dir kept at {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Value of `name:` in an INFO text.
pub fn info_field(info: &str, name: &str) -> Option<String> {
    info.lines().find_map(|l| {
        let (k, v) = l.trim_end().split_once(':')?;
        (k == name).then(|| v.to_string())
    })
}

/// Wait until `replica` is linked to `master` and has applied everything the
/// master has produced so far (offsets equal). Panics after SYNC_DEADLINE.
pub fn wait_for_sync(master: &Server, replica: &Server) {
    let ok = wait_until(SYNC_DEADLINE, || {
        let r = replica.info("replication");
        if info_field(&r, "master_link_status").as_deref() != Some("up") {
            return false;
        }
        let m = master.info("replication");
        let mo = info_field(&m, "master_repl_offset");
        mo.is_some() && mo == info_field(&r, "slave_repl_offset")
    });
    assert!(
        ok,
        "replica on port {} did not sync with master on port {}\n--- master info ---\n{}\n--- replica info ---\n{}\n--- replica log ---\n{}",
        replica.port,
        master.port,
        master.info("replication"),
        replica.info("replication"),
        replica.log()
    );
}

/// Wait for a running BGREWRITEAOF / BGSAVE to finish.
pub fn wait_for_bg_done(srv: &Server) {
    let ok = wait_until(SYNC_DEADLINE, || {
        let p = srv.info("persistence");
        info_field(&p, "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(&p, "aof_rewrite_scheduled").as_deref() == Some("0")
            && info_field(&p, "rdb_bgsave_in_progress").as_deref() == Some("0")
    });
    assert!(ok, "background save/rewrite did not finish\n{}", srv.log());
}

/// Logical content of one key, comparable across servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDump {
    pub kind: String,
    /// string: [value]; list: items; zset: member, score, ...; hash/set: sorted;
    /// other types (module types, streams): the DUMP payload.
    pub value: Vec<Vec<u8>>,
    /// Absolute expiry in ms (`PEXPIRETIME`), -1 when none.
    pub expire_at_ms: i64,
}

/// Every key of db 0 with its logical value and absolute expiry.
pub fn dump_all(c: &mut redis::Connection) -> BTreeMap<Vec<u8>, KeyDump> {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(c).expect("KEYS");
    let mut out = BTreeMap::new();
    for k in keys {
        let kind: String = redis::cmd("TYPE").arg(&k).query(c).expect("TYPE");
        let value: Vec<Vec<u8>> = match kind.as_str() {
            "none" => continue, // expired meanwhile
            "string" => vec![redis::cmd("GET").arg(&k).query(c).unwrap()],
            "list" => redis::cmd("LRANGE")
                .arg(&k)
                .arg(0)
                .arg(-1)
                .query(c)
                .unwrap(),
            "zset" => redis::cmd("ZRANGE")
                .arg(&k)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(c)
                .unwrap(),
            "hash" => {
                let mut v: Vec<(Vec<u8>, Vec<u8>)> =
                    redis::cmd("HGETALL").arg(&k).query(c).unwrap();
                v.sort();
                v.into_iter().flat_map(|(a, b)| [a, b]).collect()
            }
            "set" => {
                let mut v: Vec<Vec<u8>> = redis::cmd("SMEMBERS").arg(&k).query(c).unwrap();
                v.sort();
                v
            }
            _ => vec![redis::cmd("DUMP").arg(&k).query(c).unwrap()],
        };
        let expire_at_ms: i64 = redis::cmd("PEXPIRETIME").arg(&k).query(c).unwrap();
        out.insert(
            k,
            KeyDump {
                kind,
                value,
                expire_at_ms,
            },
        );
    }
    out
}

/// Assert two servers hold exactly the same data (values and absolute expiries).
pub fn assert_same_data(a: &mut redis::Connection, b: &mut redis::Connection) {
    let da = dump_all(a);
    let db = dump_all(b);
    if da != db {
        let keys: std::collections::BTreeSet<_> = da.keys().chain(db.keys()).collect();
        let mut diff = String::new();
        for k in keys {
            if da.get(k) != db.get(k) {
                diff += &format!(
                    "key {:?}:\n  left:  {:?}\n  right: {:?}\n",
                    String::from_utf8_lossy(k),
                    da.get(k),
                    db.get(k)
                );
            }
        }
        panic!("data differs:\n{diff}");
    }
}

/// Server error text as the server sent it, e.g. `"ERR invalid AT"`, `"WRONGTYPE ..."`.
pub fn err_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(c), Some(d)) => format!("{c} {d}"),
        (Some(c), None) => c.to_string(),
        _ => e.to_string(),
    }
}

/// Run `cmd` expecting an error reply; returns its text. Panics on success.
pub fn expect_err(c: &mut redis::Connection, cmd: &redis::Cmd) -> String {
    match cmd.query::<redis::Value>(c) {
        Ok(v) => panic!("expected an error from {:?}, got {:?}", cmd_text(cmd), v),
        Err(e) => err_text(&e),
    }
}

/// Printable form of a command (for messages).
pub fn cmd_text(cmd: &redis::Cmd) -> String {
    cmd.args_iter()
        .map(|a| match a {
            redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
            redis::Arg::Cursor => "<cursor>".into(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Build a command from string args: `cmd(&["RV.ADD", "k", "m"])`.
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

/// Whether the file exists under the server dir (e.g. "appendonlydir", "dump.rdb").
pub fn exists_in(dir: &Path, name: &str) -> bool {
    dir.join(name).exists()
}

/// Keyspace events `(event, key)` received on `ps` until one for the key
/// `sentinel` (which the test fires last, so a missing event times out instead
/// of hanging).
pub fn events_until_sentinel(ps: &mut redis::PubSub<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        let msg = ps.get_message().expect("notification (timed out?)");
        let chan = msg.get_channel_name().to_string();
        let ev = chan.rsplit(':').next().unwrap().to_string();
        let key: Vec<u8> = msg.get_payload().unwrap();
        let key = String::from_utf8_lossy(&key).into_owned();
        if key == "sentinel" {
            return out;
        }
        out.push((ev, key));
    }
}

/// Turns every keyspace notification on (through `c`) and subscribes `sub`, a
/// connection of its own, to every key event of db 0, with a read timeout so
/// a missing event fails instead of hanging. Read with [`events_until_sentinel`].
pub fn subscribe_keyevents<'a>(
    c: &mut redis::Connection,
    sub: &'a mut redis::Connection,
) -> redis::PubSub<'a> {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg("KEA")
        .query(c)
        .expect("CONFIG SET notify-keyspace-events");
    let mut ps = sub.as_pubsub();
    ps.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    ps.psubscribe("__keyevent@0__:*").unwrap();
    ps
}
