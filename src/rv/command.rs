//! RV command handlers.

use super::parse::{add_options, expiry_ms, get_options};
use crate::args::{CmdError, Expiry, MAX_LEN};
use crate::server::command::Args;
use crate::server::config::Config;
use crate::server::{Arg, Class, Ctx, Key, KeyKind, AT, MAXLEN};
use crate::stats::Stat;

pub(super) static TRIMS: Stat = Stat::new("rv_trims");
/// `recipes.rv-default-maxlen`: cap for RV.ADD without MAXLEN (0 = none).
pub(super) static DEFAULT_MAXLEN: Config = Config::new(c"rv-default-maxlen", 0, 0, MAX_LEN);

/// Opens `key` and checks it is a sorted set or missing.
fn open_zset(ctx: Ctx, args: &Args, write: bool) -> Result<Key, CmdError> {
    ctx.open_kind(args.raw(1), write, KeyKind::Zset)
}

/// `RV.ADD key member [AT ms] [MAXLEN n] [TTL s | PXAT ms]` -> entries after
/// add and trim.
///
/// A call that names its time and cap and no relative TTL is deterministic
/// and replicated verbatim; any other is replicated as one
/// `RV.ADD key member AT ms MAXLEN n [PXAT ms]`, so replicas and AOF replays
/// depend on neither their clock nor their config.
pub fn add(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let opts = add_options(&args.bytes[3..])?;
    let now = ctx.check_at(opts.at)?.now;
    let mut key = open_zset(ctx, args, true)?;
    let at = opts.at.unwrap_or(now);
    let maxlen = opts.maxlen.unwrap_or_else(|| DEFAULT_MAXLEN.get());
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
        TRIMS.add(trimmed as i64);
        ctx.notify(Class::Zset, c"rv.trim", name);
    }

    let expire_at = opts.expiry.map(|expiry| match expiry {
        Expiry::At(ms) => ms,
        Expiry::Ttl(s) => expiry_ms(at, key.zmax_score_above(at as f64), s),
    });
    if ctx.apply_expiry(&mut key, name, expire_at) {
        ctx.reply_int(0);
        return Ok(());
    }
    let deterministic =
        opts.at.is_some() && opts.maxlen.is_some() && !matches!(opts.expiry, Some(Expiry::Ttl(_)));
    if deterministic {
        ctx.replicate_verbatim();
    } else {
        let effect = [
            Arg::Str(name),
            Arg::Str(member),
            AT.arg(),
            Arg::Int(at),
            MAXLEN.arg(),
            Arg::Int(maxlen),
        ];
        ctx.replicate_with_expiry(c"RV.ADD", &effect, expire_at);
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
        key.zrev_each(since, false, |member, score| {
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
        ctx.removed(&key, args.raw(1), Class::Zset, c"rv.rem");
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
