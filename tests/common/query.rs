//! Query helpers shared by every test file: run a command and panic with its
//! text and the server's error, read `INFO recipes`, and take seeds from the
//! environment so a failing random test can be replayed.
//!
//! ```ignore
//! let n: i64 = q(c, &["RV.LEN", "k"]);
//! let v: Value = q_bin(c, &[b"HCOUNTER.DATA", b"k", b"day", b"\xff:\x00"]);
//! q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60"]);
//! let calls = recipes_info(c, "rv_add_calls");     // or srv.recipes_info(..)
//! let seed = seed_from_env("RV_SEED", 0);           // prints how to replay
//! ```

use super::{cmd, cmd_text, err_text, info_field, now_ms, wait_until, Server};
use redis::{Connection, FromRedisValue, Value};
use std::time::Duration;

/// Runs `k`; on an error reply panics with the command text and the error.
/// A read interrupted while it waits for its reply is sent again (see
/// [`interrupted`]).
pub fn run<T: FromRedisValue>(c: &mut Connection, k: &redis::Cmd) -> T {
    let mut reply = k.query(c);
    for _ in 0..3 {
        match &reply {
            Err(e) if interrupted(e) && is_read(k) => reply = k.query(c),
            _ => break,
        }
    }
    reply.unwrap_or_else(|e| panic!("{}: {}", cmd_text(k), err_text(&e)))
}

/// Whether a wait for a reply was cut by EINTR: a socket with a read timeout
/// (the tests' connections have one, so a hung server fails a test instead of
/// hanging it) fails a blocked read with EINTR when the process is stopped
/// and resumed, even without a signal handler (signal(7)). The client then
/// skips that command's late reply, so sending a read again is safe; a write
/// is not sent twice.
fn interrupted(e: &redis::RedisError) -> bool {
    // The client keeps the io::Error private; its text names EINTR.
    e.is_io_error() && e.to_string().contains("(os error 4)")
}

/// Whether `k` only reads (by name: the families' reads and the core reads
/// the tests use), so sending it twice changes nothing.
fn is_read(k: &redis::Cmd) -> bool {
    let Some(redis::Arg::Simple(name)) = k.args_iter().next() else {
        return false;
    };
    let name = String::from_utf8_lossy(name).to_ascii_uppercase();
    let verb = name.rsplit('.').next().unwrap_or_default();
    let family_read = name.contains('.')
        && matches!(
            verb,
            "GET" | "LEN" | "RANGE" | "TOP" | "TOP24" | "COUNT" | "INFO" | "DATA" | "PARTITIONS"
        );
    let core_read = matches!(
        verb,
        "GET"
            | "EXISTS"
            | "TTL"
            | "PTTL"
            | "TYPE"
            | "DUMP"
            | "DBSIZE"
            | "PING"
            | "INFO"
            | "ZRANGE"
            | "ZREVRANGE"
            | "ZCARD"
            | "ZSCORE"
            | "LRANGE"
            | "LLEN"
            | "SCAN"
    );
    family_read || core_read
}

/// `q(c, &["RV.ADD", "k", "m"])`: runs the command built from string args,
/// converts its reply to `T`; panics with the command and the error otherwise.
pub fn q<T: FromRedisValue>(c: &mut Connection, args: &[&str]) -> T {
    run(c, &cmd(args))
}

/// `q_bin(c, &[b"HCOUNTER.INCR", b"k", b"p", b"a\x00:\xff"])`: like [`q`], for
/// arguments that are arbitrary bytes (the command name first).
pub fn q_bin<T: FromRedisValue>(c: &mut Connection, args: &[&[u8]]) -> T {
    let mut k = redis::cmd(&String::from_utf8_lossy(args[0]));
    for a in &args[1..] {
        k.arg(*a);
    }
    run(c, &k)
}

/// Runs a command that must reply `OK`.
pub fn q_ok(c: &mut Connection, args: &[&str]) {
    let v: Value = q(c, args);
    assert!(
        matches!(v, Value::Okay) || v == Value::SimpleString("OK".into()),
        "{args:?}: expected OK, got {v:?}"
    );
}

/// `EXISTS key` as a bool.
pub fn exists(c: &mut Connection, key: &str) -> bool {
    q::<i64>(c, &["EXISTS", key]) == 1
}

/// `PEXPIRETIME key`: absolute expiry in ms, -1 without one, -2 without the key.
pub fn pexpiretime(c: &mut Connection, key: &str) -> i64 {
    q(c, &["PEXPIRETIME", key])
}

