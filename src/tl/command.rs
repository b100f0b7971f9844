//! TL command handlers.

use super::parse::{items_to_trim, push_options, range_options, rem_count};
use crate::args::{CmdError, Expiry, MAX_LEN};
use crate::server::command::Args;
use crate::server::config::Config;
use crate::server::{Arg, Class, Ctx, Key, KeyKind, Word, MAXLEN};
use crate::stats::Stat;

pub(super) static TRIMS: Stat = Stat::new("tl_trims");
/// `recipes.tl-default-maxlen`: cap for TL.PUSH without MAXLEN (0 = none).
pub(super) static DEFAULT_MAXLEN: Config = Config::new(c"tl-default-maxlen", 0, 0, MAX_LEN);
/// The keyword of the replicated effect that is TL's own.
pub(super) static SLACK: Word = Word::new(c"SLACK");

/// Opens `key` and checks it is a list or missing.
fn open_list(ctx: Ctx, args: &Args, write: bool) -> Result<Key, CmdError> {
    ctx.open_kind(args.raw(1), write, KeyKind::List)
}

/// `TL.PUSH key item [MAXLEN n] [SLACK m] [TTL s | PXAT ms]` -> length after
/// the push and any trim.
///
/// A call that names its cap and no relative TTL is deterministic and
/// replicated verbatim; any other as one `TL.PUSH key item MAXLEN n SLACK m
/// [PXAT ms]`, so replicas depend on neither their clock nor their config.
pub fn push(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let opts = push_options(&args.bytes[3..])?;
    let mut key = open_list(ctx, args, true)?;
    let maxlen = opts.maxlen.unwrap_or_else(|| DEFAULT_MAXLEN.get());
    // `MAXLEN 0` says "no cap" on purpose; SLACK with no MAXLEN at all and no
    // default cap is a slip.
    if opts.slack > 0 && opts.maxlen.is_none() && maxlen == 0 {
        return Err(CmdError::invalid(
            "SLACK needs MAXLEN (or recipes.tl-default-maxlen): there is no cap to trim back to",
        ));
    }
    let (name, item) = (args.raw(1), args.raw(2));

    key.list_push_head(item);
    let len = key.len();
    let trim = items_to_trim(len, maxlen as usize, opts.slack as usize);
    for _ in 0..trim {
        key.list_pop_tail();
    }
    ctx.notify(Class::List, c"tl.push", name);
    if trim > 0 {
        TRIMS.add(trim as i64);
        ctx.notify(Class::List, c"tl.trim", name);
    }
    let expire_at = opts.expiry.map(|expiry| match expiry {
        Expiry::At(ms) => ms,
        Expiry::Ttl(s) => ctx.now_ms() + s * 1000,
    });
    if ctx.apply_expiry(&mut key, name, expire_at) {
        ctx.reply_int(0);
        return Ok(());
    }
    let deterministic = opts.maxlen.is_some() && !matches!(opts.expiry, Some(Expiry::Ttl(_)));
    if deterministic {
        ctx.replicate_verbatim();
    } else {
        let effect = [
            Arg::Str(name),
            Arg::Str(item),
            MAXLEN.arg(),
            Arg::Int(maxlen),
            SLACK.arg(),
            Arg::Int(opts.slack),
        ];
        ctx.replicate_with_expiry(c"TL.PUSH", &effect, expire_at);
    }
    ctx.reply_int((len - trim) as i64);
    Ok(())
}

/// `TL.RANGE key [OFFSET o] [COUNT c]` -> items newest first.
pub fn range(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let (offset, count) = range_options(&args.bytes[2..])?;
    let key = open_list(ctx, args, false)?;
    let end = key.len().min(offset.saturating_add(count));
    let start = offset.min(end);
    ctx.reply_array(end - start);
    // Sequential ListGet is served from Redis' cached list iterator.
    for index in start..end {
        match key.list_get(index) {
            Some(item) => ctx.reply_str(item.ptr),
            None => ctx.reply_null(),
        }
    }
    Ok(())
}

/// `TL.REM key item [COUNT c]` -> occurrences removed, newest first. Linear in
/// the position of the last occurrence removed. Replicated verbatim.
pub fn rem(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let wanted = rem_count(&args.bytes[3..])?;
    let key = open_list(ctx, args, true)?;
    let item = args.bytes[2];
    let (mut index, mut removed) = (0, 0);
    while removed < wanted && index < key.len() {
        let hit = key.list_get(index).is_some_and(|v| v.bytes() == item);
        if hit {
            key.list_delete(index);
            removed += 1;
        } else {
            index += 1;
        }
    }
    if removed > 0 {
        ctx.removed(&key, args.raw(1), Class::List, c"tl.rem");
    }
    ctx.reply_int(removed as i64);
    Ok(())
}

/// `TL.LEN key` -> items in the list.
pub fn len(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = open_list(ctx, args, false)?;
    ctx.reply_int(key.len() as i64);
    Ok(())
}
