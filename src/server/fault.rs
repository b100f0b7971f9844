//! Test-only fault injection: with `RECIPES_FAULT_PANIC_KEY=save:<name>` in
//! the server's environment, saving the value of key `<name>` panics; with
//! `write:<name>`, replicating an effect of a write to it does; with
//! `command:<name>`, a write command on it does before reading the key; so
//! the fault suite can show what `panics` does about it. Unset (as in production) each
//! check is one load of a static. Uses nothing of the crate.

use std::sync::OnceLock;

static FAULT_KEY: OnceLock<Option<Vec<u8>>> = OnceLock::new();

/// At module load: reads the fault key from the environment.
pub fn init() {
    let _ =
        FAULT_KEY.set(std::env::var_os("RECIPES_FAULT_PANIC_KEY").map(|k| k.into_encoded_bytes()));
}

/// Where the test-only fault injection may strike.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fault {
    /// Encoding the key's value for RDB, DUMP or an AOF rewrite.
    Save,
    /// Replicating an effect of a write to the key (after the write changed it).
    Write,
    /// A write command of ours on the key, before it reads the key.
    Command,
}

/// Whether the test-only fault injection is on (never in production).
pub fn armed() -> bool {
    matches!(FAULT_KEY.get(), Some(Some(_)))
}

/// Panics when the test-only fault key names `fault` and `name`
/// (`RECIPES_FAULT_PANIC_KEY=save:<name>` or `write:<name>`).
pub fn inject(fault: Fault, name: &[u8]) {
    let Some(Some(spec)) = FAULT_KEY.get() else {
        return;
    };
    let prefix: &[u8] = match fault {
        Fault::Save => b"save:",
        Fault::Write => b"write:",
        Fault::Command => b"command:",
    };
    if spec.strip_prefix(prefix) == Some(name) {
        panic!(
            "RECIPES_FAULT_PANIC_KEY: {fault:?} of {}",
            String::from_utf8_lossy(name)
        );
    }
}
