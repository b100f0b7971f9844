//! TOPN command handlers.

use super::config::{COMPACT_MAX, DEFAULT_BUCKET, DEFAULT_WINDOW};
use super::declaration::{Declaration, Keyword, Token};
use super::error::{Error, Refused};
use super::layout::Layout;
use super::parse::{
    align_within, buckets_in_24h, count_args, create_options, incr_options, incrby_args,
    last_within, top_options, Pair,
};
use super::shape::Shape;
use super::value::{TopnValue, TOPN_TYPE};
use super::views::Views;
use super::window::{Counted, Effects, Query};
use crate::args::{int_in, CmdError};
use crate::server::command::Args;
use crate::server::{reclaim, Arg, Class, Ctx, Key, RStr, Word, WriteTime, AT};
use crate::stats::Stat;
use std::ffi::CStr;

/// Events refused as late: already outside the window at the server's time.
pub(super) static LATE_EVENTS: Stat = Stat::new("topn_late_events");
pub(super) static EXPIRED_BUCKETS: Stat = Stat::new("topn_expired_buckets");
/// Buckets that left the window at the server's time and were taken out of a
/// key's running total (their data stays for reads at earlier times until the
/// key's clock moves past them).
pub(super) static AGED_BUCKETS: Stat = Stat::new("topn_aged_buckets");

/// Keywords of TOPN's replicated effects.
static BY: Word = Word::new(c"BY");
static BUCKET: Word = Word::new(c"BUCKET");
static WINDOW: Word = Word::new(c"WINDOW");
static ALIGN: Word = Word::new(c"ALIGN");
static VIEWS: Word = Word::new(c"VIEWS");
static CAPACITY: Word = Word::new(c"CAPACITY");

fn open(ctx: Ctx, args: &Args, write: bool) -> Key {
    ctx.open(args.raw(1), write)
}

/// Replicates the creation of `name` with its declaration spelled out, so replicas do not
/// depend on their own default configs.
fn replicate_create(ctx: Ctx, name: RStr, core: &Layout) {
    let tokens = core.declaration().tokens();
    let mut args = Vec::with_capacity(1 + tokens.len());
    args.push(Arg::Str(name));
    args.extend(tokens.iter().map(|t| match *t {
        Token::Keyword(k) => match k {
            Keyword::Bucket => BUCKET.arg(),
            Keyword::Window => WINDOW.arg(),
            Keyword::Align => ALIGN.arg(),
            Keyword::Capacity => CAPACITY.arg(),
            Keyword::Views => VIEWS.arg(),
        },
        Token::Int(n) => Arg::Int(n),
    }));
    ctx.replicate(c"TOPN.CREATE", &args);
}

/// `TOPN.CREATE key [BUCKET s] [WINDOW buckets] [ALIGN s] [CAPACITY m] [VIEWS k [k ...]]`
/// -> OK, also when the key exists with the same declaration (views as a set; then nothing
/// changes); an error naming the difference when it exists with another. Deterministic once
/// defaults are filled in, so replicated with them (not when nothing changed).
pub fn create(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let (bucket_s, window, align_s, capacity, views) = create_options(&args.bytes[2..])?;
    let bucket_s = bucket_s.unwrap_or_else(|| DEFAULT_BUCKET.get());
    let align_s = align_within(align_s, bucket_s)?;
    let window = window.unwrap_or_else(|| DEFAULT_WINDOW.get());
    let views = Views::new(&views, window as u32)?;
    if capacity.is_some() && !views.is_empty() {
        return Err(Error::ViewsWithCapacity.into());
    }
    // Within range: parsed against MAX_WINDOW and MAX_CAPACITY.
    let asked = Declaration {
        bucket_s,
        window: window as u32,
        align_s,
        capacity: capacity.map(|m| m as u32),
        views,
    };
    let mut key = open(ctx, args, true);
    if let Some(value) = key.value::<TopnValue>(&TOPN_TYPE)? {
        let has = value.get().declaration();
        if has != asked {
            let (has, asked) = (has.to_string(), asked.to_string());
            return Err(Error::OtherShape { has, asked }.into());
        }
        ctx.reply_ok();
        return Ok(());
    }
    let core = Layout::declared(&asked, COMPACT_MAX.count());
    let name = args.raw(1);
    replicate_create(ctx, name, &core);
    key.set_value(&TOPN_TYPE, TopnValue::new(core));
    ctx.notify(Class::Module, c"topn.create", name);
    ctx.reply_ok();
    Ok(())
}

