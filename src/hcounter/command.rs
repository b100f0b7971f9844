//! HCOUNTER command handlers.

use super::config::COMPACT_MAX;
use super::counter::{Count, HCounter, Place, DECLARATION};
use super::value::HCOUNTER_TYPE;
use crate::args::{
    int_in, opt_int_in, printable, CmdError, OptionSpec, Takes, MAX_TIME_MS, MAX_TTL_S,
};
use crate::server::command::Args;
use crate::server::{reclaim, reply_info, Arg, Class, Ctx, Key, RStr, AT};
use crate::stats::Stat;
use crate::tuples::encoding;
use crate::tuples::index::Filter;
use crate::tuples::page::Page;
use crate::tuples::schema::{Pairs, Role, Schema};
use smallvec::SmallVec;
use std::ffi::CStr;

/// Partitions removed because their TTL ran out (on a replica: as replicated).
pub(super) static EXPIRED_PARTITIONS: Stat = Stat::new("hcounter_expired_partitions");

pub(super) const CREATE_OPTIONS: [OptionSpec; 2] =
    [("TTL", Takes::Value), ("FLOAT", Takes::Nothing)];
pub(super) const AT_OPTION: [OptionSpec; 1] = [("AT", Takes::Value)];

/// The names a cell is addressed by (INCR, INCRBY, GET, SET).
const CELL: [Role; 2] = [Role::Partition, Role::Group];
/// What a unique increment also names.
const UNIQUE: [Role; 4] = [Role::Partition, Role::Group, Role::Unique, Role::Scope];
/// What a remembered unique tuple is named by (SEEN).
const TUPLE: [Role; 3] = [Role::Partition, Role::Unique, Role::Scope];
/// The names a filter of DATA, PARTITIONS and DEL may fix.
const WHERE: [Role; 1] = [Role::Partition];

fn no_such_counter() -> CmdError {
    CmdError::invalid("no such counter; create it with HCOUNTER.CREATE")
}

/// `HCOUNTER.CREATE counter [PARTITION name ...] [GROUP name ...] [TTL s]
/// [FLOAT] [UNIQUE name ... [SCOPE name ...]]` -> OK, also when the counter
/// exists with the same declaration (then nothing changes); an error naming
/// the difference when it exists with another. Deterministic: replicated
/// verbatim (not when nothing changed).
pub fn create(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let declarer = ctx.declarer();
    let (schema, [ttl, float]) =
        Schema::parse(&args.bytes[2..], &DECLARATION, &CREATE_OPTIONS, declarer)?;
    if !schema.of(Role::Scope).is_empty() && schema.of(Role::Unique).is_empty() {
        return Err(CmdError::invalid("SCOPE needs UNIQUE names"));
    }
    let ttl = opt_int_in("TTL", ttl, 1, MAX_TTL_S)?;
    let mut key = ctx.open(args.raw(1), true);
    if let Some(counter) = key.value::<HCounter>(&HCOUNTER_TYPE)? {
        let shown = |t: Option<i64>| t.map_or("(none)".to_string(), |s| s.to_string());
        let difference = counter
            .schema()
            .difference(&schema, &DECLARATION)
            .or_else(|| {
                (counter.ttl_s() != ttl)
                    .then(|| format!("TTL {} (asked: TTL {})", shown(counter.ttl_s()), shown(ttl)))
            })
            .or_else(|| {
                let word = |f: bool| if f { "FLOAT" } else { "integer counts" };
                (counter.is_float() != float.is_some()).then(|| {
                    format!(
                        "{} (asked: {})",
                        word(counter.is_float()),
                        word(float.is_some())
                    )
                })
            });
        return match difference {
            Some(d) => Err(CmdError::invalid(format!(
                "the counter exists with another declaration: {d}"
            ))),
            None => {
                ctx.reply_ok();
                Ok(())
            }
        };
    }
    key.set_value(&HCOUNTER_TYPE, HCounter::new(schema, ttl, float.is_some()));
    ctx.notify(Class::Module, c"hcounter.create", args.raw(1));
    ctx.replicate_verbatim();
    ctx.reply_ok();
    Ok(())
}

