//! Valkey 9's atomic slot migration (`CLUSTER MIGRATESLOTS`). Valkey refuses
//! it for the whole cluster unless every loaded module declares it can cope
//! (`VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION`); the module does so
//! where the server is Valkey 9 or newer. Elsewhere that option bit means
//! nothing or something else, so it is never set there, and the module loads
//! as before.
//!
//! What coping means here: while slots are imported into this node, their
//! keys arrive (the source's snapshot, then its stream of writes) before this
//! node owns them. Background reclaim leaves such keys alone until the import
//! completes: their owner's own reclaim reaches them through the stream, and
//! a replica of this node must not see removals for keys it may never own.
//! When an import is aborted, or this node's slots were exported, Valkey trims
//! those keys in the background; [`take_changes`] hands their slots to the
//! schedules, which drop what they hold there, and hands them the slots of
//! an import that starts, so no trim drops keys that arrive again.

use super::api::api;
use super::ctx::Ctx;
use redis_module::raw;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, MutexGuard};

/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (Valkey 9.0+).
pub const HANDLE_ATOMIC_SLOT_MIGRATION: u32 = 1 << 5;

/// `ValkeyModuleEvent_AtomicSlotMigration` and its subevents (Valkey 9.0+).
const EVENT: u64 = 19;
const IMPORT_STARTED: u64 = 0;
const IMPORT_ABORTED: u64 = 2;
const IMPORT_COMPLETED: u64 = 4;
const EXPORT_COMPLETED: u64 = 5;

/// `ValkeyModuleSlotRange`: first and last slot, inclusive.
#[repr(C)]
struct SlotRange {
    start: c_int,
    end: c_int,
}

/// `ValkeyModuleAtomicSlotMigrationInfoV1`, as Valkey 9 passes it.
#[repr(C)]
struct MigrationInfo {
    version: u64,
    job_name: [c_char; 41],
    slot_ranges: *const SlotRange,
    num_slot_ranges: u32,
}

/// Slots `[first, last]`.
pub type Slots = (u16, u16);

/// A change of what this node holds, in the order Valkey reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The slots' keys left (an export completed, an import aborted).
    Gone(Slots),
    /// The slots' keys are arriving again (an import started).
    Arriving(Slots),
}

/// A set of slots, one bit each.
#[derive(Clone)]
pub struct SlotSet(Box<[u64; 256]>);

impl SlotSet {
    pub fn new() -> Self {
        SlotSet(Box::new([0; 256]))
    }

    pub fn set(&mut self, (first, last): Slots, on: bool) {
        for slot in first..=last.min(16383) {
            let (word, bit) = (usize::from(slot / 64), slot % 64);
            if on {
                self.0[word] |= 1 << bit;
            } else {
                self.0[word] &= !(1 << bit);
            }
        }
    }

