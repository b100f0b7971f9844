//! ULIST command handlers.

use super::config::COMPACT_MAX;
use super::list::{Row, UList, ValueKeys, DECLARATION, NEVER};
use super::value::ULIST_TYPE;
use crate::args::{opt_int_in, CmdError, OptionSpec, Takes, MAX_EXPIRE_MS, MAX_TIME_MS, MAX_TTL_S};
use crate::server::command::Args;
use crate::server::{reclaim, reply_info, Arg, Class, Ctx, Key, RStr, AT};
use crate::stats::Stat;
use crate::tuples::index::Filter;
use crate::tuples::page::Page;
use crate::tuples::schema::{Pairs, Role, Schema};
use smallvec::SmallVec;

/// Values removed by background reclaim (on a replica: as replicated).
pub(super) static EXPIRED_VALUES: Stat = Stat::new("ulist_expired_values");

pub(super) const CREATE_OPTIONS: [OptionSpec; 1] = [("EXPIRE", Takes::Value)];
pub(super) const ADD_OPTIONS: [OptionSpec; 5] = [
    ("AT", Takes::Value),
    ("EXPIRE", Takes::Value),
    ("NEVER", Takes::Nothing),
    ("PXAT", Takes::Value),
    ("REFRESH", Takes::Nothing),
];

/// The names a filter of DATA, PARTITIONS and DEL may fix, in row order.
const WHERE: [Role; 2] = [Role::Scope, Role::Partition];

/// Opens `key` (its type is checked when its value is read).
fn open(ctx: Ctx, args: &Args, write: bool) -> Key {
    ctx.open(args.raw(1), write)
}

fn no_such_list() -> CmdError {
    CmdError::invalid("no such list; create it with ULIST.CREATE")
}

/// `ULIST.CREATE list VALUE name ... [SCOPE name ...] [PARTITION name ...]
/// [EXPIRE s]` -> OK, also when the list exists with the same declaration
/// (then nothing changes); an error naming the difference when it exists
/// with another. Deterministic: replicated verbatim (not when nothing changed).
pub fn create(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let declarer = ctx.declarer();
    let (schema, [expire]) =
        Schema::parse(&args.bytes[2..], &DECLARATION, &CREATE_OPTIONS, declarer)?;
    if schema.of(Role::Value).is_empty() {
        return Err(CmdError::invalid("VALUE needs at least one name"));
    }
    let expire = opt_int_in("EXPIRE", expire, 1, MAX_TTL_S)?;
    let mut key = ctx.open(args.raw(1), true);
    if let Some(list) = key.value::<UList>(&ULIST_TYPE)? {
        let difference = list.schema().difference(&schema, &DECLARATION).or_else(|| {
            (list.default_expire_s() != expire).then(|| {
                let shown = |e: Option<i64>| e.map_or("(none)".to_string(), |s| s.to_string());
                format!(
                    "EXPIRE {} (asked: EXPIRE {})",
                    shown(list.default_expire_s()),
                    shown(expire)
                )
            })
        });
        return match difference {
            Some(d) => Err(CmdError::invalid(format!(
                "the list exists with another declaration: {d}"
            ))),
            None => {
                ctx.reply_ok();
                Ok(())
            }
        };
    }
    key.set_value(&ULIST_TYPE, UList::new(schema, expire));
    ctx.notify(Class::Module, c"ulist.create", args.raw(1));
    ctx.replicate_verbatim();
    ctx.reply_ok();
    Ok(())
}

/// When an added value expires: `EXPIRE s`, `PXAT ms` or `NEVER` (at most
/// one), else the list's default.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expiry {
    AfterS(i64),
    AtMs(i64),
    Never,
}