/// An increment (or a replicated count) of the counter's kind.
fn parse_count(counter: &HCounter, name: &str, bytes: &[u8]) -> Result<Count, CmdError> {
    if !counter.is_float() {
        return int_in(name, bytes, i64::MIN, i64::MAX).map(Count::Int);
    }
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|f| f.is_finite())
        .map(Count::Float)
        .ok_or_else(|| {
            CmdError::invalid(format!(
                "{name} must be a finite number, not '{}'",
                printable(bytes)
            ))
        })
}

fn reply_count(ctx: Ctx, count: Count) {
    match count {
        Count::Int(n) => ctx.reply_int(n),
        Count::Float(_) => ctx.reply_bytes(count.to_string().as_bytes()),
    }
}

/// The encodings of the call's cell (and unique tuple, if the counter
/// counts unique tuples and `pairs` names one).
fn place(counter: &HCounter, pairs: &Pairs) -> Place {
    let schema = counter.schema();
    let mut place = Place {
        partition: Default::default(),
        cell: Default::default(),
        seen: Default::default(),
    };
    for value in pairs.values_of(schema, Role::Partition) {
        encoding::push_element(&mut place.partition, value);
    }
    for &i in counter.cell_names() {
        encoding::push_element(&mut place.cell, pairs.value(i).unwrap_or_default());
    }
    for role in [Role::Scope, Role::Unique] {
        for &i in schema.of(role) {
            encoding::push_element(&mut place.seen, pairs.value(i).unwrap_or_default());
        }
    }
    place
}

/// The `name value` pairs of a write's names and its AT, checked against
/// the counter's schema: exactly the names of `roles`.
fn write_pairs<'a>(
    counter: &HCounter,
    tokens: &[&'a [u8]],
    roles: &[Role],
) -> Result<(Pairs<'a>, Option<i64>), CmdError> {
    let (pairs, [at]) = Pairs::parse(counter.schema(), tokens, &AT_OPTION)?;
    pairs.check(counter.schema(), roles, &[])?;
    Ok((pairs, opt_int_in("AT", at, 0, MAX_TIME_MS)?))
}

/// Each name of `roles` once with its value, for a replicated effect.
fn named<'a>(schema: &'a Schema, pairs: &Pairs<'a>, roles: &[Role]) -> Vec<&'a [u8]> {
    let mut indices: Vec<u16> = Vec::new();
    for &role in roles {
        for &i in schema.of(role) {
            if !indices.contains(&i) {
                indices.push(i);
            }
        }
    }
    indices
        .iter()
        .flat_map(|&i| [schema.name(i), pairs.value(i).unwrap_or_default()])
        .collect()
}

/// `HCOUNTER.INCR counter [AT ms] name value ...` -> the cell's count.
pub fn incr(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    increment(ctx, args, c"HCOUNTER.INCR", None)
}

/// `HCOUNTER.INCRBY counter increment [AT ms] name value ...` -> the
/// cell's count.
pub fn incrby(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    increment(ctx, args, c"HCOUNTER.INCRBY", Some(args.bytes[2]))
}