/// `TOPN.INCR key member [BY n] [AT ms]` -> the member's count over the window.
///
/// An event outside the window (at the server's time, or older than the key's
/// own window) changes nothing: no key is created or written, the expiry and
/// settings stay, no notification, nothing replicated; the reply is the
/// member's count over the key's window (as for any INCR: the window ending at
/// the newest bucket written), 0 without a key. Replicas and AOF replays skip
/// the server-time rule: they apply what the master applied, and the master
/// replicates only what it applied.
///
/// Replicated verbatim when it names its time and found the key; otherwise as
/// `TOPN.INCR key member BY n AT ms`, preceded by `TOPN.CREATE` with explicit
/// shape when it created the key. The key's expiry (a whole window after its
/// newest bucket) follows from the data, so every server sets the same one
/// without a separate `PEXPIREAT`; an accepted event is inside the window at
/// the server's time, so that expiry is never in the past on the master.
pub fn incr(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let (by, opts_at) = incr_options(&args.bytes[3..])?;
    let time = ctx.check_at(opts_at)?;
    let mut key = open(ctx, args, true);
    let name = args.raw(1);
    let member = args.bytes[2];
    let at = opts_at.unwrap_or(time.now);
    let Some(created) = open_for_event(&mut key, at, time)? else {
        LATE_EVENTS.add(1);
        ctx.reply_int(count_at_clock(&key, member)?);
        return Ok(());
    };
    let value = key
        .value_mut::<TopnValue>(&TOPN_TYPE)?
        .ok_or(Error::NotCreated)?;
    if value.get().first_refused(&[(by, member)]).is_some() {
        return Err(Error::Incr(Refused::NotPositive).into());
    }
    let outcome = write(value, time.now, created, |core| {
        core.incr(member, by, at, COMPACT_MAX.count())
    });
    let (count, done) = match outcome {
        Ok(done) => done,
        Err(_) => {
            if created {
                key.delete();
            }
            return Err(Error::Incr(Refused::Overflow).into());
        }
    };
    after_write(ctx, &key, name, created, done, c"topn.incr");
    if opts_at.is_some() && !created {
        ctx.replicate_verbatim();
    } else {
        let effect = [
            Arg::Str(name),
            Arg::Str(args.raw(2)),
            BY.arg(),
            Arg::Int(by),
            AT.arg(),
            Arg::Int(at),
        ];
        ctx.replicate(c"TOPN.INCR", &effect);
    }
    schedule(ctx, name, done);
    ctx.reply_int(count);
    Ok(())
}

/// `TOPN.INCRBY key [AT ms] increment member [increment member ...]` -> each
/// member's count over the window after the whole call, in argument order.
///
/// The pairs count at one time, in order, as as many `TOPN.INCR`s would,
/// all or nothing: an increment that would overflow (or is not positive on
/// a key with CAPACITY) is an error naming it, and nothing changes. A late
/// event changes nothing and replicates nothing, as for INCR. Replicated as
/// one command: verbatim when it names its time and found the key, else
/// with `AT <ms>` (after `TOPN.CREATE` when it created the key).
pub fn incrby(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let (opts_at, pairs) = incrby_args(&args.bytes[2..])?;
    let time = ctx.check_at(opts_at)?;
    let mut key = open(ctx, args, true);
    let name = args.raw(1);
    let at = opts_at.unwrap_or(time.now);
    let Some(created) = open_for_event(&mut key, at, time)? else {
        LATE_EVENTS.add(pairs.len() as i64);
        reply_counts(ctx, &key, &pairs)?;
        return Ok(());
    };
    let value = key
        .value_mut::<TopnValue>(&TOPN_TYPE)?
        .ok_or(Error::NotCreated)?;
    let first = args.bytes.len() - 2 * pairs.len();
    let refused = value.get().first_refused(&pairs).map(|i| Error::Incrby {
        argument: first + 2 * i,
        refused: Refused::NotPositive,
    });
    let outcome = match refused {
        Some(message) => Err(message),
        None => write(value, time.now, created, |core| {
            core.incr_many(&pairs, at, COMPACT_MAX.count())
                .map_err(|i| Error::Incrby {
                    argument: first + 2 * i,
                    refused: Refused::Overflow,
                })
        }),
    };
    let (counts, done) = match outcome {
        Ok(done) => done,
        Err(message) => {
            if created {
                key.delete();
            }
            return Err(message.into());
        }
    };
    after_write(ctx, &key, name, created, done, c"topn.incrby");
    if opts_at.is_some() && !created {
        ctx.replicate_verbatim();
    } else {
        let mut effect = Vec::with_capacity(3 + 2 * pairs.len());
        effect.extend([Arg::Str(name), AT.arg(), Arg::Int(at)]);
        effect.extend(args.raw_from(first).iter().map(|&s| Arg::Str(s)));
        ctx.replicate(c"TOPN.INCRBY", &effect);
    }
    schedule(ctx, name, done);
    ctx.reply_array(counts.len());
    for count in counts {
        ctx.reply_int(count);
    }
    Ok(())
}