impl Expiry {
    fn parse(
        [expire, never, pxat]: [Option<&[u8]>; 3],
        default_s: Option<i64>,
    ) -> Result<Self, CmdError> {
        let expire = opt_int_in("EXPIRE", expire, 1, MAX_TTL_S)?;
        let pxat = opt_int_in("PXAT", pxat, 1, MAX_EXPIRE_MS)?;
        match (expire, never.is_some(), pxat) {
            (None, false, None) => Ok(default_s.map_or(Expiry::Never, Expiry::AfterS)),
            (Some(s), false, None) => Ok(Expiry::AfterS(s)),
            (None, true, None) => Ok(Expiry::Never),
            (None, false, Some(ms)) => Ok(Expiry::AtMs(ms)),
            _ => Err(CmdError::invalid(
                "EXPIRE, NEVER and PXAT cannot be used together",
            )),
        }
    }

    /// The expiry of a value added at `at`.
    fn of_value_added_at(self, at: i64) -> i64 {
        match self {
            Expiry::AfterS(s) => at + s * 1000,
            Expiry::AtMs(ms) => ms,
            Expiry::Never => NEVER,
        }
    }
}

/// `ULIST.ADD list [EXPIRE s | NEVER | PXAT ms] [REFRESH] [AT ms] name value ...` ->
/// 1 if the value is new within its scope, else 0.
///
/// With AT the call is deterministic and replicated verbatim; without, as
/// the same call with `AT <server time>` added. A value that was already
/// there changes nothing and replicates nothing, unless REFRESH gives it
/// this add's expiry (sliding expiry: the reply is still 0).
pub fn add(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let name = args.raw(1);
    let mut key = open(ctx, args, true);
    let list = key
        .value_mut::<UList>(&ULIST_TYPE)?
        .ok_or_else(no_such_list)?;
    list.prefetch_for_add();
    list.set_compact_max(COMPACT_MAX.count());
    let schema = list.schema();
    let (pairs, [at, expire, never, pxat, refresh]) =
        Pairs::parse(schema, &args.bytes[2..], &ADD_OPTIONS)?;
    pairs.check(schema, &[Role::Value, Role::Scope, Role::Partition], &[])?;
    let given_at = opt_int_in("AT", at, 0, MAX_TIME_MS)?;
    ctx.check_given_at(given_at)?;
    let expiry = Expiry::parse([expire, never, pxat], list.default_expire_s())?;
    // Without expiring values on either side, the time decides nothing (and
    // the clock is not even read).
    let timeless = expiry == Expiry::Never && !list.has_expiring_values();
    let at = match given_at {
        Some(at) => at,
        None if timeless => 0,
        None => ctx.now_ms(),
    };
    let expire_at = expiry.of_value_added_at(at);
    let of = |role| pairs.values_of(schema, role);
    let keys = ValueKeys::new(of(Role::Scope), of(Role::Partition), of(Role::Value));
    let new = list.add(&keys, at, expire_at);
    // REFRESH: a live value takes this add's expiry (sliding expiry); the
    // reply still says it was not new.
    let refreshed = !new && refresh.is_some() && list.refresh(&keys, at, expire_at);
    if new || refreshed {
        ctx.notify(Class::Module, c"ulist.add", name);
        if expire_at != NEVER {
            reclaim::schedule(ctx, name, expire_at);
        }
        if given_at.is_some() || timeless {
            ctx.replicate_verbatim();
        } else {
            // Inline: no allocation for the usual call.
            let mut effect: SmallVec<[Arg; 16]> =
                args.raw_from(1).iter().map(|&s| Arg::Str(s)).collect();
            effect.extend([AT.arg(), Arg::Int(at)]);
            ctx.replicate(c"ULIST.ADD", &effect);
        }
    }
    ctx.reply_int(new as i64);
    Ok(())
}

/// The list of a read, with the `name value` pairs checked against it;
/// `None` for a missing key (reads answer as an empty list would).
fn read<'k>(
    key: &'k Key,
    args: &Args<'k>,
    required: &[Role],
    optional: &[Role],
) -> Result<Option<(&'k UList, Pairs<'k>)>, CmdError> {
    let Some(list) = key.value::<UList>(&ULIST_TYPE)? else {
        return Ok(None);
    };
    let (pairs, []) = Pairs::parse::<0>(list.schema(), &args.bytes[2..], &[])?;
    pairs.check(list.schema(), required, optional)?;
    Ok(Some((list, pairs)))
}