/// INCR (`by` None: one) and INCRBY.
///
/// Replication: an integer increment goes verbatim when it names its AT,
/// else with `AT <server time>` added (the partition keeps its latest AT,
/// so a replica holds the very same data, with or without a TTL). A
/// FLOAT increment goes as its result (`HCOUNTER.SET`, after
/// `HCOUNTER.SEEN` for a unique tuple), as Redis replicates HINCRBYFLOAT.
/// A unique tuple already counted replicates nothing, unless the call
/// dropped an expired partition on the way.
fn increment(ctx: Ctx, args: &Args, cmd: &CStr, by: Option<&[u8]>) -> Result<(), CmdError> {
    let name = args.raw(1);
    let mut key = ctx.open(name, true);
    let counter = key
        .value_mut::<HCounter>(&HCOUNTER_TYPE)?
        .ok_or_else(no_such_counter)?;
    counter.set_compact_max(COMPACT_MAX.count());
    let roles: &[Role] = if counter.is_unique() { &UNIQUE } else { &CELL };
    let first = if by.is_some() { 3 } else { 2 };
    let (pairs, given_at) = write_pairs(counter, &args.bytes[first..], roles)?;
    let by = match by {
        Some(bytes) => parse_count(counter, "increment", bytes)?,
        None if counter.is_float() => Count::Float(1.0),
        None => Count::Int(1),
    };
    ctx.check_given_at(given_at)?;
    let at = given_at.unwrap_or_else(|| ctx.now_ms());
    let place = place(counter, &pairs);
    let due_before = counter.next_due();
    let outcome = counter.incr(&place, by, at).map_err(|_| match by {
        Count::Float(_) => CmdError::invalid("increment would produce NaN or Infinity"),
        Count::Int(_) => CmdError::invalid("increment or decrement would overflow"),
    })?;
    if outcome.expired > 0 {
        EXPIRED_PARTITIONS.add(outcome.expired as i64);
        ctx.notify(Class::Module, c"hcounter.expire", name);
        schedule_tear_down(ctx, name, counter);
    }
    if outcome.counted {
        ctx.notify(Class::Module, c"hcounter.incr", name);
        schedule_if_sooner(ctx, name, counter, due_before);
    }
    match outcome.count {
        Count::Float(f) if outcome.counted => {
            let schema = counter.schema();
            let at_text = at.to_string();
            if counter.is_unique() {
                let mut seen: Vec<&[u8]> = vec![b"AT", at_text.as_bytes()];
                seen.extend(named(schema, &pairs, &TUPLE));
                ctx.replicate_bytes(c"HCOUNTER.SEEN", name, &seen);
            }
            let value = Count::Float(f).to_string();
            let mut set: Vec<&[u8]> = vec![value.as_bytes(), b"AT", at_text.as_bytes()];
            set.extend(named(schema, &pairs, &CELL));
            ctx.replicate_bytes(c"HCOUNTER.SET", name, &set);
        }
        _ if outcome.counted || outcome.expired > 0 => {
            if given_at.is_some() {
                ctx.replicate_verbatim();
            } else {
                // Inline: no allocation for the usual call.
                let mut effect: SmallVec<[Arg; 16]> =
                    args.raw_from(1).iter().map(|&s| Arg::Str(s)).collect();
                effect.extend([AT.arg(), Arg::Int(at)]);
                ctx.replicate(cmd, &effect);
            }
        }
        _ => {}
    }
    reply_count(ctx, outcome.count);
    Ok(())
}

/// `HCOUNTER.GET counter name value ...` -> the cell's count (0 if none).
pub fn get(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = ctx.open(args.raw(1), false);
    // A missing counter counts 0, as a missing hash field does for HGET.
    let Some(counter) = key.value::<HCounter>(&HCOUNTER_TYPE)? else {
        ctx.reply_int(0);
        return Ok(());
    };
    let (pairs, []) = Pairs::parse::<0>(counter.schema(), &args.bytes[2..], &[])?;
    pairs.check(counter.schema(), &CELL, &[])?;
    reply_count(ctx, counter.get(&place(counter, &pairs), ctx.now_ms()));
    Ok(())
}

/// `HCOUNTER.INFO counter` -> map: the declaration (CREATE's arguments),
/// partitions, cells and unique tuples stored, partitions that expire (all
/// of them with a TTL), memory.
pub fn info(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = ctx.open(args.raw(1), false);
    let counter = key
        .value::<HCounter>(&HCOUNTER_TYPE)?
        .ok_or_else(no_such_counter)?;
    let partitions = counter.partition_count() as i64;
    let expiring = if counter.ttl_s().is_some() {
        partitions
    } else {
        0
    };
    reply_info(
        ctx,
        &counter.declaration(),
        &[
            (b"partitions", partitions),
            (b"cells", counter.cells_stored() as i64),
            (b"unique tuples", counter.seen_count() as i64),
            (b"expiring partitions", expiring),
            (b"memory", counter.mem_usage(5) as i64),
        ],
    );
    Ok(())
}

