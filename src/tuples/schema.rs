//! Schemas: the names a list or counter declares at CREATE, each with its
//! role(s), and the `name value` pairs its commands name. Pure, no FFI.
//!
//! Names are exact bytes (case-sensitive); keywords are case-insensitive. A
//! client may not declare a keyword as a name; a declaration replayed from
//! the AOF or a master may hold one (an older release allowed it), so in
//! `name value` pairs a token equal to a declared name is that name first.

use super::defrag::Mover;
use super::keywords::keyword_of;
use crate::args::{printable, CmdError, Found, OptionSet, OptionSpec};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

/// What a name is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// ULIST: the names whose values make the unique value.
    Value,
    /// Uniqueness holds within one tuple of these (ULIST, HCOUNTER UNIQUE).
    Scope,
    /// Each distinct tuple of these is a partition, listed and deleted as one.
    Partition,
    /// HCOUNTER: each distinct tuple is a cell within a partition.
    Group,
    /// HCOUNTER: the names whose values make the unique event.
    Unique,
}

const ROLES: usize = 5;

impl Role {
    fn slot(self) -> usize {
        self as usize
    }
}

/// The names of a schema and their roles, laid out compactly: every call
/// looks its names up here. The default declares no names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Schema {
    /// Each distinct name once, in the order first declared, back to back.
    /// Inline when short: a command reads the names of its key's schema,
    /// which should not cost a cache miss more.
    text: SmallVec<[u8; 24]>,
    /// Where each name ends in `text`.
    ends: SmallVec<[u32; 4]>,
    /// The indices of each role's names in declared order, role after role
    /// (one inline vector, not one per role: a key of a small list holds
    /// its schema, so its size counts).
    role_names: SmallVec<[u16; 8]>,
    /// Where each role's indices end in `role_names`.
    role_ends: [u16; ROLES],
    /// Each role's names as bits (a schema has at most [`MAX_NAMES`] = 64
    /// names): what [`Pairs::check`] compares a call's names with.
    role_masks: [u64; ROLES],
}

/// Who declares a schema. A client's new declaration may not use a keyword
/// of any recipes command as a name; one replayed from the AOF or sent by a
/// master was accepted by the release that wrote it (older ones allowed
/// words that are keywords now), so only the family's own reserved words
/// limit it: refusing it would lose the key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Declarer {
    Client,
    Replay,
}

/// How a family declares schemas at CREATE.
pub struct Declaration {
    /// Keywords that open a list of names, with the role they give.
    pub lists: &'static [(&'static str, Role)],
    /// Pairs of roles one name may hold both of (any other repeat is an error).
    pub may_share: &'static [(Role, Role)],
    /// Every keyword of the family's commands: refused as names.
    pub reserved: &'static [&'static str],
}

/// Most names a schema may declare.
pub const MAX_NAMES: usize = 64;

/// The schemas in use, each once: keys declared alike share one
/// ([`Schema::shared`]). Entries whose keys are all gone are swept when the
/// table has doubled since the last sweep.
struct Interned {
    table: HashMap<Schema, Weak<Schema>>,
    swept_at: usize,
}

static INTERNED: LazyLock<Mutex<Interned>> = LazyLock::new(|| {
    Mutex::new(Interned {
        table: HashMap::new(),
        swept_at: 0,
    })
});

impl Schema {
    /// This schema, shared with every key declared the same way: a small
    /// list then holds a pointer, not its own copy (about 100 bytes a key).
    /// Takes a lock, so only CREATE, loads and copies call it, never a
    /// write of values.
    pub fn shared(self) -> Arc<Schema> {
        // A poisoned lock only means a panic elsewhere while it was held:
        // the table is still a valid cache.
        let mut interned = INTERNED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(live) = interned.table.get(&self).and_then(Weak::upgrade) {
            return live;
        }
        let live = Arc::new(self.clone());
        interned.table.insert(self, Arc::downgrade(&live));
        if interned.table.len() > 2 * interned.swept_at + 64 {
            interned.table.retain(|_, weak| weak.strong_count() > 0);
            interned.swept_at = interned.table.len();
        }
        live
    }

