//! TL command handlers.

use super::parse::{items_to_trim, push_options, range_options, rem_count};
use crate::args::CmdError;
use crate::config;
use crate::server::command::Args;
use crate::server::{replicate, Class, Ctx, Key, KeyKind};
use crate::stats;

/// Opens `key` and checks it is a list or missing.
fn open_list(ctx: Ctx, args: &Args, write: bool) -> Result<Key, CmdError> {
    let key = ctx.open(args.raw(1), write);
    match key.kind() {
        KeyKind::Empty | KeyKind::List => Ok(key),
        _ => Err(CmdError::WrongType),
    }
}

/// `TL.PUSH key item [MAXLEN n] [SLACK m] [TTL s]` -> length after push and trim.
///
/// Replicated as `TL.PUSH key item MAXLEN n SLACK m` (explicit, so replicas do
/// not depend on their config), plus `PEXPIREAT` for a TTL.
pub fn push(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let opts = push_options(&args.bytes[3..])?;
    let key = open_list(ctx, args, true)?;
    let maxlen = opts.maxlen.unwrap_or_else(config::tl_default_maxlen);
    let name = args.raw(1);

    key.list_push_head(args.raw(2));
    let len = key.len();
    let trim = items_to_trim(len, maxlen as usize, opts.slack as usize);
    for _ in 0..trim {
        key.list_pop_tail();
    }
    ctx.notify(Class::List, c"tl.push", name);
    if trim > 0 {
        stats::TL_TRIMS.add(trim as i64);
        ctx.notify(Class::List, c"tl.trim", name);
    }
    replicate!(
        ctx,
        c"TL.PUSH",
        c"ssclcl",
        name,
        args.raw(2),
        c"MAXLEN".as_ptr(),
        maxlen,
        c"SLACK".as_ptr(),
        opts.slack
    );
    if let Some(ttl_s) = opts.ttl_s {
        let expire_at = ctx.now_ms() + ttl_s * 1000;
        key.set_expire_at(expire_at);
        ctx.notify(Class::Generic, c"expire", name);
        replicate!(ctx, c"PEXPIREAT", c"sl", name, expire_at);
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
        let name = args.raw(1);
        ctx.notify(Class::List, c"tl.rem", name);
        if key.kind() == KeyKind::Empty {
            ctx.notify(Class::Generic, c"del", name);
        }
        ctx.replicate_verbatim();
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