/// Each pair's member's count over the key's window (0 without a key): the
/// reply to late events.
fn reply_counts(ctx: Ctx, key: &Key, pairs: &[Pair]) -> Result<(), CmdError> {
    let value = key.value::<TopnValue>(&TOPN_TYPE)?;
    ctx.reply_array(pairs.len());
    for (_, member) in pairs {
        ctx.reply_int(value.as_ref().map_or(0, |v| v.get().count_at_clock(member)));
    }
    Ok(())
}

fn count_at_clock(key: &Key, member: &[u8]) -> Result<i64, CmdError> {
    let value = key.value::<TopnValue>(&TOPN_TYPE)?;
    Ok(value.map_or(0, |v| v.get().count_at_clock(member)))
}

/// The key an event at `at` writes: Some(whether it was created, with the
/// default shape), or None for an event outside the window (at the server's
/// time, or older than the key's own window), which changes nothing.
/// Replicas and AOF replays skip the server-time rule: they apply what the
/// master applied, and the master replicates only what it applied.
fn open_for_event(key: &mut Key, at: i64, time: WriteTime) -> Result<Option<bool>, CmdError> {
    let WriteTime { now, replaying } = time;
    if let Some(value) = key.value::<TopnValue>(&TOPN_TYPE)? {
        let core = value.get();
        let shape = core.shape();
        let late = shape.landing(at).is_none() || (!replaying && shape.is_late_at(at, now));
        return Ok((!late).then_some(false));
    }
    let (bucket_s, window) = (DEFAULT_BUCKET.get(), DEFAULT_WINDOW.get());
    if !replaying && Shape::new(bucket_s * 1000, window as u32, 0).is_late_at(at, now) {
        return Ok(None);
    }
    let core = Layout::new(bucket_s * 1000, window as u32, 0, COMPACT_MAX.count());
    key.set_value(&TOPN_TYPE, TopnValue::new(core));
    Ok(Some(true))
}

/// Runs a write on the core at the server's time `now`: its outcome and,
/// when it is accepted, what the command does next.
fn write<R, E>(
    value: &mut TopnValue,
    now: i64,
    created: bool,
    f: impl FnOnce(&mut Layout) -> Result<(R, Effects), E>,
) -> Result<(R, Done), E> {
    value.update(|core| {
        let moved = core.observe_time(now);
        let marker = core.window().upkeep_marker();
        let (out, effects) = f(core)?;
        // Upkeep may be owed sooner only if the window moved, the clock moved or a bucket
        // came or went (skipped on the usual write: it costs a few searches).
        let reschedule = created || moved || core.window().upkeep_marker() != marker;
        Ok((
            out,
            Done {
                expire_at: core.shape().expire_at_ms(),
                effects,
                upkeep_due: if reschedule {
                    core.window().upkeep_due_ms()
                } else {
                    None
                },
            },
        ))
    })
}

/// What follows an accepted write before it is replicated: the counters,
/// the creation replicated (with its shape), the event, the expiry (a whole
/// window after the newest bucket: it follows from the data, so every
/// server sets the same one without a separate `PEXPIREAT`; an accepted
/// event is inside the window at the server's time, so it is never in the
/// past on the master).
fn after_write(ctx: Ctx, key: &Key, name: RStr, created: bool, done: Done, event: &CStr) {
    count_effects(done.effects);
    if created {
        if let Ok(Some(value)) = key.value::<TopnValue>(&TOPN_TYPE) {
            replicate_create(ctx, name, value.get());
        }
    }
    ctx.notify(Class::Module, event, name);
    if let Some(expire_at) = done.expire_at.filter(|&at| key.expire_at() != Some(at)) {
        key.set_expire_at(expire_at);
        ctx.notify(Class::Generic, c"expire", name);
    }
}

