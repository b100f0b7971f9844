//! The control side: setup, measurements, INFO / SLOWLOG / MEMORY reads, over
//! the `redis` crate; bulk loads go through the lean [`Pipe`]. Also the
//! bench's servers (the tests' starter, `tests/common/server.rs`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use redis::{FromRedisValue, Value};

use crate::pipe::{enc_line, Pipe};
use crate::server::Server;
use crate::settings::stopped;

/// A server with the module that dies with the bench; `args` are appended
/// to its command line (e.g. `--replicaof`).
pub(crate) fn start_server(args: &[&str]) -> Result<Server, String> {
    Server::builder()
        .dies_with_caller()
        .args(args)
        .try_start()
        .map_err(|e| e.to_string())
}

/// A replica of the server on `port` (not yet in sync: see [`replica_synced`]).
pub(crate) fn start_replica(port: u16) -> Result<Server, String> {
    start_server(&["--replicaof", "127.0.0.1", &port.to_string()])
}

/// A `redis` connection to the server on `port`, patient enough for the
/// slow commands of setup (a union of 24 big zsets, FLUSHALL of millions).
pub(crate) fn connect(port: u16) -> Result<redis::Connection, String> {
    let url = format!("redis://127.0.0.1:{port}/");
    let c = redis::Client::open(url)
        .and_then(|cl| cl.get_connection())
        .map_err(|e| format!("connect to port {port}: {e}"))?;
    c.set_read_timeout(Some(Duration::from_secs(120)))
        .and_then(|()| c.set_write_timeout(Some(Duration::from_secs(120))))
        .map_err(|e| format!("port {port}: {e}"))?;
    Ok(c)
}

/// A server's error reply as it sent it (`ERR ...`), other errors as the crate words them.
pub(crate) fn err_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(c), Some(d)) => format!("{c} {d}"),
        (Some(c), None) => c.to_string(),
        _ => e.to_string(),
    }
}

/// A reply as text, for messages and notes.
pub(crate) fn text(v: &Value) -> String {
    match v {
        Value::Nil => "(nil)".into(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(text).collect::<Vec<_>>().join(", ")
        ),
        v => String::from_owned_redis_value(v.clone()).unwrap_or_else(|_| format!("{v:?}")),
    }
}