/// The filter of a read or delete: any subset of the PARTITION names, as
/// their values in declared order.
fn filter_of<'a>(schema: &Schema, tokens: &[&'a [u8]]) -> Result<Vec<Option<&'a [u8]>>, CmdError> {
    let (pairs, []) = Pairs::parse::<0>(schema, tokens, &[])?;
    pairs.check(schema, &[], &WHERE)?;
    Ok(pairs.of(schema, &WHERE))
}

/// Replies one map: `names` -> the elements of `tuples` (tuple encodings,
/// one after the other), then `value` -> `count`.
fn reply_row(ctx: Ctx, names: &[&[u8]], tuples: &[&[u8]], count: Option<Count>) {
    ctx.reply_map(names.len() + count.is_some() as usize);
    let values = tuples.iter().flat_map(|t| encoding::elements(t));
    for (name, value) in names.iter().zip(values) {
        ctx.reply_bytes(name);
        ctx.reply_bytes(&value);
    }
    if let Some(count) = count {
        ctx.reply_bytes(b"value");
        reply_count(ctx, count);
    }
}

/// A read of the partitions a filter matches: `reply` gets the counter, the
/// call's filter and the PARTITION names; a missing key has no rows.
/// What a filtered read replies: given the counter, the filter, the
/// PARTITION names and the page asked for, if any.
type FilteredReply = for<'c> fn(Ctx, &'c HCounter, &Filter, Vec<&'c [u8]>, Option<&Page>);

fn read_filtered(ctx: Ctx, args: &Args, reply: FilteredReply) -> Result<(), CmdError> {
    let key = ctx.open(args.raw(1), false);
    let counter = key.value::<HCounter>(&HCOUNTER_TYPE)?;
    let (tokens, page) = Page::split(&args.bytes[2..], |t| {
        counter.is_some_and(|c| c.schema().declares(t))
    })?;
    let Some(counter) = counter else {
        ctx.reply_rows(page.as_ref().map(|_| &b"0"[..]), 0);
        return Ok(());
    };
    let filter = filter_of(counter.schema(), &tokens)?;
    let schema = counter.schema();
    let names = schema.of(Role::Partition).iter().map(|&i| schema.name(i));
    reply(ctx, counter, &filter, names.collect(), page.as_ref());
    Ok(())
}

/// `HCOUNTER.DATA counter [name value ...] [CURSOR c [COUNT n]]` -> one map
/// per cell of the matching live partitions: PARTITION names, the other
/// GROUP names and `value`, ordered by partition, then cell; with CURSOR,
/// one page of them under the next cursor, by partition, then in an order
/// of the partition's own (`tuples::page`).
pub fn data(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    read_filtered(ctx, args, |ctx, counter, filter, mut names, page| {
        let schema = counter.schema();
        names.extend(counter.cell_names().iter().map(|&i| schema.name(i)));
        let (rows, next) = match page {
            None => (counter.data(filter, ctx.now_ms()), None),
            Some(page) => {
                let (rows, next) = counter.data_page(filter, ctx.now_ms(), page);
                (rows, Some(next))
            }
        };
        ctx.reply_rows(next.as_deref(), rows.len());
        for row in rows {
            reply_row(ctx, &names, &[row.partition, &row.cell], Some(row.count));
        }
    })
}