    /// Offers its blocks (the vectors that outgrew their inline room) to a
    /// defrag pass, as part of a unit of work.
    pub fn defrag(&mut self, m: &mut impl Mover) {
        m.small_vec(&mut self.text);
        m.small_vec(&mut self.ends);
        m.small_vec(&mut self.role_names);
    }

    /// The indices (into the schema's names) of `role`, in declared order.
    pub fn of(&self, role: Role) -> &[u16] {
        let slot = role.slot();
        let start = if slot == 0 {
            0
        } else {
            self.role_ends[slot - 1]
        };
        &self.role_names[start as usize..self.role_ends[slot] as usize]
    }

    pub fn name(&self, index: u16) -> &[u8] {
        let i = index as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    fn names(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.len() as u16).map(|i| self.name(i))
    }

    fn index_of(&self, name: &[u8]) -> Option<usize> {
        self.names().position(|n| n == name)
    }

    /// A client's declaration of `words` (list keywords and names, no
    /// options), for tests that need a schema.
    #[cfg(test)]
    pub fn declared(words: &[&str], decl: &Declaration) -> Schema {
        let tokens: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        let (schema, []) = Schema::parse::<0>(&tokens, decl, &[], Declarer::Client)
            .unwrap_or_else(|e| panic!("{words:?}: {e}"));
        schema
    }

    /// Whether `name` is one of the schema's names (exact bytes): such a
    /// token of a command is that name, never a keyword.
    pub fn declares(&self, name: &[u8]) -> bool {
        self.index_of(name).is_some()
    }

    /// The names of `roles`, as bits.
    fn mask(&self, roles: &[Role]) -> u64 {
        roles
            .iter()
            .fold(0, |mask, r| mask | self.role_masks[r.slot()])
    }

    /// Whether `tokens` are `name value` pairs of every name once, in
    /// declared order.
    fn is_in_order(&self, tokens: &[&[u8]]) -> bool {
        tokens.len() == 2 * self.len()
            && self
                .ends
                .iter()
                .zip(tokens.chunks_exact(2))
                .try_fold(0, |start, (&end, pair)| {
                    let end = end as usize;
                    (pair[0] == &self.text[start..end]).then_some(end)
                })
                .is_some()
    }

    fn push_name(&mut self, name: &[u8]) {
        self.text.extend_from_slice(name);
        self.ends.push(self.text.len() as u32);
    }

