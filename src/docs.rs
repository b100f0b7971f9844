//! What a command tells tools about itself (pure, no FFI): the summary, cost,
//! tips and argument grammar that `COMMAND DOCS`, `redis-cli` hints and
//! `commands.json` show, and the ACL categories it belongs to. Each command's
//! declaration in its family's `mod.rs` carries one [`Docs`]; registration
//! (`server::command`) hands it to the server and `commands_json` writes
//! the same table to `commands.json`.

/// The module version every command of this release first appeared in.
pub const SINCE: &str = "1.0.0";

/// The tip for commands whose reply depends on the server's clock (a
/// sliding window, expiring values): the same call on the same data may
/// answer differently later or on another server.
pub const NONDETERMINISTIC_OUTPUT: &[&str] = &["nondeterministic_output"];

/// A command's documentation: one row of the docs table.
pub struct Docs {
    pub summary: &'static str,
    /// The cost model, as the README states it.
    pub complexity: &'static str,
    pub tips: &'static [&'static str],
    /// ACL categories beyond those its flags imply ([`acl_categories`]):
    /// the core type family of the data (`sortedset`, `list`), `dangerous`.
    pub acl: &'static [&'static str],
    /// The grammar the command's parser accepts, the command name left out.
    pub args: &'static [Arg],
}

impl Docs {
    /// The fields most commands leave at their default.
    pub const DEFAULT: Docs = Docs {
        summary: "",
        complexity: "",
        tips: &[],
        acl: &[],
        args: &[],
    };
}

/// An argument's type, as `COMMAND DOCS` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    Key,
    String,
    Integer,
    Double,
    UnixTime,
    /// A keyword alone (`WITHSCORES`).
    PureToken,
    /// Exactly one of the sub-arguments.
    OneOf(&'static [Arg]),
    /// The sub-arguments together, in order.
    Block(&'static [Arg]),
}

impl ArgType {
    #[cfg(test)]
    pub fn name(self) -> &'static str {
        match self {
            ArgType::Key => "key",
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::OneOf(_) => "oneof",
            ArgType::Block(_) => "block",
        }
    }

    pub fn subargs(self) -> &'static [Arg] {
        match self {
            ArgType::OneOf(args) | ArgType::Block(args) => args,
            _ => &[],
        }
    }
}

/// One argument of a command's grammar. Built with the `const fn`s below:
/// `integer("count").token("COUNT").optional()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arg {
    pub name: &'static str,
    pub kind: ArgType,
    /// The keyword before the value (`MAXLEN` of `MAXLEN maxlen`).
    pub token: Option<&'static str>,
    pub optional: bool,
    /// May repeat (`member [member ...]`); the token is not repeated.
    pub multiple: bool,
    pub summary: Option<&'static str>,
}

const fn arg(name: &'static str, kind: ArgType) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        optional: false,
        multiple: false,
        summary: None,
    }
}

/// The key of a command: every command has exactly one, first.
pub const fn key(name: &'static str) -> Arg {
    arg(name, ArgType::Key)
}
pub const fn string(name: &'static str) -> Arg {
    arg(name, ArgType::String)
}
pub const fn integer(name: &'static str) -> Arg {
    arg(name, ArgType::Integer)
}
pub const fn double(name: &'static str) -> Arg {
    arg(name, ArgType::Double)
}
pub const fn unix_time(name: &'static str) -> Arg {
    arg(name, ArgType::UnixTime)
}
/// A keyword alone, e.g. `pure_token("withscores", "WITHSCORES")`.
pub const fn pure_token(name: &'static str, token: &'static str) -> Arg {
    arg(name, ArgType::PureToken).token(token)
}
pub const fn one_of(name: &'static str, args: &'static [Arg]) -> Arg {
    arg(name, ArgType::OneOf(args))
}
pub const fn block(name: &'static str, args: &'static [Arg]) -> Arg {
    arg(name, ArgType::Block(args))
}

