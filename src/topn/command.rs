//! TOPN command handlers.

use super::parse::{buckets_in_24h, count_args, create_options, incr_options, top_options};
use super::value::{TopnValue, TOPN_TYPE};
use super::window::{Overflow, TopN};
use super::{BUCKET, BY, DEFAULT_BUCKET, DEFAULT_WINDOW, EXPIRED_BUCKETS, WINDOW};
use crate::args::CmdError;
use crate::server::command::Args;
use crate::server::{Arg, Class, Ctx, Key, RStr, AT};

fn open(ctx: Ctx, args: &Args, write: bool) -> Key {
    ctx.open(args.raw(1), write)
}

/// Replicates the creation of `name` with its shape spelled out, so replicas
/// do not depend on their own default configs.
fn replicate_create(ctx: Ctx, name: RStr, bucket_s: i64, window: i64) {
    ctx.replicate(
        c"TOPN.CREATE",
        &[
            Arg::Str(name),
            BUCKET.arg(),
            Arg::Int(bucket_s),
            WINDOW.arg(),
            Arg::Int(window),
        ],
    );
}

/// `TOPN.CREATE key [BUCKET s] [WINDOW buckets]` -> OK; an error if the key
/// exists. Deterministic once defaults are filled in, so replicated with them.
pub fn create(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let (bucket_s, window) = create_options(&args.bytes[2..])?;
    let key = open(ctx, args, true);
    if key.value::<TopnValue>(&TOPN_TYPE)?.is_some() {
        return Err(CmdError::invalid("key already exists"));
    }
    let bucket_s = bucket_s.unwrap_or_else(|| DEFAULT_BUCKET.get());
    let window = window.unwrap_or_else(|| DEFAULT_WINDOW.get());
    key.set_value(
        &TOPN_TYPE,
        TopnValue::new(TopN::new(bucket_s * 1000, window as u32)),
    );
    let name = args.raw(1);
    ctx.notify(Class::Module, c"topn.create", name);
    replicate_create(ctx, name, bucket_s, window);
    ctx.reply_ok();
    Ok(())
}

/// `TOPN.INCR key member [BY n] [AT ms]` -> the member's count over the window.
///
/// Replicated verbatim when it names its time and found the key; otherwise as
/// `TOPN.INCR key member BY n AT ms`, preceded by `TOPN.CREATE` with explicit
/// shape when it created the key. The key's
/// expiry (a whole window after its newest bucket) follows from the data, so
/// every server sets the same one without a separate `PEXPIREAT`.
pub fn incr(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let (by, opts_at) = incr_options(&args.bytes[3..])?;
    let mut key = open(ctx, args, true);
    let name = args.raw(1);
    let now = ctx.now_ms();
    let at = opts_at.unwrap_or(now);
    let created = key.value::<TopnValue>(&TOPN_TYPE)?.is_none();
    if created {
        let core = TopN::new(DEFAULT_BUCKET.get() * 1000, DEFAULT_WINDOW.get() as u32);
        key.set_value(&TOPN_TYPE, TopnValue::new(core));
    }
    let value = key
        .value_mut::<TopnValue>(&TOPN_TYPE)?
        .ok_or_else(|| CmdError::invalid("could not create the key"))?;
    let outcome = value.update(|core| -> Result<_, Overflow> {
        let count = core.incr(args.bytes[2], by, at)?;
        Ok((count, core.expire_at_ms(), core.take_retired_buckets()))
    });
    let (count, expire_at, retired) = match outcome {
        Ok(done) => done,
        Err(overflow) => {
            if created {
                key.delete();
            }
            return Err(CmdError::invalid(format!("BY: {overflow}")));
        }
    };
    EXPIRED_BUCKETS.add(retired as i64);
    if created {
        let core = value.get();
        replicate_create(ctx, name, core.bucket_ms() / 1000, core.window() as i64);
    }
    // A whole window already behind us (an AT far in the past): the key is gone.
    let expire_at = expire_at.unwrap_or(now);
    if ctx.delete_if_expired(&key, name, expire_at) {
        ctx.reply_int(0);
        return Ok(());
    }
    key.set_expire_at(expire_at);
    ctx.notify(Class::Module, c"topn.incr", name);
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
    ctx.reply_int(count);
    Ok(())
}

/// Replies with the top `n` of the window of `window` buckets ending at `at`.
fn reply_top(
    ctx: Ctx,
    args: &Args,
    window_of: fn(&TopN) -> Result<u32, CmdError>,
) -> Result<(), CmdError> {
    let opts = top_options(&args.bytes[2..])?;
    let key = open(ctx, args, false);
    let Some(value) = key.value::<TopnValue>(&TOPN_TYPE)? else {
        ctx.reply_array(0);
        return Ok(());
    };
    let core = value.get();
    let window = window_of(core)?;
    let at = opts.at.unwrap_or_else(|| ctx.now_ms());
    let rows = core.top_in(opts.n.min(core.members()), at, window);
    ctx.reply_array(if opts.with_counts {
        rows.len() * 2
    } else {
        rows.len()
    });
    for (member, count) in rows {
        ctx.reply_bytes(member);
        if opts.with_counts {
            ctx.reply_int(count);
        }
    }
    Ok(())
}

/// `TOPN.TOP key [N] [AT ms] [WITHCOUNTS]` -> the N highest over the window.
pub fn top(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    reply_top(ctx, args, |core| Ok(core.window()))
}

/// `TOPN.TOP24 key [N] [AT ms] [WITHCOUNTS]` -> the same over the trailing 24 hours.
pub fn top24(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    reply_top(ctx, args, |core| {
        buckets_in_24h(core.bucket_ms(), core.window()).ok_or_else(|| {
            CmdError::invalid("TOP24 needs a window covering 24 hours in whole buckets")
        })
    })
}

/// `TOPN.COUNT key member [member ...] [AT ms]` -> each member's count.
pub fn count(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let (members, at) = count_args(&args.bytes[2..])?;
    if members.is_empty() {
        return Err(CmdError::Arity);
    }
    let key = open(ctx, args, false);
    let value = key.value::<TopnValue>(&TOPN_TYPE)?;
    let at = at.unwrap_or_else(|| ctx.now_ms());
    ctx.reply_array(members.len());
    for member in members {
        ctx.reply_int(value.as_ref().map_or(0, |v| v.get().count(member, at)));
    }
    Ok(())
}

/// `TOPN.INFO key` -> map: bucket (s), window, members, buckets in use, memory.
pub fn info(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = open(ctx, args, false);
    let value = key
        .value::<TopnValue>(&TOPN_TYPE)?
        .ok_or_else(|| CmdError::invalid("no such key"))?;
    let core = value.get();
    let fields: [(&[u8], i64); 5] = [
        (b"bucket", core.bucket_ms() / 1000),
        (b"window", core.window() as i64),
        (b"members", core.members() as i64),
        (b"buckets", core.buckets_in_use() as i64),
        (b"memory", core.mem_usage() as i64),
    ];
    ctx.reply_map(fields.len());
    for (name, n) in fields {
        ctx.reply_bytes(name);
        ctx.reply_int(n);
    }
    Ok(())
}