/// Tells the timer when upkeep is due, if it may have come sooner (its
/// schedule keeps the earlier of two times for a key).
fn schedule(ctx: Ctx, name: RStr, done: Done) {
    if let Some(due) = done.upkeep_due {
        reclaim::schedule_upkeep(ctx, name, due);
    }
}

/// What an accepted write did.
#[derive(Clone, Copy)]
struct Done {
    expire_at: Option<i64>,
    effects: Effects,
    /// When upkeep is due, if it may have come sooner.
    upkeep_due: Option<i64>,
}

/// The timer's upkeep of a key (`Reclaimer::reclaim`, on every server): takes
/// buckets that left the window at `now` out of the running sums, frees stale
/// ones, seals buckets. Internal state only: the key was opened read-only,
/// nothing is written, notified or replicated.
pub fn upkeep(_ctx: Ctx, key: &mut Key, _name: RStr, now: i64, budget: usize) -> usize {
    let Ok(Some(value)) = key.value_mut::<TopnValue>(&TOPN_TYPE) else {
        return 0;
    };
    let (done, effects) = value.update(|core| {
        let _ = core.observe_time(now);
        core.upkeep(budget, COMPACT_MAX.count())
    });
    count_effects(effects);
    done
}

/// INFO's counters of what writes and upkeep did.
fn count_effects(effects: Effects) {
    EXPIRED_BUCKETS.add(effects.retired as i64);
    AGED_BUCKETS.add(effects.aged as i64);
}

/// When the key's next upkeep is due (`Reclaimer::next_due`).
pub fn upkeep_due(key: &Key) -> Option<i64> {
    key.value::<TopnValue>(&TOPN_TYPE)
        .ok()
        .flatten()?
        .get()
        .window()
        .upkeep_due_ms()
}

/// The number of buckets a read covers: `LAST k` checked against the key's
/// WINDOW, or `default`.
fn last_of(core: &Layout, last: Option<i64>, default: u32) -> Result<u32, CmdError> {
    last.map_or(Ok(default), |k| last_within(k, Some(core.shape().window)))
}

/// Replies with the top `n` of the window of `window` buckets ending at `at`
/// (the `LAST k` newest of them when given).
fn reply_top(
    ctx: Ctx,
    args: &Args,
    allow_last: bool,
    window_of: fn(&Layout) -> Result<u32, CmdError>,
) -> Result<(), CmdError> {
    let opts = top_options(&args.bytes[2..], allow_last)?;
    ctx.check_read_at(opts.at)?;
    let key = open(ctx, args, false);
    let Some(value) = key.value::<TopnValue>(&TOPN_TYPE)? else {
        opts.last.map(|k| last_within(k, None)).transpose()?;
        ctx.reply_array(0);
        return Ok(());
    };
    let core = value.get();
    let query = Query {
        at_ms: opts.at.unwrap_or_else(|| ctx.now_ms()),
        last: last_of(core, opts.last, window_of(core)?)?,
        n: opts.n,
    };
    let rows = core.top(&query);
    let per_row = 1 + opts.with_counts as usize + opts.with_errors as usize;
    ctx.reply_array(rows.len() * per_row);
    for (member, counted) in rows {
        ctx.reply_bytes(member);
        if opts.with_counts {
            ctx.reply_int(counted.count);
        }
        if opts.with_errors {
            ctx.reply_int(counted.error);
        }
    }
    Ok(())
}

/// `TOPN.TOP key [N] [AT ms] [LAST k] [WITHCOUNTS] [WITHERRORS]` -> the N
/// highest over the window (its k newest buckets with LAST); WITHERRORS adds
/// each count's most over-counting (0 on an exact key).
pub fn top(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    reply_top(ctx, args, true, |core| Ok(core.shape().window))
}

/// `TOPN.TOP24 key [N] [AT ms] [WITHCOUNTS]` -> the same over the trailing 24 hours.
pub fn top24(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    reply_top(ctx, args, false, |core| {
        buckets_in_24h(core.shape().bucket_ms, core.shape().window)
            .ok_or_else(|| Error::Top24Window.into())
    })
}

