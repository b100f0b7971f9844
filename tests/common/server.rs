//! The server starter: a real `redis-server` with the module loaded, on a
//! free loopback port and a fresh temp dir, ready (PING answered by our pid,
//! dataset loaded) within a startup deadline, stopped by pid.
//!
//! Shared by the tests (re-exported by `tests/common/mod.rs`) and the bench
//! (`examples/bench`, which includes this file with `#[path]`), so it uses
//! nothing else from `tests/common`.
//!
//! Env: `RECIPES_MODULE` = path of the .so (else found next to the running
//! binary); `REDIS_SERVER` = redis-server binary (default `redis-server`);
//! `REDIS_CLI` = the matching redis-cli ([`redis_cli`]); `REDIS_CHECK_AOF` =
//! the matching redis-check-aof ([`redis_check_aof`]); `KEEP_TMP` = keep temp
//! dirs (their path is printed).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const STARTUP_DEADLINE: Duration = Duration::from_secs(15);
pub const STOP_DEADLINE: Duration = Duration::from_secs(10);
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Temp dirs of servers that die with their caller: the caller's pid follows,
/// so the next caller can remove what a killed one left behind.
const BOUND_DIR_PREFIX: &str = "recipes-bound";

/// Path of the module .so: `$RECIPES_MODULE`, else `librecipes.so` in a
/// directory above the running binary (tests: `<target>/<profile>/deps/<bin>`;
/// examples: `<target>/<profile>/examples/<bin>`).
pub fn find_module() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("RECIPES_MODULE") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("RECIPES_MODULE={} does not exist", p.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut tried = Vec::new();
    for dir in exe.ancestors().skip(1).take(3) {
        let cand = dir.join("librecipes.so");
        if cand.is_file() {
            return Ok(cand);
        }
        tried.push(cand);
    }
    Err(format!(
        "module librecipes.so not found (tried {tried:?}); build it with `cargo build` \
         or set RECIPES_MODULE=/path/to/librecipes.so"
    ))
}

/// [`find_module`], panicking when there is none.
pub fn module_path() -> PathBuf {
    find_module().unwrap_or_else(|e| panic!("{e}"))
}

/// The redis-server to run: `$REDIS_SERVER`, else `redis-server`.
pub fn redis_server() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
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

fn fresh_dir(prefix: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        nanos
    ));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Removes the temp dirs of bound servers whose caller is gone (SIGKILL
/// leaves them; the server itself died with its caller).
fn remove_orphan_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(BOUND_DIR_PREFIX)
            .and_then(|r| r.strip_prefix('-'))
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

#[derive(Clone, Default)]
pub struct ServerBuilder {
    extra: Vec<String>,
    env: Vec<(String, String)>,
    binary: Option<String>,
    module: Option<PathBuf>,
    module_args: Vec<String>,
    load_module: bool,
    bound: bool,
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
    /// An environment variable for the server process (e.g. the module's
    /// test-only `RECIPES_FAULT_PANIC_KEY`).
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }
    /// Another server binary than `REDIS_SERVER`'s (a test that needs one
    /// server in particular, e.g. Valkey 9 for atomic slot migration).
    pub fn binary(mut self, path: &str) -> Self {
        self.binary = Some(path.to_string());
        self
    }
    /// Another module .so than [`find_module`]'s (an older build of the
    /// module, for upgrade tests).
    pub fn module(mut self, path: &Path) -> Self {
        self.module = Some(path.to_path_buf());
        self
    }
    /// Start without loading the module (plain Redis).
    pub fn without_module(mut self) -> Self {
        self.load_module = false;
        self
    }
    /// For a long-running caller (the bench) that must leave no server
    /// behind: the server gets SIGKILL when the thread that started it ends
    /// (Linux), and runs in a process group of its own, so a terminal's
    /// Ctrl-C reaches the caller only, which then stops it itself.
    pub fn dies_with_caller(mut self) -> Self {
        self.bound = true;
        self
    }
    pub fn start(self) -> Server {
        self.try_start().unwrap_or_else(|e| panic!("{e}"))
    }
    /// [`ServerBuilder::start`], answering why the server did not start.
    pub fn try_start(self) -> Result<Server, StartFailure> {
        let prefix = if self.bound {
            remove_orphan_dirs();
            BOUND_DIR_PREFIX
        } else {
            "recipes-test"
        };
        let mut s = Server {
            port: 0,
            dir: fresh_dir(prefix),
            child: None,
            builder: self,
        };
        s.try_spawn(true)?;
        Ok(s)
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
            let module = self.builder.module.clone().unwrap_or_else(module_path);
            a.push(module.display().to_string());
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
        let bin = self.builder.binary.clone().unwrap_or_else(redis_server);
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
            let mut command = Command::new(&bin);
            command
                .args(self.command_line())
                .envs(self.builder.env.iter().map(|(k, v)| (k, v)))
                .current_dir(&self.dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if self.builder.bound {
                bind_to_caller(&mut command);
            }
            let child = command.spawn().map_err(|e| StartFailure {
                what: format!("cannot run {bin}: {e} (is redis-server installed?)"),
                status: None,
                log: String::new(),
            })?;
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

    /// [`Server::try_restart_with`] with `extra` for this start only: later
    /// restarts use the server's own config.
    pub fn try_restart_once_with(&mut self, extra: &[(&str, &str)]) -> Result<(), StartFailure> {
        let configured = self.builder.clone();
        let started = self.try_restart_with(extra);
        self.builder = configured;
        started
    }

    /// Changes the configuration of the next starts (e.g. another module
    /// build, or `--replicaof`: an upgrade restarts a server on a newer
    /// build as a replica); the running process is left alone.
    pub fn reconfigure(&mut self, change: impl FnOnce(ServerBuilder) -> ServerBuilder) {
        self.builder = change(std::mem::take(&mut self.builder));
    }

    /// SIGKILL, as a crash: nothing is flushed or saved. `restart()` brings it back.
    pub fn crash(&mut self) {
        self.kill_hard();
    }
}

/// The [`ServerBuilder::dies_with_caller`] part of starting the process.
fn bind_to_caller(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and makes only
    // async-signal-safe calls (setpgid, prctl), touching no memory of ours.
    unsafe {
        command.pre_exec(|| {
            libc::setpgid(0, 0);
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
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