    /// Parses CREATE's arguments: name lists opened by `decl.lists` keywords,
    /// and `options`, in any order. Refuses a keyword used as a name (a
    /// [`Declarer::Replay`] only the family's own), a name repeated (unless
    /// `decl.may_share` allows its two roles), an empty list and a stray
    /// token, each with an error naming it.
    pub fn parse<'a, const N: usize>(
        tokens: &[&'a [u8]],
        decl: &Declaration,
        options: &[OptionSpec; N],
        declarer: Declarer,
    ) -> Result<(Schema, Found<'a, N>), CmdError> {
        let mut schema = Schema {
            text: SmallVec::new(),
            ends: SmallVec::new(),
            role_names: SmallVec::new(),
            role_ends: [0; ROLES],
            role_masks: [0; ROLES],
        };
        let mut found = OptionSet::new(options);
        let mut open: Option<(&str, Role)> = None;
        let mut seen_lists: Vec<Role> = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            let token = tokens[i];
            if let Some(&(keyword, role)) = decl
                .lists
                .iter()
                .find(|(k, _)| token.eq_ignore_ascii_case(k.as_bytes()))
            {
                close_list(&schema, open, token)?;
                if seen_lists.contains(&role) {
                    return Err(CmdError::invalid(format!("{keyword} given more than once")));
                }
                seen_lists.push(role);
                open = Some((keyword, role));
                i += 1;
                continue;
            }
            if found.is_option(token) {
                close_list(&schema, open, token)?;
            }
            if let Some(next) = found.take(tokens, i)? {
                open = None;
                i = next;
                continue;
            }
            let Some((_, role)) = open else {
                return Err(CmdError::invalid(format!(
                    "unexpected argument '{}'",
                    printable(token)
                )));
            };
            schema.declare(token, role, decl, declarer)?;
            i += 1;
        }
        close_list(&schema, open, b"")?;
        Ok((schema, found.finish()))
    }

    fn declare(
        &mut self,
        name: &[u8],
        role: Role,
        decl: &Declaration,
        declarer: Declarer,
    ) -> Result<(), CmdError> {
        if name.is_empty() {
            return Err(CmdError::invalid("a name cannot be empty"));
        }
        if let Some((keyword, commands)) = keyword_of(name).filter(|_| declarer == Declarer::Client)
        {
            return Err(CmdError::invalid(format!(
                "'{}' is a keyword ({keyword} of {commands}) and cannot be a name",
                printable(name)
            )));
        }
        if let Some(keyword) = decl
            .reserved
            .iter()
            .find(|k| name.eq_ignore_ascii_case(k.as_bytes()))
        {
            return Err(CmdError::invalid(format!(
                "'{}' is a keyword of this command ({keyword}) and cannot be a name",
                printable(name)
            )));
        }
        let index = match self.index_of(name) {
            Some(index) => {
                let shareable = ROLE_LIST.iter().all(|&held| {
                    !self.of(held).contains(&(index as u16))
                        || (held != role
                            && decl
                                .may_share
                                .iter()
                                .any(|&(a, b)| (a, b) == (held, role) || (b, a) == (held, role)))
                });
                if !shareable {
                    return Err(CmdError::invalid(format!(
                        "name '{}' declared more than once",
                        printable(name)
                    )));
                }
                index
            }
            None => {
                if self.len() == MAX_NAMES {
                    return Err(CmdError::invalid(format!(
                        "at most {MAX_NAMES} names per schema"
                    )));
                }
                self.push_name(name);
                self.len() - 1
            }
        };
        self.push_role(role, index as u16);
        Ok(())
    }

    /// Gives name `index` role `role` (after the role's other names).
    fn push_role(&mut self, role: Role, index: u16) {
        let slot = role.slot();
        self.role_names.insert(self.role_ends[slot] as usize, index);
        for end in &mut self.role_ends[slot..] {
            *end += 1;
        }
        self.role_masks[slot] |= 1 << index;
    }

    /// How the schema a CREATE asks for (`asked`) differs from this one, in
    /// `decl`'s keywords: the first list whose names differ, e.g.
    /// `VALUE user (asked: VALUE session_id)`; `None` when they are the same.
    pub fn difference(&self, asked: &Schema, decl: &Declaration) -> Option<String> {
        let names = |schema: &Schema, role| {
            let names: Vec<String> = schema
                .of(role)
                .iter()
                .map(|&i| printable(schema.name(i)))
                .collect();
            if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(" ")
            }
        };
        decl.lists.iter().find_map(|&(keyword, role)| {
            let (mine, theirs) = (names(self, role), names(asked, role));
            (mine != theirs).then(|| format!("{keyword} {mine} (asked: {keyword} {theirs})"))
        })
    }

    /// The CREATE arguments that declare this schema again (for AOF rewrite).
    pub fn create_args(&self, decl: &Declaration) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for &(keyword, role) in decl.lists {
            if self.of(role).is_empty() {
                continue;
            }
            out.push(keyword.as_bytes().to_vec());
            out.extend(self.of(role).iter().map(|&i| self.name(i).to_vec()));
        }
        out
    }

    /// `u16 names, names x (u32 len, bytes), per role (u16 count, count x u16)`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.len() as u16).to_le_bytes());
        for name in self.names() {
            out.extend_from_slice(&(name.len() as u32).to_le_bytes());
            out.extend_from_slice(name);
        }
        for role in ROLE_LIST {
            let names = self.of(role);
            out.extend_from_slice(&(names.len() as u16).to_le_bytes());
            for &i in names {
                out.extend_from_slice(&i.to_le_bytes());
            }
        }
    }

    /// The inverse of `encode`, reading from `r`.
    pub fn decode(r: &mut Reader) -> Result<Schema, DecodeError> {
        let count = r.u16()? as usize;
        if count > MAX_NAMES {
            return Err(DecodeError::Invalid("more names than a schema holds"));
        }
        let mut schema = Schema {
            text: SmallVec::new(),
            ends: SmallVec::new(),
            role_names: SmallVec::new(),
            role_ends: [0; ROLES],
            role_masks: [0; ROLES],
        };
        for _ in 0..count {
            let len = r.u32()? as usize;
            schema.push_name(r.bytes(len)?);
        }
        for role in ROLE_LIST {
            let n = r.u16()? as usize;
            if n > MAX_NAMES {
                return Err(DecodeError::Invalid(
                    "a role with more names than a schema holds",
                ));
            }
            for _ in 0..n {
                let i = r.u16()?;
                if i as usize >= count {
                    return Err(DecodeError::Invalid("a role names no schema name"));
                }
                schema.push_role(role, i);
            }
        }
        Ok(schema)
    }
}