/// `TOPN.COUNT key member [member ...] [AT ms] [LAST k] [WITHERRORS]` -> each
/// member's count over the window (its k newest buckets with LAST); with
/// WITHERRORS, each as `[count, error]` (on a key with CAPACITY the true count
/// lies in `[count - error, count]`; the error is 0 on an exact key).
pub fn count(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let (members, at, last, with_errors) = count_args(&args.bytes[2..])?;
    if members.is_empty() {
        return Err(CmdError::Arity);
    }
    ctx.check_read_at(at)?;
    let key = open(ctx, args, false);
    let value = key.value::<TopnValue>(&TOPN_TYPE)?;
    let last = match &value {
        Some(v) => last_of(v.get(), last, v.get().shape().window)?,
        None => {
            last.map(|k| last_within(k, None)).transpose()?;
            0
        }
    };
    let query = Query {
        at_ms: at.unwrap_or_else(|| ctx.now_ms()),
        last,
        n: 0,
    };
    ctx.reply_array(members.len());
    for member in members {
        let counted = value
            .as_ref()
            .map_or(Counted::default(), |v| v.get().count(member, &query));
        if with_errors {
            ctx.reply_array(2);
            ctx.reply_int(counted.count);
            ctx.reply_int(counted.error);
        } else {
            ctx.reply_int(counted.count);
        }
    }
    Ok(())
}

/// `TOPN.INFO key` -> map: bucket (s), window, align (s), members, buckets in use, memory;
/// with CAPACITY also capacity, counters, bound (the most a count of the window
/// over-counts) and exact (1 while the bound is 0); with VIEWS also views (how many) and
/// `view-<k>-memory` per view (0 while the key is compact: its views are implicit).
pub fn info(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = open(ctx, args, false);
    let value = key
        .value::<TopnValue>(&TOPN_TYPE)?
        .ok_or(Error::NoSuchKey)?;
    let core = value.get();
    let shape = core.shape();
    let mut fields: Vec<(&[u8], i64)> = vec![
        (b"bucket", shape.bucket_ms / 1000),
        (b"window", shape.window.into()),
        (b"align", shape.align_ms / 1000),
        (b"members", core.members() as i64),
        (b"buckets", core.window().buckets_in_use() as i64),
        (
            b"memory",
            (std::mem::size_of::<TopnValue>() + core.mem_usage()) as i64,
        ),
    ];
    fields.extend(core.capped_info());
    let views = core.view_memory();
    ctx.reply_map(fields.len() + views.len() + !views.is_empty() as usize);
    for (name, n) in fields {
        ctx.reply_bytes(name);
        ctx.reply_int(n);
    }
    if !views.is_empty() {
        ctx.reply_bytes(b"views");
        ctx.reply_int(views.len() as i64);
    }
    for (k, bytes) in views {
        ctx.reply_bytes(format!("view-{k}-memory").as_bytes());
        ctx.reply_int(bytes as i64);
    }
    Ok(())
}

/// `TOPN.SETCOUNTER key bucket member count error EVICTED|KEPT`: a capped key's
/// counter as an AOF rewrite writes it (`bucket` is a bucket index; EVICTED: the
/// bucket has evicted, its floor is its smallest count). Only from an AOF or the
/// replication stream: clients write with TOPN.INCR.
pub fn set_counter(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    if !ctx.is_replicated_or_loading() {
        return Err(Error::SetCounterFromClient.into());
    }
    let [_, _, bucket, member, count, error, kept] = args.bytes[..] else {
        return Err(CmdError::Arity);
    };
    let bucket = int_in("bucket", bucket, i64::MIN, i64::MAX)?;
    let count = int_in("count", count, 1, i64::MAX)?;
    let error = int_in("error", error, 0, count)?;
    let evicted = match kept {
        k if k.eq_ignore_ascii_case(b"EVICTED") => true,
        k if k.eq_ignore_ascii_case(b"KEPT") => false,
        _ => return Err(Error::EvictedOrKept.into()),
    };
    let mut key = open(ctx, args, true);
    let value = key
        .value_mut::<TopnValue>(&TOPN_TYPE)?
        .ok_or(Error::NoSuchKey)?;
    count_effects(value.update(|core| core.set_counter(bucket, member, (count, error), evicted))?);
    ctx.replicate_verbatim();
    ctx.reply_ok();
    Ok(())
}