impl Arg {
    pub const fn token(self, token: &'static str) -> Arg {
        Arg {
            token: Some(token),
            ..self
        }
    }
    pub const fn optional(self) -> Arg {
        Arg {
            optional: true,
            ..self
        }
    }
    pub const fn multiple(self) -> Arg {
        Arg {
            multiple: true,
            ..self
        }
    }
    pub const fn summary(self, summary: &'static str) -> Arg {
        Arg {
            summary: Some(summary),
            ..self
        }
    }
}

/// `[AT time]`: the time of a write or a read, instead of the server's clock.
pub const AT: Arg = unix_time("time")
    .token("AT")
    .optional()
    .summary("Unix time in ms to use instead of the server's clock");

/// `[TTL seconds | PXAT unix-time-milliseconds]`: when a written key expires.
pub const EXPIRATION: Arg = one_of(
    "expiration",
    &[
        integer("seconds").token("TTL"),
        unix_time("unix-time-milliseconds").token("PXAT"),
    ],
)
.optional();

/// `name value [name value ...]`: values of the names a ULIST or HCOUNTER
/// key declared, in any order.
pub const PAIRS: Arg = block("pair", &[string("name"), string("value")]).multiple();

/// `[CURSOR cursor [COUNT count]]`: a read in pages (`tuples::page`).
pub const PAGE: Arg = block(
    "page",
    &[
        string("cursor").token("CURSOR"),
        integer("count").token("COUNT").optional(),
    ],
)
.optional()
.summary("one page of the rows: 0 starts, the reply's cursor goes on, 0 back when done");

/// The cost of listing partitions in a partition index (`tuples::index`),
/// as ULIST.PARTITIONS and HCOUNTER.PARTITIONS do.
pub const PARTITIONS_COMPLEXITY: &str =
    "O(log P + R) for P partitions, R rows returned, when the filter fixes leading names; O(P) otherwise; with CURSOR, O(log P + COUNT + 1024) a page, whatever the filter: a step looks at up to max(4 x COUNT, 1024) partitions";

/// The ACL categories of a command: `read` or `write` and `fast` or `slow`
/// from its flags (as Redis derives them for its own commands), then `extra`,
/// then `module_category` when the server has it; in the order of the
/// server's category table, module categories last.
pub fn acl_categories(
    flags: &str,
    extra: &[&'static str],
    module_category: Option<&'static str>,
) -> Vec<&'static str> {
    let has = |flag| flags.split_whitespace().any(|f| f == flag);
    let mut implied = Vec::new();
    if has("write") {
        implied.push("write");
    }
    if has("readonly") {
        implied.push("read");
    }
    implied.push(if has("fast") { "fast" } else { "slow" });
    let mut categories: Vec<&'static str> = CORE_CATEGORIES
        .iter()
        .copied()
        .filter(|c| implied.contains(c) || extra.contains(c))
        .collect();
    categories.extend(module_category);
    categories
}

/// The core categories in the order servers list them (Redis' and
/// Valkey's `ACLCommandCategories`).
pub const CORE_CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The fewest and the most arguments `args` take (`None`: no limit).
#[cfg(test)]
pub fn arg_count(args: &[Arg]) -> (usize, Option<usize>) {
    let mut min = 0;
    let mut max = Some(0);
    for a in args {
        let (lo, hi) = one_arg_count(a);
        if !a.optional {
            min += lo;
        }
        max = match (max, hi) {
            (Some(m), Some(h)) if !a.multiple => Some(m + h),
            _ => None,
        };
    }
    (min, max)
}

#[cfg(test)]
fn one_arg_count(a: &Arg) -> (usize, Option<usize>) {
    let token = a.token.is_some() as usize;
    let (lo, hi) = match a.kind {
        ArgType::PureToken => (0, Some(0)),
        ArgType::Block(args) => arg_count(args),
        ArgType::OneOf(args) => {
            let counts: Vec<_> = args.iter().map(one_arg_count).collect();
            let lo = counts.iter().map(|c| c.0).min().unwrap_or(0);
            let hi = counts.iter().try_fold(0, |m, c| c.1.map(|h| h.max(m)));
            (lo, hi)
        }
        _ => (1, Some(1)),
    };
    (lo + token, hi.map(|h| h + token))
}

