//! The gem redis_counters as ULIST and HCOUNTER replace it: its month scope of
//! daily partitions, and its Blocking list's add (UniqueValuesLists, which
//! UniqueHashCounter builds on), run as the gem runs it.

use redis::Value;

use crate::control::err_text;

/// The gem's scope (its "cluster", start_month_date) and 30 daily partitions.
pub(crate) const MONTH: &str = "2024-05-01";
pub(crate) const DAYS: u64 = 30;
/// Concurrent clients of the gem comparisons.
pub(crate) const CLIENTS: usize = 8;

/// Day partition `d` (0..DAYS) of [`MONTH`].
pub(crate) fn day(d: u64) -> String {
    format!("2024-05-{:02}", d + 1)
}

/// The [`DAYS`] day partitions.
pub(crate) fn days() -> Vec<String> {
    (0..DAYS).map(day).collect()
}

/// User id number `n`.
pub(crate) fn user(n: u64) -> u64 {
    100_000_000 + n
}

fn q<T: redis::FromRedisValue>(c: &mut redis::Connection, cmd: &redis::Cmd) -> Result<T, String> {
    cmd.query(c).map_err(|e| err_text(&e))
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
pub(crate) fn blocking_add(
    c: &mut redis::Connection,
    name: &str,
    scope: &str,
    partition: &str,
    value: &str,
    also: &[redis::Cmd],
) -> Result<(bool, u64), String> {
    let list = format!("{name}:{scope}:partitions");
    let today = format!("{name}:{scope}:{partition}");
    let mut attempts = 0;
    loop {
        attempts += 1;
        q::<()>(c, redis::cmd("WATCH").arg(&list))?;
        let parts: Vec<String> = q(c, redis::cmd("LRANGE").arg(&list).arg(0).arg(-1))?;
        let parts: Vec<&String> = parts.iter().filter(|p| !p.is_empty()).collect();
        let keys: Vec<String> = parts
            .iter()
            .map(|p| format!("{name}:{scope}:{p}"))
            .collect();
        for k in &keys {
            q::<()>(c, redis::cmd("WATCH").arg(k))?;
        }
        let mut exists = false;
        for k in keys.iter().rev() {
            if q::<bool>(c, redis::cmd("SISMEMBER").arg(k).arg(value))? {
                exists = true;
                break;
            }
        }
        if exists {
            q::<()>(c, &redis::cmd("UNWATCH"))?;
            return Ok((false, attempts));
        }
        let mut tx = redis::pipe();
        tx.atomic().cmd("SADD").arg(&today).arg(value);
        if !parts.iter().any(|p| *p == partition) {
            tx.cmd("RPUSH").arg(&list).arg(partition);
        }
        for cmd in also {
            tx.add_command(cmd.clone());
        }
        let exec: Value = tx.query(c).map_err(|e| err_text(&e))?;
        if !matches!(exec, Value::Nil) {
            return Ok((true, attempts));
        }
    }
}