const ROLE_LIST: [Role; ROLES] = [
    Role::Value,
    Role::Scope,
    Role::Partition,
    Role::Group,
    Role::Unique,
];

/// A list keyword must be followed by at least one name. `closing` is the
/// keyword that ends the list (empty at the end of the arguments): when it
/// comes first, it was likely meant as a name, so the refusal says it is not one.
fn close_list(schema: &Schema, open: Option<(&str, Role)>, closing: &[u8]) -> Result<(), CmdError> {
    match open {
        Some((keyword, role)) if schema.of(role).is_empty() => {
            Err(CmdError::invalid(if closing.is_empty() {
                format!("{keyword} needs at least one name")
            } else {
                format!(
                    "{keyword} needs at least one name ('{}' is a keyword of this command, not a name)",
                    printable(closing)
                )
            }))
        }
        _ => Ok(()),
    }
}

/// The `name value` pairs of one call, by schema name.
pub struct Pairs<'a> {
    /// By schema name; inline for the usual few names (no allocation).
    values: SmallVec<[Option<&'a [u8]>; 8]>,
    /// The names given, as bits.
    given: u64,
}

impl<'a> Pairs<'a> {
    /// Parses `name value` pairs and `options`, in any order. A token equal
    /// to a name of the schema is that name, also when it spells an option
    /// (a key declared before the word became a keyword keeps working).
    /// Refuses a name outside the schema, a name given twice and a name
    /// without a value.
    #[inline] // into each command: its result is large, returned by copy otherwise
    pub fn parse<const N: usize>(
        schema: &Schema,
        tokens: &[&'a [u8]],
        options: &[OptionSpec; N],
    ) -> Result<(Pairs<'a>, Found<'a, N>), CmdError> {
        let mut found = OptionSet::new(options);
        if schema.is_in_order(tokens) {
            // The usual call: each name once, in declared order, no option.
            // The loop below reads these tokens the same way (a token equal
            // to a name is that name), at a few times the cost.
            let (mut values, mut given) = (SmallVec::new(), 0u64);
            for (index, pair) in tokens.chunks_exact(2).enumerate() {
                values.push(Some(pair[1]));
                given |= 1 << index;
            }
            return Ok((Pairs { values, given }, found.finish()));
        }
        let mut values: SmallVec<[Option<&[u8]>; 8]> = SmallVec::from_elem(None, schema.len());
        let mut given = 0u64;
        let mut i = 0;
        while i < tokens.len() {
            let name = tokens[i];
            let Some(index) = schema.index_of(name) else {
                match found.take(tokens, i)? {
                    Some(next) => i = next,
                    None => {
                        let shown = printable(name);
                        return Err(CmdError::invalid(format!("unknown name '{shown}'")));
                    }
                }
                continue;
            };
            if values[index].is_some() {
                return Err(CmdError::invalid(format!(
                    "name '{}' given more than once",
                    printable(name)
                )));
            }
            let value = tokens.get(i + 1).ok_or_else(|| {
                CmdError::invalid(format!("name '{}' needs a value", printable(name)))
            })?;
            values[index] = Some(*value);
            given |= 1 << index;
            i += 2;
        }
        Ok((Pairs { values, given }, found.finish()))
    }

    /// Checks that every name of the `required` roles has a value and that
    /// no name outside `required` and `optional` roles was given.
    pub fn check(
        &self,
        schema: &Schema,
        required: &[Role],
        optional: &[Role],
    ) -> Result<(), CmdError> {
        let given = self.given;
        let required_mask = schema.mask(required);
        if required_mask & !given != 0 {
            // The first missing name, in the order of the roles.
            let missing = (required.iter())
                .flat_map(|&role| schema.of(role))
                .find(|&&i| given & 1 << i == 0);
            return Err(CmdError::invalid(format!(
                "missing name '{}'",
                printable(schema.name(missing.copied().unwrap_or_default()))
            )));
        }
        let stray = given & !(required_mask | schema.mask(optional));
        if stray != 0 {
            return Err(CmdError::invalid(format!(
                "name '{}' does not belong here",
                printable(schema.name(stray.trailing_zeros() as u16))
            )));
        }
        Ok(())
    }

    /// The value given for the schema's name `index`.
    pub fn value(&self, index: u16) -> Option<&'a [u8]> {
        self.values[index as usize]
    }