/// Calls that `args` describes, as argument lists (the command name left
/// out): every optional argument left out and given, every alternative of a
/// one-of, every multiple argument once and twice. `value(arg, n)` spells
/// the n-th occurrence of a valued argument (0 to 3: 2b + i for the i-th in
/// the b-th occurrence of a block). For tests that check
/// the parsers accept what the docs promise.
#[cfg(test)]
pub fn calls(args: &[Arg], value: &dyn Fn(&Arg, usize) -> String) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    for a in args {
        let mut variants: Vec<Vec<String>> = Vec::new();
        if a.optional {
            variants.push(Vec::new());
        }
        let times: &[usize] = if a.multiple { &[1, 2] } else { &[1] };
        for &n in times {
            let mut repeated: Vec<Vec<String>> = vec![Vec::new()];
            for i in 0..n {
                repeated = repeated
                    .iter()
                    .flat_map(|prefix| {
                        one_arg_calls(a, i, value).into_iter().map(move |rest| {
                            let mut call = prefix.clone();
                            call.extend(rest);
                            call
                        })
                    })
                    .collect();
            }
            variants.extend(repeated);
        }
        out = out
            .iter()
            .flat_map(|prefix| {
                variants.iter().map(move |v| {
                    let mut call = prefix.clone();
                    call.extend(v.iter().cloned());
                    call
                })
            })
            .collect();
    }
    out
}

/// A call of [`calls`] as the byte slices parsers take.
#[cfg(test)]
pub fn as_tokens(call: &[String]) -> Vec<&[u8]> {
    call.iter().map(|t| t.as_bytes()).collect()
}

#[cfg(test)]
fn one_arg_calls(a: &Arg, n: usize, value: &dyn Fn(&Arg, usize) -> String) -> Vec<Vec<String>> {
    // A repeated argument repeats its value, not its token.
    let token: Vec<String> = a
        .token
        .iter()
        .filter(|_| n == 0)
        .map(|t| t.to_string())
        .collect();
    let bodies: Vec<Vec<String>> = match a.kind {
        ArgType::PureToken => vec![Vec::new()],
        ArgType::Block(args) => {
            // Distinct occurrences inside distinct occurrences of the block.
            let occurrence = |arg: &Arg, i: usize| value(arg, 2 * n + i);
            calls(args, &occurrence)
        }
        ArgType::OneOf(args) => args
            .iter()
            .flat_map(|alt| one_arg_calls(alt, n, value))
            .collect(),
        _ => vec![vec![value(a, n)]],
    };
    bodies
        .into_iter()
        .map(|body| token.iter().cloned().chain(body).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_follow_the_flags() {
        assert_eq!(acl_categories("readonly", &[], None), ["read", "slow"]);
        assert_eq!(
            acl_categories("write deny-oom fast", &["sortedset"], Some("recipes")),
            ["write", "sortedset", "fast", "recipes"]
        );
        assert_eq!(
            acl_categories("write", &["dangerous"], None),
            ["write", "slow", "dangerous"]
        );
    }

    #[test]
    fn argument_counts() {
        const ARGS: &[Arg] = &[
            key("key"),
            string("member"),
            AT,
            EXPIRATION,
            pure_token("withscores", "WITHSCORES").optional(),
        ];
        assert_eq!(arg_count(ARGS), (2, Some(7)));
        assert_eq!(arg_count(&[key("key"), PAIRS]), (3, None));
        assert_eq!(arg_count(&[key("key"), PAIRS.optional()]), (1, None));
    }

    #[test]
    fn calls_cover_every_form() {
        const ARGS: &[Arg] = &[string("member").multiple(), EXPIRATION];
        let value = |a: &Arg, n: usize| format!("{}{n}", a.name);
        let calls: Vec<String> = calls(ARGS, &value).iter().map(|c| c.join(" ")).collect();
        assert_eq!(
            calls,
            [
                "member0",
                "member0 TTL seconds0",
                "member0 PXAT unix-time-milliseconds0",
                "member0 member1",
                "member0 member1 TTL seconds0",
                "member0 member1 PXAT unix-time-milliseconds0",
            ]
        );
    }
}