/// `ULIST.HAS list name value ...` -> 1 if the value is live in its scope.
/// The PARTITION names may be given too (so an ADD's arguments serve), but
/// do not narrow the answer: a value is unique in its scope wherever it was
/// added.
pub fn has(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = open(ctx, args, false);
    let found = match read(&key, args, &[Role::Value, Role::Scope], &[Role::Partition])? {
        Some((list, pairs)) => {
            let of = |role| pairs.values_of(list.schema(), role);
            list.has(
                &ValueKeys::new(of(Role::Scope), [], of(Role::Value)),
                ctx.now_ms(),
            )
        }
        None => false,
    };
    ctx.reply_int(found as i64);
    Ok(())
}

/// Replies with `rows`, each a map from `roles`' names to the row's values.
fn reply_rows(ctx: Ctx, schema: &Schema, roles: &[Role], rows: &[Row], next: Option<&[u8]>) {
    let names: Vec<&[u8]> = roles
        .iter()
        .flat_map(|&r| schema.of(r).iter())
        .map(|&i| schema.name(i))
        .collect();
    ctx.reply_rows(next, rows.len());
    for row in rows {
        ctx.reply_map(names.len());
        for (name, value) in names.iter().zip(row) {
            ctx.reply_bytes(name);
            ctx.reply_bytes(value);
        }
    }
}

/// One page of rows and the next cursor.
type Paged = (Vec<Row>, Vec<u8>);

/// How a filtered read finds its rows: all of them, or one page.
struct Rows {
    all: fn(&UList, &Filter, i64) -> Vec<Row>,
    page: fn(&UList, &Filter, i64, &Page) -> Paged,
}

/// Replies with the rows found under the call's filter (any subset of the
/// SCOPE and PARTITION names), each a map of `roles`' names; with
/// `CURSOR c [COUNT n]`, one page of them under the next cursor
/// (`tuples::page`).
fn reply_filtered(ctx: Ctx, args: &Args, roles: &[Role], rows: Rows) -> Result<(), CmdError> {
    let key = open(ctx, args, false);
    let list = key.value::<UList>(&ULIST_TYPE)?;
    let (tokens, page) = Page::split(&args.bytes[2..], |t| {
        list.is_some_and(|l| l.schema().declares(t))
    })?;
    let Some(list) = list else {
        ctx.reply_rows(page.as_ref().map(|_| &b"0"[..]), 0);
        return Ok(());
    };
    let schema = list.schema();
    let (pairs, []) = Pairs::parse::<0>(schema, &tokens, &[])?;
    pairs.check(schema, &[], &WHERE)?;
    let filter = pairs.of(schema, &WHERE);
    match page {
        None => reply_rows(
            ctx,
            schema,
            roles,
            &(rows.all)(list, &filter, ctx.now_ms()),
            None,
        ),
        Some(page) => {
            let (found, next) = (rows.page)(list, &filter, ctx.now_ms(), &page);
            reply_rows(ctx, schema, roles, &found, Some(&next));
        }
    }
    Ok(())
}

/// `ULIST.DATA list [name value ...] [CURSOR c [COUNT n]]` -> one map per
/// live value of the matching scopes/partitions, ordered by scope, then
/// value (pages: by scope, then in an order of the scope's own).
pub fn data(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let roles = [Role::Value, Role::Scope, Role::Partition];
    let rows = Rows {
        all: UList::data,
        page: UList::data_page,
    };
    reply_filtered(ctx, args, &roles, rows)
}

/// `ULIST.COUNT list [name value ...]` -> live values of the matching
/// scopes/partitions (0 for a missing key).
pub fn count(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = open(ctx, args, false);
    let n = match read(&key, args, &[], &WHERE)? {
        Some((list, pairs)) => list.count(&pairs.of(list.schema(), &WHERE), ctx.now_ms()),
        None => 0,
    };
    ctx.reply_int(n as i64);
    Ok(())
}

