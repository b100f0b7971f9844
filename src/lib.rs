//! `recipes`: five well-known Redis recipes as native, atomic commands.
//!
//! Layout: `server/` is the only FFI layer (key access, replies, replication,
//! command dispatch, configs, timers); `args`, `stats`, `docs`, `release`,
//! `tuples/` and the families' `parse` modules are pure Rust. Each family
//! lives in its own folder and declares there what it registers
//! (`family::Family`); `FAMILIES` lists them. Layers, each using only those
//! below it: the pure helpers; `tuples`; `server`; `family` and `info`; the
//! families (never one another); this file. `tests/import_circles.rs` holds
//! the crate to that, and to no import circles.

mod args;
#[cfg(test)]
mod commands_json;
mod docs;
mod family;
mod hcounter;
mod info;
mod release;
mod rv;
mod server;
mod stats;
mod tl;
mod topn;
mod tuples;
mod ulist;

use family::Family;
use redis_module::{redis_module, Context, RedisString, Status};

// Redis' allocator inside the server (placing what defrag rebuilds); the
// system one in unit tests, which run without a server.
#[cfg(not(test))]
use server::defrag::ModuleAlloc as Allocator;
#[cfg(test)]
use std::alloc::System as Allocator;

/// Every family of the module; adding one is one line here.
pub(crate) static FAMILIES: &[&Family] = &[
    &rv::FAMILY,
    &tl::FAMILY,
    &topn::FAMILY,
    &ulist::FAMILY,
    &hcounter::FAMILY,
];

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    server::command::install_panic_hook();
    server::panics::init();
    server::background_free::start();
    let raw_ctx = ctx.ctx;
    if let Err(why) = register_families(raw_ctx, args) {
        ctx.log_warning(&why);
        return Status::Err;
    }
    // Our types check for I/O errors while loading, so Redis may use
    // diskless loading on replicas; what we keep beside the keys (the
    // background schedules) follows a diskless `swapdb` load's temporary db
    // (`server::reclaim`), so Redis may load that way too.
    // On Valkey 9+, also that it copes with atomic slot migration
    // (`server::slot_migration`).
    let options = redis_module::raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
        | redis_module::raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD
        | server::slot_migration::enable(server::Ctx(raw_ctx));
    server::api!(RedisModule_SetModuleOptions(raw_ctx, options as i32));
    server::panics::enable();
    // Replaces the crate's default INFO callback with our section.
    info::register(raw_ctx, FAMILIES);
    for family in FAMILIES {
        if let Some(on_load) = family.on_load {
            on_load(server::Ctx(raw_ctx));
        }
    }
    Status::Ok
}

/// Registers every family's types, configs (defaults from the load
/// arguments) and commands (with their docs and ACL categories).
fn register_families(
    ctx: *mut redis_module::raw::RedisModuleCtx,
    args: &[RedisString],
) -> Result<(), String> {
    let configs: Vec<&'static server::config::Config> = FAMILIES
        .iter()
        .flat_map(|f| f.configs)
        .chain(server::CONFIGS)
        .copied()
        .collect();
    let arg_bytes: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let load_args = server::config::LoadArgs::parse(&arg_bytes, &configs)?;
    for family in FAMILIES {
        for ty in family.types {
            ty.create_data_type(ctx)
                .map_err(|e| format!("recipes: {e}"))?;
            server::identity::adopt(ty);
        }
    }
    for config in configs {
        server::config::register(ctx, config, &load_args)?;
    }
    server::test_view::register(ctx)?;
    if !server::config::load_all(ctx) {
        return Err("recipes: could not load configs".into());
    }
    let acl = server::command::prepare_acl(ctx);
    for family in FAMILIES {
        server::command::register_all(ctx, family.commands, acl)?;
    }
    Ok(())
}

redis_module! {
    name: "recipes",
    version: release::MODULE_VERSION,
    allocator: (Allocator, Allocator),
    data_types: [],
    init: init,
}

/// Checks of every family's command table against the grammar it documents.
#[cfg(test)]
mod tests {
    use super::FAMILIES;
    use crate::docs::{arg_count, ArgType, CORE_CATEGORIES};

    /// The arity Redis checks before calling us is what the grammar says:
    /// exactly n arguments, or at least n when some are optional or repeat.
    #[test]
    fn arity_matches_the_grammar() {
        for cmd in FAMILIES.iter().flat_map(|f| f.commands) {
            let name = cmd.name.to_str().unwrap();
            let (min, max) = arg_count(cmd.docs.args);
            let arity = if max == Some(min) {
                min as i32 + 1
            } else {
                -(min as i32 + 1)
            };
            assert_eq!(cmd.arity, arity, "{name}: arity vs its arguments");
        }
    }

    /// `tuples::keywords` lists every keyword of every public command, with
    /// exactly the commands that take it: names may not be keywords.
    #[test]
    fn keyword_table_matches_the_grammar() {
        use crate::docs::Arg;
        use std::collections::BTreeMap;
        fn tokens(args: &[Arg], out: &mut Vec<&'static str>) {
            for a in args {
                out.extend(a.token);
                tokens(a.kind.subargs(), out);
            }
        }
        let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for cmd in FAMILIES.iter().flat_map(|f| f.commands) {
            if cmd.docs.summary.starts_with("Internal:") {
                continue;
            }
            let mut toks = Vec::new();
            tokens(cmd.docs.args, &mut toks);
            for t in toks {
                let name = cmd.name.to_str().unwrap().to_uppercase();
                let users = found.entry(t.to_uppercase()).or_default();
                if !users.contains(&name) {
                    users.push(name);
                }
            }
        }
        let listed: BTreeMap<String, Vec<String>> = crate::tuples::keywords::KEYWORDS
            .iter()
            .map(|(k, users)| (k.to_string(), users.split(", ").map(String::from).collect()))
            .collect();
        for users in found.values_mut() {
            users.sort();
        }
        assert_eq!(listed, found);
    }

    /// Every command documents itself: one key first, a summary, a cost;
    /// internal commands say so and sit in `@dangerous`.
    #[test]
    fn every_command_is_documented() {
        for cmd in FAMILIES.iter().flat_map(|f| f.commands) {
            let name = cmd.name.to_str().unwrap();
            let docs = &cmd.docs;
            assert!(!docs.summary.is_empty(), "{name}");
            assert!(docs.complexity.starts_with("O("), "{name}");
            assert_eq!(docs.args.first().map(|a| a.kind), Some(ArgType::Key));
            let keys = docs.args.iter().filter(|a| a.kind == ArgType::Key);
            assert_eq!(keys.count(), 1, "{name}");
            let internal = docs.summary.starts_with("Internal:");
            assert_eq!(docs.acl.contains(&"dangerous"), internal, "{name}");
            for category in docs.acl {
                assert!(CORE_CATEGORIES.contains(category), "{name}: {category}");
            }
        }
    }
}