    /// The values of `roles`' names, in declared order (each role after the
    /// previous one); `None` for a name without a value.
    pub fn of(&self, schema: &Schema, roles: &[Role]) -> Vec<Option<&'a [u8]>> {
        roles
            .iter()
            .flat_map(|&role| schema.of(role).iter())
            .map(|&i| self.values[i as usize])
            .collect()
    }

    /// The values of `role`'s names, in declared order, for names that
    /// [`Pairs::check`] required.
    pub fn values_of<'s>(
        &'s self,
        schema: &'s Schema,
        role: Role,
    ) -> impl Iterator<Item = &'a [u8]> + 's {
        schema
            .of(role)
            .iter()
            .map(|&i| self.values[i as usize].unwrap_or_default())
    }
}

/// Appends a `u32` length, then `bytes` (what [`Reader::blob`] reads).
pub fn put_blob(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Why an encoding was refused: what a loader logs (`cell count 4294967295
/// exceeds the payload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes end before a field.
    Truncated,
    /// A count (the text names what it counts) larger than the bytes left could hold.
    Count(&'static str, u64),
    /// A field that `encode` never writes (the text says which).
    Invalid(&'static str),
    /// An encoding version this release does not know: a newer one wrote it.
    UnknownVersion(i64),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Truncated => f.write_str("the payload ends early"),
            DecodeError::Count(what, n) => write!(f, "{what} count {n} exceeds the payload"),
            DecodeError::Invalid(what) => f.write_str(what),
            DecodeError::UnknownVersion(v) => f.write_str(&newer_release(*v)),
        }
    }
}

/// Why a payload of encoding version `version` is refused: no release
/// before this one wrote it, so a newer one did (`docs/upgrading.md` lists
/// which release writes what).
pub fn newer_release(version: i64) -> String {
    format!(
        "encoding version {version} is unknown to recipes {}: it was written by a newer \
         release; load it with that release or a later one (docs/upgrading.md)",
        crate::release::RELEASE.to_string_lossy()
    )
}

/// Reads little-endian fields from encoded bytes; `Truncated` past the end.
pub struct Reader<'a> {
    pub buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError::Truncated);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        self.bytes(N)?
            .try_into()
            .map_err(|_| DecodeError::Truncated)
    }
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array().map(u16::from_le_bytes)
    }
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_le_bytes)
    }
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_le_bytes)
    }
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        self.array().map(i64::from_le_bytes)
    }
    /// A `u32` length, then that many bytes.
    pub fn blob(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.u32()? as usize;
        self.bytes(n)
    }
    /// A count of items of at least `item_bytes` each (`u32`, or `u64` with
    /// `wide`), refused when the bytes left cannot hold that many.
    pub fn count(
        &mut self,
        what: &'static str,
        item_bytes: usize,
        wide: bool,
    ) -> Result<usize, DecodeError> {
        let n = if wide {
            self.u64()?
        } else {
            self.u32()?.into()
        };
        match usize::try_from(n) {
            Ok(fits) if fits.saturating_mul(item_bytes) <= self.buf.len() => Ok(fits),
            _ => Err(DecodeError::Count(what, n)),
        }
    }
    /// A varint ([`super::varint`]).
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let (n, len) = super::varint::get(self.buf).ok_or(DecodeError::Truncated)?;
        self.buf = &self.buf[len..];
        Ok(n)
    }
    /// A varint count of items of at least `item_bytes` each, refused when
    /// the bytes left cannot hold that many.
    pub fn varint_count(
        &mut self,
        what: &'static str,
        item_bytes: usize,
    ) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        match usize::try_from(n) {
            Ok(fits) if fits.saturating_mul(item_bytes) <= self.buf.len() => Ok(fits),
            _ => Err(DecodeError::Count(what, n)),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn schemas_declared_alike_are_shared_and_swept_when_unused() {
        let parse = |names: &[&str]| {
            let tokens: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
            Schema::parse(&tokens, &DECL, &[], Declarer::Client)
                .unwrap()
                .0
        };
        let a = parse(&["VALUE", "shared-probe-user"]).shared();
        let b = parse(&["VALUE", "shared-probe-user"]).shared();
        let c = parse(&["VALUE", "shared-probe-other"]).shared();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        drop((a, b));
        // Many distinct schemas that die at once are swept, not kept.
        for i in 0..1_000 {
            drop(parse(&["VALUE", &format!("shared-probe-{i}")]).shared());
        }
        let table = INTERNED.lock().unwrap().table.len();
        assert!(table < 200, "{table} entries kept");
        assert!(Arc::ptr_eq(
            &c,
            &parse(&["VALUE", "shared-probe-other"]).shared()
        ));
    }

    use super::*;
    use crate::args::Takes;

    const DECL: Declaration = Declaration {
        lists: &[
            ("VALUE", Role::Value),
            ("SCOPE", Role::Scope),
            ("PARTITION", Role::Partition),
        ],
        may_share: &[],
        reserved: &["VALUE", "SCOPE", "PARTITION", "EXPIRE", "NEVER", "AT"],
    };
    const OPTS: [OptionSpec; 1] = [("EXPIRE", Takes::Value)];

    fn toks<'a>(s: &'a [&'a str]) -> Vec<&'a [u8]> {
        s.iter().map(|t| t.as_bytes()).collect()
    }

    fn names(schema: &Schema, role: Role) -> Vec<String> {
        schema
            .of(role)
            .iter()
            .map(|&i| String::from_utf8_lossy(schema.name(i)).into_owned())
            .collect()
    }

    #[test]
    fn lists_and_options_in_any_order() {
        let t = toks(&[
            "partition",
            "date",
            "EXPIRE",
            "60",
            "VALUE",
            "user",
            "device",
            "SCOPE",
            "month",
        ]);
        let (schema, [expire]) = Schema::parse(&t, &DECL, &OPTS, Declarer::Client).unwrap();
        assert_eq!(names(&schema, Role::Value), ["user", "device"]);
        assert_eq!(names(&schema, Role::Scope), ["month"]);
        assert_eq!(names(&schema, Role::Partition), ["date"]);
        assert_eq!(expire, Some(&b"60"[..]));
        let args = schema.create_args(&DECL);
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let (again, _) = Schema::parse(&args, &DECL, &OPTS, Declarer::Client).unwrap();
        for role in [Role::Value, Role::Scope, Role::Partition] {
            assert_eq!(names(&again, role), names(&schema, role));
        }
    }

    #[test]
    fn refusals_name_the_argument() {
        let err = |s: &[&str]| {
            Schema::parse(&toks(s), &DECL, &OPTS, Declarer::Client)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&["VALUE", "at"]),
            "ERR 'at' is a keyword (AT of HCOUNTER.INCR, HCOUNTER.INCRBY, RV.ADD, TOPN.COUNT, \
             TOPN.INCR, TOPN.INCRBY, TOPN.TOP, TOPN.TOP24, ULIST.ADD) and cannot be a name"
        );
        // A keyword of another family's commands too: TTL is HCOUNTER's, ULIST says EXPIRE.
        assert_eq!(
            err(&["VALUE", "session_id", "ttl"]),
            "ERR 'ttl' is a keyword (TTL of HCOUNTER.CREATE, RV.ADD, TL.PUSH) and cannot be a name"
        );
        assert_eq!(
            err(&["VALUE", "a", "a"]),
            "ERR name 'a' declared more than once"
        );
        assert_eq!(
            err(&["VALUE", "a", "SCOPE", "a"]),
            "ERR name 'a' declared more than once"
        );
        assert_eq!(
            err(&["VALUE", "SCOPE", "s"]),
            "ERR VALUE needs at least one name ('SCOPE' is a keyword of this command, not a name)"
        );
        assert_eq!(
            err(&["VALUE", "value"]),
            "ERR VALUE needs at least one name ('value' is a keyword of this command, not a name)"
        );
        // An option keyword too, before its own value is looked at.
        assert_eq!(
            err(&["VALUE", "expire"]),
            "ERR VALUE needs at least one name ('expire' is a keyword of this command, not a name)"
        );
        assert_eq!(
            err(&["VALUE", "a", "SCOPE"]),
            "ERR SCOPE needs at least one name"
        );
        assert_eq!(err(&["x", "VALUE", "a"]), "ERR unexpected argument 'x'");
        assert_eq!(
            err(&["VALUE", "a", "VALUE", "b"]),
            "ERR VALUE given more than once"
        );
        assert_eq!(err(&["VALUE", ""]), "ERR a name cannot be empty");
        assert_eq!(err(&["VALUE", "a", "EXPIRE"]), "ERR EXPIRE needs a value");
    }

    #[test]
    fn schema_encoding_roundtrip() {
        let t = toks(&["VALUE", "a\x00b", "SCOPE", "s", "PARTITION", "p", "q"]);
        let (schema, _) = Schema::parse(&t, &DECL, &OPTS, Declarer::Client).unwrap();
        let mut out = Vec::new();
        schema.encode(&mut out);
        let mut r = Reader { buf: &out };
        assert_eq!(Schema::decode(&mut r), Ok(schema));
        assert!(r.is_empty());
        for cut in 0..out.len() {
            assert_eq!(
                Schema::decode(&mut Reader { buf: &out[..cut] }),
                Err(DecodeError::Truncated)
            );
        }
    }

    #[test]
    fn pairs_are_checked_per_command() {
        let t = toks(&["VALUE", "user", "SCOPE", "month", "PARTITION", "day"]);
        let (schema, _) = Schema::parse(&t, &DECL, &OPTS, Declarer::Client).unwrap();
        let opts = [("AT", Takes::Value)];
        let t = toks(&["day", "d1", "AT", "5", "user", "u:1", "month", "m"]);
        let (pairs, [at]) = Pairs::parse(&schema, &t, &opts).unwrap();
        assert_eq!(at, Some(&b"5"[..]));
        pairs
            .check(&schema, &[Role::Value, Role::Scope, Role::Partition], &[])
            .unwrap();
        let scope_then_value: Vec<&[u8]> = pairs
            .values_of(&schema, Role::Scope)
            .chain(pairs.values_of(&schema, Role::Value))
            .collect();
        assert_eq!(scope_then_value, [&b"m"[..], b"u:1"]);
        let e = pairs
            .check(&schema, &[Role::Value, Role::Scope], &[])
            .unwrap_err();
        assert_eq!(e.to_string(), "ERR name 'day' does not belong here");

        let t = toks(&["user", "u"]);
        let (pairs, _) = Pairs::parse(&schema, &t, &opts).unwrap();
        let e = pairs
            .check(&schema, &[Role::Value, Role::Scope], &[])
            .unwrap_err();
        assert_eq!(e.to_string(), "ERR missing name 'month'");
        assert_eq!(
            pairs.of(&schema, &[Role::Scope, Role::Value]),
            [None, Some(&b"u"[..])]
        );

        let err = |s: &[&str]| {
            Pairs::parse(&schema, &toks(s), &opts)
                .err()
                .unwrap()
                .to_string()
        };
        assert_eq!(err(&["who", "x"]), "ERR unknown name 'who'");
        assert_eq!(
            err(&["user", "a", "user", "b"]),
            "ERR name 'user' given more than once"
        );
        assert_eq!(err(&["user"]), "ERR name 'user' needs a value");
        assert_eq!(err(&["User", "a"]), "ERR unknown name 'User'");
        // A value may be anything, keywords included.
        let t = toks(&["user", "AT"]);
        assert!(Pairs::parse(&schema, &t, &opts).is_ok());
    }

    /// A declaration replayed from the AOF or a master was accepted by the
    /// release that wrote it: a name that is a keyword of another command
    /// now still declares (a client's is refused), and the family's own
    /// grammar still holds.
    #[test]
    fn replayed_declarations_keep_names_that_became_keywords() {
        let t = toks(&["VALUE", "user", "SCOPE", "group", "refresh"]);
        assert!(Schema::parse(&t, &DECL, &OPTS, Declarer::Client)
            .unwrap_err()
            .to_string()
            .contains("'group' is a keyword"));
        let (schema, _) = Schema::parse(&t, &DECL, &OPTS, Declarer::Replay).unwrap();
        assert_eq!(names(&schema, Role::Scope), ["group", "refresh"]);
        // The family's own words are names on no path, and the refusal says so.
        let replayed = |s: &[&str]| {
            Schema::parse(&toks(s), &DECL, &OPTS, Declarer::Replay)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            replayed(&["VALUE", "user", "expire"]),
            "ERR EXPIRE needs a value"
        );
        assert_eq!(
            replayed(&["VALUE", "expire", "SCOPE", "CURSOR"]),
            "ERR VALUE needs at least one name ('expire' is a keyword of this command, not a name)"
        );
        assert_eq!(
            replayed(&["VALUE", "user", "SCOPE", "scope"]),
            "ERR SCOPE needs at least one name ('scope' is a keyword of this command, not a name)"
        );
        assert_eq!(
            replayed(&["VALUE", "user", "SCOPE", "at"]),
            "ERR 'at' is a keyword of this command (AT) and cannot be a name"
        );
    }

    /// A call giving every name once, in declared order, is read at once
    /// (`Schema::is_in_order`), the same as the general loop reads it.
    #[test]
    fn pairs_in_declared_order_read_as_in_any_order() {
        let t = toks(&["VALUE", "user", "SCOPE", "refresh"]);
        let (schema, _) = Schema::parse(&t, &DECL, &OPTS, Declarer::Replay).unwrap();
        let opts = [("REFRESH", Takes::Nothing), ("AT", Takes::Value)];
        let read = |s: &[&str]| {
            let (pairs, options) = Pairs::parse(&schema, &toks(s), &opts).unwrap();
            let roles = [Role::Value, Role::Scope];
            pairs.check(&schema, &roles, &[]).unwrap();
            let values: Vec<Vec<u8>> = (pairs.of(&schema, &roles).into_iter().flatten())
                .map(<[u8]>::to_vec)
                .collect();
            (values, options.map(|o| o.map(<[u8]>::to_vec)))
        };
        let in_order = read(&["user", "AT", "refresh", "REFRESH"]);
        assert_eq!(in_order, read(&["refresh", "REFRESH", "user", "AT"]));
        assert_eq!(in_order.0, [b"AT".to_vec(), b"REFRESH".to_vec()]);
        assert_eq!(in_order.1, [None, None]);
        let err = |s: &[&str]| {
            Pairs::parse(&schema, &toks(s), &opts)
                .err()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            err(&["user", "a", "user", "b"]),
            "ERR name 'user' given more than once"
        );
        let e = (Pairs::parse(&schema, &toks(&["user", "u"]), &opts)
            .unwrap()
            .0)
            .check(&schema, &[Role::Value, Role::Scope], &[])
            .unwrap_err();
        assert_eq!(e.to_string(), "ERR missing name 'refresh'");
    }

    /// A token equal to a declared name is that name, before any option of
    /// the command: a key declared before a word became a keyword is still
    /// written and read by it. Other spellings are the option.
    #[test]
    fn declared_names_win_over_option_keywords() {
        let t = toks(&["VALUE", "user", "SCOPE", "refresh"]);
        let (schema, _) = Schema::parse(&t, &DECL, &OPTS, Declarer::Replay).unwrap();
        let opts = [("REFRESH", Takes::Nothing), ("AT", Takes::Value)];
        let t = toks(&["refresh", "r1", "user", "u", "REFRESH", "AT", "5"]);
        let (pairs, [refresh, at]) = Pairs::parse(&schema, &t, &opts).unwrap();
        assert_eq!((refresh, at), (Some(&b""[..]), Some(&b"5"[..])));
        assert_eq!(pairs.of(&schema, &[Role::Scope]), [Some(&b"r1"[..])]);
        let t = toks(&["refresh", "r1", "user", "u"]);
        let (_, [refresh, _]) = Pairs::parse(&schema, &t, &opts).unwrap();
        assert_eq!(refresh, None);
    }
}