/// `HCOUNTER.PARTITIONS counter [name value ...] [CURSOR c [COUNT n]]` ->
/// one map per matching live partition (its PARTITION names), ascending.
pub fn partitions(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    read_filtered(ctx, args, |ctx, counter, filter, names, page| {
        let (keys, next) = match page {
            None => (counter.partitions(filter, ctx.now_ms()).collect(), None),
            Some(page) => {
                let (keys, next) = counter.partitions_page(filter, ctx.now_ms(), page);
                (keys, Some(next))
            }
        };
        ctx.reply_rows(next.as_deref(), keys.len());
        for key in keys {
            reply_row(ctx, &names, &[key], None);
        }
    })
}

/// `HCOUNTER.DEL counter [name value ...]` -> live partitions deleted (all
/// matching go, with their unique tuples). The key and its schema stay.
/// Deterministic: replicated verbatim.
pub fn del(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let mut key = ctx.open(args.raw(1), true);
    let Some(counter) = key.value_mut::<HCounter>(&HCOUNTER_TYPE)? else {
        ctx.reply_int(0);
        return Ok(());
    };
    let filter = filter_of(counter.schema(), &args.bytes[2..])?;
    let (removed, live) = counter.delete(&filter, ctx.now_ms());
    if removed > 0 {
        schedule_tear_down(ctx, args.raw(1), counter);
        ctx.notify(Class::Module, c"hcounter.del", args.raw(1));
        ctx.replicate_verbatim();
    }
    ctx.reply_int(live as i64);
    Ok(())
}

/// Internal commands carry a master's decisions: refused from clients.
fn internal(ctx: Ctx, what: &str) -> Result<(), CmdError> {
    if ctx.is_replicated_or_loading() {
        return Ok(());
    }
    Err(CmdError::invalid(format!(
        "HCOUNTER.{what} is internal: it replicates the master's {}",
        if what == "RECLAIM" {
            "background reclaim"
        } else {
            "writes"
        }
    )))
}

/// The counter of an internal write, refused unless replicated or loading.
fn internal_write<'a>(
    ctx: Ctx,
    key: &'a mut Key,
    what: &str,
) -> Result<&'a mut HCounter, CmdError> {
    internal(ctx, what)?;
    let counter = key
        .value_mut::<HCounter>(&HCOUNTER_TYPE)?
        .ok_or_else(no_such_counter)?;
    counter.set_compact_max(COMPACT_MAX.count());
    Ok(counter)
}

fn required_at(at: Option<i64>) -> Result<i64, CmdError> {
    at.ok_or_else(|| CmdError::invalid("AT is required"))
}

/// `HCOUNTER.SET counter value AT ms name value ...`: sets a cell (a
/// master's FLOAT increment; AOF rewrite). Internal.
pub fn set(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let name = args.raw(1);
    let mut key = ctx.open(name, true);
    let counter = internal_write(ctx, &mut key, "SET")?;
    let count = parse_count(counter, "value", args.bytes[2])?;
    let (pairs, at) = write_pairs(counter, &args.bytes[3..], &CELL)?;
    let at = required_at(at)?;
    let due_before = counter.next_due();
    let expired = counter.set(&place(counter, &pairs), count, at);
    after_internal_write(ctx, counter, name, due_before, expired);
    reply_count(ctx, count);
    Ok(())
}

/// `HCOUNTER.SEEN counter AT ms name value ...`: remembers a unique tuple
/// in a partition (a master's unique FLOAT increment; AOF rewrite). Internal.
pub fn seen(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let name = args.raw(1);
    let mut key = ctx.open(name, true);
    let counter = internal_write(ctx, &mut key, "SEEN")?;
    if !counter.is_unique() {
        return Err(CmdError::invalid("not a unique counter"));
    }
    let (pairs, at) = write_pairs(counter, &args.bytes[2..], &TUPLE)?;
    let at = required_at(at)?;
    let due_before = counter.next_due();
    let expired = counter.remember(&place(counter, &pairs), at);
    after_internal_write(ctx, counter, name, due_before, expired);
    ctx.reply_ok();
    Ok(())
}

