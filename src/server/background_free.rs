//! Freeing big values off the server's thread.
//!
//! `DEL` of a key holding millions of entries frees them all in the server's
//! thread unless the server's lazyfree settings say otherwise (they are off by
//! default, as for core types). A value is plain Rust memory from Redis'
//! allocator, which is thread-safe (Redis' own lazyfree frees values in its
//! background thread, module values included), and dropping it calls no
//! module API: so a value that takes many allocations to free is sent to one
//! thread of ours and dropped there, and the command returns at once.

use std::any::Any;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

/// Values taking more allocations than this to free go to the thread (as
/// Redis' `LAZYFREE_THRESHOLD`); smaller ones are cheaper to drop here.
pub const THRESHOLD: usize = 64;

type Garbage = Box<dyn Any + Send>;

static QUEUE: OnceLock<Mutex<Sender<Garbage>>> = OnceLock::new();

fn queue() -> Option<&'static Mutex<Sender<Garbage>>> {
    if let Some(queue) = QUEUE.get() {
        return Some(queue);
    }
    let (tx, rx) = channel::<Garbage>();
    std::thread::Builder::new()
        .name("recipes-free".into())
        .spawn(move || {
            for garbage in rx {
                // A panicking destructor must not end the thread.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(garbage)));
            }
        })
        .ok()?;
    // Redis' own lazyfree thread may free a value too: if two threads race
    // here, one sender wins and the other thread ends with its channel.
    Some(QUEUE.get_or_init(|| Mutex::new(tx)))
}

/// Starts the freeing thread (at module load, so no command pays for it).
pub fn start() {
    let _ = queue();
}

/// Drops `value`: here when `effort` (about how many allocations it takes) is
/// small, else on the freeing thread. If that thread cannot be had, here.
pub fn drop_value<T: Send + 'static>(value: Box<T>, effort: usize) {
    if effort <= THRESHOLD {
        return drop(value);
    }
    let Some(queue) = queue() else {
        return drop(value);
    };
    let sender = queue
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Err(returned) = sender.send(value) {
        drop(sender);
        drop(returned.0);
    }
}