    pub fn contains(&self, slot: u16) -> bool {
        self.0[usize::from(slot / 64) % 256] & (1 << (slot % 64)) != 0
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

struct State {
    /// Imports in progress: job name and slots.
    importing: Vec<(Vec<u8>, Vec<Slots>)>,
    /// Changes not yet handed to the schedules.
    changes: Vec<Change>,
}

static STATE: Mutex<State> = Mutex::new(State {
    importing: Vec::new(),
    changes: Vec::new(),
});

fn state() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether the server is Valkey 9 or newer (its INFO names a
/// `valkey_version`; Redis has none).
fn is_valkey_9(ctx: Ctx) -> bool {
    let info = api!(RedisModule_GetServerInfo(ctx.0, c"server".as_ptr()));
    if info.is_null() {
        return false;
    }
    let field = api!(RedisModule_ServerInfoGetFieldC(
        info,
        c"valkey_version".as_ptr()
    ));
    let major = (!field.is_null())
        .then(|| {
            // Sound: Redis returns a NUL-terminated string owned by `info`,
            // read before `info` is freed.
            let version = unsafe { CStr::from_ptr(field) }.to_string_lossy();
            version.split('.').next()?.parse::<u32>().ok()
        })
        .flatten();
    api!(RedisModule_FreeServerInfo(ctx.0, info));
    major.is_some_and(|m| m >= 9)
}

/// At load: the module options to add on this server (the opt-in on Valkey
/// 9+, none elsewhere), and the subscription to the migration events.
pub fn enable(ctx: Ctx) -> u32 {
    if !is_valkey_9(ctx) {
        return 0;
    }
    let event = raw::RedisModuleEvent {
        id: EVENT,
        dataver: 1,
    };
    api!(RedisModule_SubscribeToServerEvent(
        ctx.0,
        event,
        Some(on_migration)
    ));
    HANDLE_ATOMIC_SLOT_MIGRATION
}

extern "C" fn on_migration(
    _ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    let _ = std::panic::catch_unwind(|| {
        if data.is_null() {
            return;
        }
        // Sound: for this event Valkey passes its migration info, whose
        // ranges array holds `num_slot_ranges` entries during the call.
        let info = unsafe { &*data.cast::<MigrationInfo>() };
        if info.version < 1 {
            return;
        }
        let job = unsafe { CStr::from_ptr(info.job_name.as_ptr()) }
            .to_bytes()
            .to_vec();
        let ranges = if info.slot_ranges.is_null() {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(info.slot_ranges, info.num_slot_ranges as usize) }
        };
        let slots: Vec<Slots> = ranges
            .iter()
            .map(|r| (r.start.clamp(0, 16383) as u16, r.end.clamp(0, 16383) as u16))
            .collect();
        let mut st = state();
        match subevent {
            IMPORT_STARTED => {
                st.changes
                    .extend(slots.iter().copied().map(Change::Arriving));
                st.importing.push((job, slots));
            }
            IMPORT_COMPLETED => st.importing.retain(|(j, _)| *j != job),
            IMPORT_ABORTED => {
                st.importing.retain(|(j, _)| *j != job);
                st.changes.extend(slots.into_iter().map(Change::Gone));
            }
            EXPORT_COMPLETED => st.changes.extend(slots.into_iter().map(Change::Gone)),
            _ => {}
        }
    });
}

/// Whether the key `name` belongs to slots being imported into this node.
pub fn importing(name: &[u8]) -> bool {
    let st = state();
    if st.importing.is_empty() {
        return false;
    }
    let slot = key_slot(name);
    st.importing
        .iter()
        .flat_map(|(_, slots)| slots)
        .any(|&(first, last)| (first..=last).contains(&slot))
}

/// What changed since the last call, in order.
pub fn take_changes() -> Vec<Change> {
    std::mem::take(&mut state().changes)
}

/// The cluster slot of a key: CRC16 (XMODEM) of its hash tag (the part
/// between the first `{` and the next `}`, when not empty) or of the whole
/// name, modulo 16384.
pub fn key_slot(name: &[u8]) -> u16 {
    let hashed = name
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &name[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(name);
    crc16(hashed) % 16384
}

fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::{key_slot, SlotSet};

    #[test]
    fn slot_sets_add_and_take_away_ranges() {
        let mut set = SlotSet::new();
        assert!(set.is_empty());
        set.set((100, 200), true);
        set.set((150, 160), false);
        assert!(set.contains(100) && set.contains(149) && set.contains(161));
        assert!(!set.contains(150) && !set.contains(160) && !set.contains(201));
        set.set((0, 16383), false);
        assert!(set.is_empty());
        set.set((16383, 16383), true);
        assert!(set.contains(16383) && !set.is_empty());
    }

    /// Slots as `CLUSTER KEYSLOT` answers them.
    #[test]
    fn key_slots_match_the_cluster() {
        assert_eq!(key_slot(b"123456789"), 12739);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b""), 0);
    }
}