/// `ULIST.INFO list` -> map: the declaration (CREATE's arguments), values
/// and partitions stored (expired ones not yet reclaimed included), values
/// with an expiry, the default expiry (0: none), memory.
pub fn info(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let key = open(ctx, args, false);
    let list = key.value::<UList>(&ULIST_TYPE)?.ok_or_else(no_such_list)?;
    reply_info(
        ctx,
        &list.declaration(),
        &[
            (b"values", list.stored_values() as i64),
            (b"partitions", list.stored_partitions() as i64),
            (b"expiring values", list.expiring_values() as i64),
            (b"memory", list.mem_usage(5) as i64),
        ],
    );
    Ok(())
}

/// `ULIST.PARTITIONS list [name value ...] [CURSOR c [COUNT n]]` -> one
/// map per partition with a
/// live value (its SCOPE and PARTITION names), ascending.
pub fn partitions(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let rows = Rows {
        all: UList::partitions,
        page: UList::partitions_page,
    };
    reply_filtered(ctx, args, &WHERE, rows)
}

/// `ULIST.DEL list [name value ...]` -> partitions deleted (those with a
/// live value; all matching go). The key and its schema stay.
/// Deterministic: replicated verbatim.
pub fn del(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    let mut key = open(ctx, args, true);
    let Some(list) = key.value_mut::<UList>(&ULIST_TYPE)? else {
        ctx.reply_int(0);
        return Ok(());
    };
    list.set_compact_max(COMPACT_MAX.count());
    let (pairs, []) = Pairs::parse::<0>(list.schema(), &args.bytes[2..], &[])?;
    pairs.check(list.schema(), &[], &WHERE)?;
    let filter = pairs.of(list.schema(), &WHERE);
    let (removed, live) = list.delete(&filter, ctx.now_ms());
    if removed > 0 {
        ctx.notify(Class::Module, c"ulist.del", args.raw(1));
        ctx.replicate_verbatim();
    }
    ctx.reply_int(live as i64);
    Ok(())
}

/// `ULIST.RECLAIM list item ...`: the master's background reclaim, as its
/// replicas and AOF receive it (each item a value's SCOPE and VALUE tuple,
/// encoded). Only accepted from the replication stream or an AOF.
pub fn reclaim_items(ctx: Ctx, args: &Args) -> Result<(), CmdError> {
    if !ctx.is_replicated_or_loading() {
        return Err(CmdError::invalid(
            "ULIST.RECLAIM is internal: it replicates the master's background reclaim",
        ));
    }
    let mut key = open(ctx, args, true);
    let removed = match key.value_mut::<UList>(&ULIST_TYPE)? {
        Some(list) => {
            list.set_compact_max(COMPACT_MAX.count());
            list.remove_items(&args.bytes[2..])
        }
        None => 0,
    };
    if removed > 0 {
        EXPIRED_VALUES.add(removed as i64);
        ctx.notify(Class::Module, c"ulist.expire", args.raw(1));
    }
    ctx.reply_int(removed as i64);
    Ok(())
}

/// Background reclaim on the master: removes up to `budget` values of the
/// list expired at `now`, replicated as one `ULIST.RECLAIM`.
pub fn reclaim(ctx: Ctx, key: &mut Key, name: RStr, now: i64, budget: usize) -> usize {
    let Ok(Some(list)) = key.value_mut::<UList>(&ULIST_TYPE) else {
        return 0;
    };
    list.set_compact_max(COMPACT_MAX.count());
    let items = list.reclaim(now, budget);
    if items.is_empty() {
        return 0;
    }
    EXPIRED_VALUES.add(items.len() as i64);
    ctx.notify(Class::Module, c"ulist.expire", name);
    let items: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
    ctx.replicate_bytes(c"ULIST.RECLAIM", name, &items);
    items.len()
}

/// When the list's next value expires.
pub fn next_due(key: &Key) -> Option<i64> {
    key.value::<UList>(&ULIST_TYPE).ok().flatten()?.next_due()
}