fn after_internal_write(
    ctx: Ctx,
    counter: &HCounter,
    name: RStr,
    due_before: Option<i64>,
    expired: usize,
) {
    if expired > 0 {
        EXPIRED_PARTITIONS.add(expired as i64);
        ctx.notify(Class::Module, c"hcounter.expire", name);
        schedule_tear_down(ctx, name, counter);
    }
    ctx.notify(Class::Module, c"hcounter.incr", name);
    schedule_if_sooner(ctx, name, counter, due_before);
    ctx.replicate_verbatim();
}

/// Schedules the key's reclaim when a write made a partition due sooner
/// than anything before. Otherwise the key is scheduled already: by an
/// earlier write, its loading, or the last reclaim visit (which schedules
/// the key's next due time).
fn schedule_if_sooner(ctx: Ctx, name: RStr, counter: &HCounter, due_before: Option<i64>) {
    if let Some(due) = counter.next_due() {
        if due_before.is_none_or(|before| due < before) {
            reclaim::schedule(ctx, name, due);
        }
    }
}

/// `HCOUNTER.RECLAIM counter partition ...`: the master's background
/// reclaim as replicas and the AOF receive it (each partition by its
/// encoded PARTITION values). Internal.
pub fn reclaim_partitions(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    internal(ctx, "RECLAIM")?;
    let mut key = ctx.open(args.raw(1), true);
    let removed = match key.value_mut::<HCounter>(&HCOUNTER_TYPE)? {
        Some(counter) => {
            let removed = counter.remove_partitions(&args.bytes[2..]);
            schedule_tear_down(ctx, args.raw(1), counter);
            removed
        }
        None => 0,
    };
    if removed > 0 {
        EXPIRED_PARTITIONS.add(removed as i64);
        ctx.notify(Class::Module, c"hcounter.expire", args.raw(1));
        ctx.replicate_verbatim();
    }
    ctx.reply_int(removed as i64);
    Ok(())
}

/// Background reclaim on the master: removes partitions expired at `now`
/// (about `budget` cells' worth), replicated as one `HCOUNTER.RECLAIM`.
/// Returns the work done.
pub fn reclaim(ctx: Ctx, key: &mut Key, name: RStr, now: i64, budget: usize) -> usize {
    let Ok(Some(counter)) = key.value_mut::<HCounter>(&HCOUNTER_TYPE) else {
        return 0;
    };
    let (keys, work) = counter.reclaim(now, budget);
    schedule_tear_down(ctx, name, counter);
    if !keys.is_empty() {
        EXPIRED_PARTITIONS.add(keys.len() as i64);
        ctx.notify(Class::Module, c"hcounter.expire", name);
        let keys: Vec<&[u8]> = keys.iter().map(|k| &**k).collect();
        ctx.replicate_bytes(c"HCOUNTER.RECLAIM", name, &keys);
    }
    work
}

/// Removed partitions too big to free at once are torn down by the upkeep
/// timer, on every server: schedule it now.
fn schedule_tear_down(ctx: Ctx, name: RStr, counter: &HCounter) {
    if counter.tearing_down() {
        reclaim::schedule_upkeep(ctx, name, ctx.now_ms());
    }
}

/// The timer's teardown of removed partitions (`Reclaimer::reclaim`, on
/// every server): frees memory only; the key was opened read-only, nothing
/// is written, notified or replicated.
pub fn tear_down(_ctx: Ctx, key: &mut Key, _name: RStr, _now: i64, budget: usize) -> usize {
    match key.value_mut::<HCounter>(&HCOUNTER_TYPE) {
        Ok(Some(counter)) => counter.tear_down(budget),
        _ => 0,
    }
}

/// Now, while removed partitions are being torn down.
pub fn tear_down_due(key: &Key) -> Option<i64> {
    let counter = key.value::<HCounter>(&HCOUNTER_TYPE).ok().flatten()?;
    counter.tearing_down().then_some(0)
}

/// When the counter's next partition may expire.
pub fn next_due(key: &Key) -> Option<i64> {
    key.value::<HCounter>(&HCOUNTER_TYPE)
        .ok()
        .flatten()?
        .next_due()
}
