//! RV command handlers.

use super::parse::{add_options, expiry_ms, get_options};
use crate::args::CmdError;
use crate::config;
use crate::server::command::Args;
use crate::server::{replicate, Class, Ctx, Key, KeyKind};
use crate::stats;

/// Opens `key` and checks it is a sorted set or missing.
fn open_zset(ctx: Ctx, args: &Args, write: bool) -> Result<Key, CmdError> {
    let key = ctx.open(args.raw(1), write);
    match key.kind() {
        KeyKind::Empty | KeyKind::Zset => Ok(key),
        _ => Err(CmdError::WrongType),
    }
}

/// `RV.ADD key member [AT ms] [MAXLEN n] [TTL s]` -> entries after add and trim.
///
/// Replicated as `RV.ADD key member AT ms MAXLEN n` (explicit time and cap, so
/// replicas and AOF replays do not depend on their clock or config), plus
/// `PEXPIREAT` when a TTL was given.
pub fn add(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let opts = add_options(&args.bytes[3..])?;
    let key = open_zset(ctx, args, true)?;
    let now = ctx.now_ms();
    let at = opts.at.unwrap_or(now);
    let maxlen = opts.maxlen.unwrap_or_else(config::rv_default_maxlen);
    let (name, member) = (args.raw(1), args.raw(2));

    key.zadd_gt(at as f64, member);
    let mut len = key.len();
    let trimmed = if maxlen > 0 && len > maxlen as usize {
        key.ztrim_lowest(len - maxlen as usize)
    } else {
        0
    };
    len -= trimmed;
    ctx.notify(Class::Zset, c"rv.add", name);
    if trimmed > 0 {
        stats::RV_TRIMS.add(trimmed as i64);
        ctx.notify(Class::Zset, c"rv.trim", name);
    }

    let expire_at = opts
        .ttl_s
        .map(|ttl_s| expiry_ms(at, key.zmax_score(), ttl_s));
    if expire_at.is_some_and(|at| ctx.delete_if_expired(&key, name, at)) {
        ctx.reply_int(0);
        return Ok(());
    }
    replicate!(
        ctx,
        c"RV.ADD",
        c"ssclcl",
        name,
        member,
        c"AT".as_ptr(),
        at,
        c"MAXLEN".as_ptr(),
        maxlen
    );
    if let Some(expire_at) = expire_at {
        key.set_expire_at(expire_at);
        ctx.notify(Class::Generic, c"expire", name);
        replicate!(ctx, c"PEXPIREAT", c"sl", name, expire_at);
    }
    ctx.reply_int(len as i64);
    Ok(())
}

/// `RV.GET key [LIMIT n] [SINCE ms] [WITHSCORES]` -> members newest first.
pub fn get(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let opts = get_options(&args.bytes[2..])?;
    let key = open_zset(ctx, args, false)?;
    let limit = opts.limit.map_or(usize::MAX, |n| n as usize);
    let since = opts.since.map_or(f64::NEG_INFINITY, |s| s as f64);
    ctx.reply_array_open();
    let mut sent = 0;
    if limit > 0 {
        key.zrev_each(since, |member, score| {
            ctx.reply_str(member.ptr);
            if opts.with_scores {
                ctx.reply_double(score);
            }
            sent += 1;
            sent < limit
        });
    }
    ctx.set_array_len(if opts.with_scores { sent * 2 } else { sent });
    Ok(())
}

/// `RV.REM key member [member ...]` -> how many were removed. Deterministic,
/// so replicated verbatim.
pub fn rem(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = open_zset(ctx, args, true)?;
    let removed = if key.kind() == KeyKind::Empty {
        0
    } else {
        args.raw_from(2).iter().filter(|&&m| key.zrem(m)).count()
    };
    if removed > 0 {
        ctx.notify(Class::Zset, c"rv.rem", args.raw(1));
        if key.kind() == KeyKind::Empty {
            ctx.notify(Class::Generic, c"del", args.raw(1));
        }
        ctx.replicate_verbatim();
    }
    ctx.reply_int(removed as i64);
    Ok(())
}

/// `RV.LEN key` -> entries in the list.
pub fn len(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = open_zset(ctx, args, false)?;
    ctx.reply_int(key.len() as i64);
    Ok(())
}
