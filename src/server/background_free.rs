//! Drops module-internal garbage on a background thread: a TOPN's old hash
//! tables once migrated, the schedules of a flushed db. Freeing megabytes
//! costs the thread that frees them milliseconds. Key values are not freed
//! here: Redis frees them where its lazyfree settings say (see
//! `module_type::free`), so eviction and `INFO memory` account for them.
//!
//! Sound because what is handed here is plain Rust heap data (`Send`, no
//! Redis handle inside), and the allocator behind it (`RedisModule_Alloc`,
//! Redis' zmalloc) is thread-safe.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

/// What is left of a value to drop: anything `Send`.
pub type Garbage = Box<dyn Send>;

static QUEUE: OnceLock<Option<Sender<Garbage>>> = OnceLock::new();

/// The freeing thread's queue, started on first use; `None` if no thread
/// could be started (then values are dropped where they are freed).
fn queue() -> Option<&'static Sender<Garbage>> {
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = channel::<Garbage>();
            let started = std::thread::Builder::new()
                .name("recipes-free".into())
                .spawn(move || {
                    for garbage in rx {
                        // A panic in a drop stays on this thread: the next value is still freed.
                        let _ = catch_unwind(AssertUnwindSafe(|| drop(garbage)));
                    }
                });
            started.ok().map(|_| tx)
        })
        .as_ref()
}

/// Starts the freeing thread (at module load, so no command pays for it).
pub fn start() {
    let _ = queue();
}

/// Drops `garbage` on the freeing thread (here, if it cannot be started).
pub fn drop_later(garbage: Garbage) {
    match queue() {
        Some(tx) => {
            if let Err(back) = tx.send(garbage) {
                drop(back.0);
            }
        }
        None => drop(garbage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    struct Counted(Arc<AtomicUsize>, std::thread::ThreadId);

    impl Drop for Counted {
        fn drop(&mut self) {
            if std::thread::current().id() != self.1 {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn values_are_dropped_on_another_thread() {
        let dropped = Arc::new(AtomicUsize::new(0));
        for _ in 0..10 {
            drop_later(Box::new(Counted(
                dropped.clone(),
                std::thread::current().id(),
            )));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while dropped.load(Ordering::SeqCst) < 10 {
            assert!(Instant::now() < deadline, "values never dropped");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