/// The counts of a `member, count, ...` reply (TOPN WITHCOUNTS or ZREVRANGE WITHSCORES).
pub(crate) fn reply_counts(v: &Value) -> Vec<i64> {
    match v {
        Value::Array(items) => items
            .chunks(2)
            .filter_map(|p| p.get(1).and_then(|x| i64::from_redis_value(x).ok()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The control connection of a server.
pub(crate) struct Conn {
    redis: redis::Connection,
    port: u16,
    /// The db selected with [`Conn::select`], for the load connection too.
    db: u64,
    /// Opened by the first load.
    pipe: Option<Pipe>,
    /// Commands known to the server (`COMMAND INFO`), by lowercase name.
    known: HashMap<String, bool>,
}

impl Conn {
    pub fn open(port: u16) -> Result<Conn, String> {
        Ok(Conn {
            redis: connect(port)?,
            port,
            db: 0,
            pipe: None,
            known: HashMap::new(),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// One command; an error reply becomes `Err` naming the command.
    pub fn query<T: FromRedisValue>(&mut self, cmd: &redis::Cmd) -> Result<T, String> {
        cmd.query(&mut self.redis).map_err(|e| {
            let name = cmd.args_iter().next().map(|a| match a {
                redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
                redis::Arg::Cursor => String::new(),
            });
            format!("{}: {}", name.unwrap_or_default(), err_text(&e))
        })
    }

    /// A command given as one whitespace-separated line.
    pub fn cmd(&mut self, line: &str) -> Result<Value, String> {
        let mut words = line.split_whitespace();
        let mut cmd = redis::cmd(words.next().unwrap_or_default());
        cmd.arg(words.collect::<Vec<_>>());
        cmd.query(&mut self.redis)
            .map_err(|e| format!("{line}: {}", err_text(&e)))
    }

    /// SELECT `db`, on this connection and the one loads use.
    pub fn select(&mut self, db: u64) -> Result<(), String> {
        self.query::<()>(redis::cmd("SELECT").arg(db))?;
        if let Some(p) = &mut self.pipe {
            let mut out = Vec::new();
            enc_line(&mut out, &format!("SELECT {db}"));
            p.exchange(&out, 1)?;
        }
        self.db = db;
        Ok(())
    }

    /// Whether the server knows a command (`COMMAND INFO name` is not nil).
    pub fn has(&mut self, name: &str) -> Result<bool, String> {
        let name = name.to_ascii_lowercase();
        if let Some(&k) = self.known.get(&name) {
            return Ok(k);
        }
        let v: Value = self.query(redis::cmd("COMMAND").arg("INFO").arg(&name))?;
        let k = matches!(&v, Value::Array(items) if matches!(items.first(), Some(Value::Array(_))));
        self.known.insert(name, k);
        Ok(k)
    }

    /// The lean connection loads use, opened on first use, in the selected db.
    fn pipe(&mut self) -> Result<&mut Pipe, String> {
        if self.pipe.is_none() {
            let mut p = Pipe::open(self.port).map_err(|e| format!("connect: {e}"))?;
            if self.db != 0 {
                let mut out = Vec::new();
                enc_line(&mut out, &format!("SELECT {}", self.db));
                p.exchange(&out, 1)?;
            }
            self.pipe = Some(p);
        }
        Ok(self.pipe.as_mut().expect("opened above"))
    }

    /// Bulk load: `f(i, out)` appends command number i (0..n); sent in
    /// pipelines on a lean connection of the same db. The first error reply
    /// aborts the load.
    pub fn load(
        &mut self,
        what: &str,
        n: u64,
        mut f: impl FnMut(u64, &mut Vec<u8>),
    ) -> Result<(), String> {
        const BATCH: u64 = 1024;
        let pipe = self.pipe().map_err(|e| format!("{what}: {e}"))?;
        let mut buf = Vec::new();
        let mut i = 0;
        while i < n {
            if stopped() {
                return Err("interrupted".into());
            }
            let k = BATCH.min(n - i);
            buf.clear();
            for j in i..i + k {
                f(j, &mut buf);
            }
            pipe.exchange(&buf, k as usize)
                .map_err(|e| format!("{what}: {e}"))?;
            i += k;
        }
        Ok(())
    }

    /// The command `line` on the load connection, its reply skipped: for a
    /// command whose server-side time is measured. When the general client
    /// parses a big reply into values, the server's own time per call rises
    /// on this 2-CPU machine (KEYS of 10,000 keys, INFO commandstats: 0.8-1.1
    /// ms with the reply skipped, 1.2-2.3 ms parsed, in A/B runs).
    pub fn run(&mut self, line: &str) -> Result<(), String> {
        let mut out = Vec::new();
        enc_line(&mut out, line);
        self.pipe()?
            .exchange(&out, 1)
            .map_err(|e| format!("{line}: {e}"))
    }

    pub fn script_load(&mut self, lua: &str) -> Result<String, String> {
        self.query(redis::cmd("SCRIPT").arg("LOAD").arg(lua))
    }

    pub fn memory_usage(&mut self, key: &str) -> Result<i64, String> {
        self.query(
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(key)
                .arg("SAMPLES")
                .arg(0),
        )
        .map_err(|e| format!("MEMORY USAGE {key}: {e}"))
    }

    /// `OBJECT ENCODING key`.
    pub fn encoding(&mut self, key: &str) -> Result<String, String> {
        self.query(redis::cmd("OBJECT").arg("ENCODING").arg(key))
    }

    pub fn info_field(&mut self, section: &str, field: &str) -> Result<String, String> {
        let info: String = self.query(redis::cmd("INFO").arg(section))?;
        let pat = format!("{field}:");
        info.lines()
            .find_map(|l| l.strip_prefix(pat.as_str()).map(|x| x.trim().to_string()))
            .ok_or_else(|| format!("INFO {section}: no {field}"))
    }

    /// An integer field of `INFO <section>`.
    pub fn info_int(&mut self, section: &str, field: &str) -> Result<i64, String> {
        self.info_field(section, field)?
            .parse()
            .map_err(|e| format!("{field}: {e}"))
    }

    /// Server CPU seconds (user + sys) so far.
    pub fn server_cpu(&mut self) -> Result<f64, String> {
        let info: String = self.query(redis::cmd("INFO").arg("cpu"))?;
        let mut t = 0.0;
        for l in info.lines() {
            if let Some(x) = l
                .strip_prefix("used_cpu_user:")
                .or_else(|| l.strip_prefix("used_cpu_sys:"))
            {
                t += x.trim().parse::<f64>().unwrap_or(0.0);
            }
        }
        Ok(t)
    }

    /// Logs every command slower than `threshold_us` into an empty SLOWLOG
    /// of `len` entries, until [`Conn::slowlog_take`].
    pub fn slowlog_arm(&mut self, len: u64, threshold_us: u64) -> Result<(), String> {
        self.cmd(&format!("CONFIG SET slowlog-max-len {len}"))?;
        self.cmd(&format!(
            "CONFIG SET slowlog-log-slower-than {threshold_us}"
        ))?;
        self.cmd("SLOWLOG RESET").map(|_| ())
    }

    /// The SLOWLOG's entries, oldest first; restores the server's defaults
    /// and empties it.
    pub fn slowlog_take(&mut self, len: u64) -> Result<Vec<SlowEntry>, String> {
        self.cmd("CONFIG SET slowlog-log-slower-than 10000")?;
        let log = self.cmd(&format!("SLOWLOG GET {len}"));
        self.cmd("CONFIG SET slowlog-max-len 128")?;
        self.cmd("SLOWLOG RESET")?;
        let Value::Array(entries) = log? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(entries.len());
        // Newest first on the wire.
        for e in entries.iter().rev() {
            let Value::Array(f) = e else { continue };
            let (Some(d), Some(Value::Array(args))) = (f.get(2), f.get(3)) else {
                continue;
            };
            out.push(SlowEntry {
                us: i64::from_redis_value(d).map_err(|e| format!("SLOWLOG: {e}"))?,
                args: args.iter().map(text).collect(),
            });
        }
        Ok(out)
    }
}

/// One SLOWLOG entry.
pub(crate) struct SlowEntry {
    /// Server-side time.
    pub us: i64,
    /// The command as logged (long ones are cut by the server).
    pub args: Vec<String>,
}

impl SlowEntry {
    /// The command's name, upper case.
    pub fn name(&self) -> String {
        self.args
            .first()
            .map(|a| a.to_ascii_uppercase())
            .unwrap_or_default()
    }
}

/// Whether the replica on `rc` is linked and has applied everything `c`'s master sent.
pub(crate) fn replica_synced(c: &mut Conn, rc: &mut Conn) -> Result<bool, String> {
    Ok(rc.info_field("replication", "master_link_status")? == "up"
        && c.info_field("replication", "master_repl_offset")?
            == rc.info_field("replication", "slave_repl_offset")?)
}

/// Sleeps `d`, in steps, returning early with an error on Ctrl-C.
pub(crate) fn sleep_checked(d: Duration) -> Result<(), String> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stopped() {
            return Err("interrupted".into());
        }
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
    Ok(())
}

/// Waits until `ok` holds, checking every 50 ms, at most `max`.
pub(crate) fn wait_for(
    what: &str,
    max: Duration,
    mut ok: impl FnMut() -> Result<bool, String>,
) -> Result<(), String> {
    let deadline = Instant::now() + max;
    while !ok()? {
        if Instant::now() > deadline {
            return Err(format!("{what}: not after {} s", max.as_secs()));
        }
        sleep_checked(Duration::from_millis(50))?;
    }
    Ok(())
}