/// A field of `INFO recipes` as an integer. `field` is the name without the
/// module prefix (`"rv_add_calls"`, `"topn_members"`); the full name works too.
pub fn recipes_info(c: &mut Connection, field: &str) -> i64 {
    let info: String = q(c, &["INFO", "recipes"]);
    recipes_info_field(&info, field)
}

fn recipes_info_field(info: &str, field: &str) -> i64 {
    info_field(info, &format!("recipes_{field}"))
        .or_else(|| info_field(info, field))
        .unwrap_or_else(|| panic!("INFO recipes has no {field}:\n{info}"))
        .parse()
        .unwrap_or_else(|e| panic!("INFO recipes field {field}: {e}"))
}

/// Waits until the `INFO recipes` counter `field` reaches `total` (work
/// done in the background, in slices on the server's timer), for up to 10 s,
/// and returns its value; panics with `ctx` and the value when it does not.
pub fn wait_recipes_info(c: &mut Connection, field: &str, total: i64, ctx: &str) -> i64 {
    let done = wait_until(Duration::from_secs(10), || recipes_info(c, field) >= total);
    let n = recipes_info(c, field);
    assert!(done, "{ctx}: {field} is {n}, not {total} yet");
    n
}

/// Moves keys of db 0 in every way Redis moves a key: `RENAME r r2`,
/// `MOVE m 3`, `SWAPDB 0 5`, then in db 5 (where the connection stays)
/// `COPY cp cp2` and `DUMP rs` + `RESTORE rs2`. Answers where the keys are
/// now, as (db, key).
pub fn move_keys_every_way(c: &mut Connection) -> [(&'static str, &'static str); 7] {
    q_ok(c, &["RENAME", "r", "r2"]);
    let _: i64 = q(c, &["MOVE", "m", "3"]);
    q_ok(c, &["SWAPDB", "0", "5"]);
    q_ok(c, &["SELECT", "5"]);
    let _: i64 = q(c, &["COPY", "cp", "cp2"]);
    let payload: Vec<u8> = q(c, &["DUMP", "rs"]);
    let _: Value = run(c, redis::cmd("RESTORE").arg("rs2").arg(0).arg(&payload));
    [
        ("5", "r2"),
        ("3", "m"),
        ("5", "w"),
        ("5", "cp"),
        ("5", "cp2"),
        ("5", "rs"),
        ("5", "rs2"),
    ]
}

impl Server {
    /// [`recipes_info`] on a fresh connection to this server.
    pub fn recipes_info(&self, field: &str) -> i64 {
        recipes_info_field(&self.info("recipes"), field)
    }
}

/// The name of the running test (the test harness names each thread after it).
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("test")
        .rsplit("::")
        .next()
        .unwrap_or("test")
        .to_string()
}

/// A seed: `$var` when set, else the clock plus `offset` (so two tests started
/// in the same millisecond differ). Printed, so a failure can be replayed with
/// `var=<seed>`.
pub fn seed_from_env(var: &str, offset: u64) -> u64 {
    let seed = match std::env::var(var) {
        Ok(v) => v
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{var} must be an integer, not {v:?}")),
        Err(_) => (now_ms() as u64).wrapping_add(offset),
    };
    eprintln!("{}: seed {seed} (rerun with {var}={seed})", test_name());
    seed
}

/// `n` seeds, or only `$var` when it is set (replaying one of them). Printed.
pub fn seeds_from_env(var: &str, n: u64) -> Vec<u64> {
    let seeds: Vec<u64> = match std::env::var(var) {
        Ok(_) => return vec![seed_from_env(var, 0)],
        Err(_) => {
            let base = now_ms() as u64;
            (0..n).map(|i| base.wrapping_add(i * 7919)).collect()
        }
    };
    eprintln!(
        "{}: seeds {seeds:?} (rerun one with {var}=<seed>)",
        test_name()
    );
    seeds
}

/// A reply as short text, to compare against an expected answer: integers
/// as they are, strings with bytes outside printable ASCII escaped (`\x00`),
/// `OK`, `nil`, arrays as `[a, b]`, errors as `ERR: <text>`.
pub fn reply_text(v: &Value) -> String {
    match v {
        Value::Nil => "nil".into(),
        Value::Int(n) => n.to_string(),
        Value::BulkString(b) => b.escape_ascii().to_string(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Double(d) => d.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::Array(items) | Value::Set(items) => {
            let parts: Vec<String> = items.iter().map(reply_text).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Map(pairs) => {
            let parts: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", reply_text(k), reply_text(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::ServerError(e) => format!("ERR: {e:?}"),
        other => format!("{other:?}"),
    }
}
