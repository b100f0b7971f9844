//! TOPN's data structure: exact top-N over a sliding window of time buckets.
//! Pure Rust, std only, no FFI.
//!
//! Design:
//! - Time is cut into buckets starting ALIGN after the epoch's multiples of the bucket width
//!   (`bucket = (at_ms - align_ms).div_euclid(bucket_ms)`). The key's *clock* is the newest
//!   bucket ever written (monotone); *live* buckets are `[clock - window + 1, clock]`. Writes
//!   older than that are ignored; reads only ever see live buckets.
//! - Members are interned once: each name is one heap block `[id][len][bytes]` owned by its slot
//!   (`id -> name, total, refs`, in fixed chunks that never reallocate) and referenced by the
//!   lookup table (`hash|id` cells, linear probing, grown by incremental migration like Redis'
//!   rehash) and by the order index (16-byte keys).
//! - Each bucket is a flat open-addressing map `u32 id -> i64 count` (two plain arrays: freeing
//!   a bucket is a few deallocations, whatever its size), with a per-bucket hash seed.
//! - No call does O(size) work at once: hash tables grow by incremental migration, big new
//!   arrays are initialized lazily chunk by chunk, slot chunks never reallocate.
//! - A running aggregate `total` per member (exact: i128, in a side table when beyond i64) is
//!   ordered by `BTreeSet<(total desc, name asc)>`: a read whose window is the aggregate's is a
//!   walk of n keys. The aggregate covers the stored buckets from `agg_lo` up; the bucket at
//!   `agg_lo` may be covered only from table cell `agg_pos` on.
//! - Two kinds of retirement, both incremental (`retire`, a budget of work units per `incr`, and
//!   `upkeep`, the server's timer):
//!   - *freeing*: a bucket older than the key's window (the clock moved) is walked cell by cell,
//!     each entry released (and subtracted if still in the aggregate); a member is freed when
//!     no stored bucket holds it (`refs == 0`). When the clock jumps past the whole window, the
//!     whole old state moves to a graveyard freed piecewise.
//!   - *aging*: a bucket that left the window at the server's time (`observe_time`) is walked
//!     cell by cell and subtracted from the aggregate, its data kept: reads at an earlier `AT`
//!     still see it, and only the clock frees it. So once upkeep has caught up, the aggregate is
//!     exactly the window at the server's time, however long ago the last write was. This is
//!     internal state: no answer depends on it, and servers need not agree on it.
//! - A bucket being walked is *frozen*: its cells never move (no new cell, no migration), so a
//!   cursor tells which cells are done. Only a bucket being aged can still take writes (a
//!   replica or an AOF replay lagging the server's time): a member it holds is updated in place,
//!   counted in the aggregate if its cell is not aged yet; a new member goes to the bucket's
//!   `extra`, a side bucket never in the aggregate.
//! - A second running total per member, its *clock total*, covers every stored bucket (the
//!   window at the clock, plus what is left of a stale bucket being freed): writes add to it,
//!   freeing subtracts, aging does not touch it (one more addition per write). While a live
//!   bucket is aged (the server's time ran ahead of the clock: an idle key, a replica, a
//!   reload), the clock totals differ from the aggregate, and upkeep builds a second order
//!   index over them, the *clock index*, a slice at a time (O(M log M) once per such spell);
//!   a write then repositions its member in both indexes. Once the clock passes the aged
//!   buckets the clock index is dropped (freed off the main thread).
//! - Reads are `&self` and exact in every state. A read window's counts are one of the two
//!   totals corrected by *fixes*: for the aggregate, subtract its buckets outside the read
//!   window (stale ones, newer than `AT`, older than `LAST k`) and add the aged buckets inside
//!   it; for the clock totals, subtract the stored buckets outside the read window. Each read
//!   corrects whichever needs fewer fixes. Its plans, cheapest first (`read.rs`):
//!   1. no fix: a walk of n keys of an index, O(n log M). A read at the server's time once
//!      upkeep caught up (the aggregate), and a whole-window read at the clock, also with
//!      buckets aged (the clock index).
//!   2. a walk with fixes: each candidate corrected with one lookup per fix, stopping once the
//!      next candidate's bound (its total plus the most a fix can add, from per-bucket value
//!      bounds) cannot beat the n-th best. `LAST 6`, `LAST 12` at the clock.
//!   3. a threshold merge of the read window's k buckets (`merge.rs`, Fagin's TA): their
//!      entries in descending count order (a sealed bucket's from its packed prefix, the
//!      newest bucket's selected at read time: a scan of its cells), k lookups per member
//!      seen, stopping once the n-th best is above the sum of the lists' next counts. A scan
//!      for a list is made when it costs at most half the cheapest sum (see below).
//!   4. sums (`select.rs` then picks the rows): one stored bucket in the read window (`LAST
//!      1`): a selection over that bucket's cells, O(cells); else the cheaper of a dense scan
//!      of the read window's buckets (O(cells + M): an accumulator per member slot, then two
//!      selection passes) and a base's totals corrected by scans of its fixes' buckets (O(M +
//!      their cells)); a hash-map sum only when members outnumber the entries summed about
//!      100 to 1 (a map insertion costs ~100 scanned cells).
//!
//!   Cost unit: a scanned cell (~1.4 ns); a lookup 40, an index step 8. The plan is decided
//!   before any is tried (`plan.rs`): from a floor of the n-th best count (the index's head and
//!   the packed buckets' list heads counted exactly: a few dozen lookups), a walk or a merge is
//!   taken only when it is known to stop within a quarter of the cheapest sum (the cheaper of
//!   the two), else the read sums at once. A walk counts each candidate by its fixes or by the
//!   read window's buckets, whichever takes fewer lookups. The newest bucket's list (a scan) is
//!   made only when no walk is proven and a guess of the lists (the newest packed one standing
//!   in for it) shows a merge still could be; so planning costs what the plan it finds costs, a
//!   read at most about 1.5x the cheapest sum (a scan made for nothing), and usually a walk or a
//!   merge of a few dozen entries.
//!   A bucket older than the newest one (of 4,096 entries or more), or the newest once the
//!   server's time has been past its end for 1 s, gets a *packed copy* from the upkeep timer (`packed.rs`: its entries as id-sorted 4-byte words (8-byte ones for
//!   counts beyond 1-65,535) and its 1,024
//!   highest counts in order, built in resumable slices, dropped (or its packing restarted)
//!   by a write into the bucket, rebuilt 1 s later): a sum scans it at half a unit an entry.
//!   Selection reads names only for the rows returned and for ties at the n-th count.
//!   Measured in-process (`timings::bench_read_shapes`: the bench's three `topn-reads` keys,
//!   24 buckets x 50,000 events over 200,000 members, popularity reversing half-way, 3 buckets
//!   aged; medians of repeated reads at the newest bucket, master and loaded copy, on a busy
//!   machine): skewed and heavy-tailed counts `LAST 1` ~100 us (a selection), `LAST 2`
//!   130-190 us (a merge), `LAST 6` 9-15 us and `LAST 12` 7-9 us (walks), the whole window
//!   0.3 us (a walk of the clock index); flat counts (weighted events spread evenly) go
//!   straight to the sum: `LAST 2` ~0.3 ms, `LAST 6` 0.19-0.25 ms, `LAST 12` 0.33-0.38 ms (in
//!   32-bit accumulators when the value bounds allow; the selection over 200,000 slots ~34 us,
//!   chunk by chunk: `select.rs`), a first read 0.1-0.25 ms more (cold caches; the
//!   accumulators' pages are made ready ahead by the timer: `accumulator.rs`). A load packs
//!   every sealed bucket at once.
//!   Memory: 4 bytes an entry of a sealed bucket and 8 KB a sealed bucket (packed copies), 8
//!   bytes a member (clock totals), ~36 bytes a member while the clock index exists.
//! - *Views* (`VIEWS k ...`, `views.rs`): per declared k, each member's total over the k newest
//!   buckets at the key's newest time, with its own order index, kept by writes and by the same
//!   upkeep budgets (a bucket leaving a view is subtracted from a snapshot of its ids). A read
//!   whose stored buckets are exactly a view's walks that index (plan 1); otherwise views play
//!   no part. About 44 bytes a member a view; a write pays one more index update a view.
//! - The encoding is a function of the content (members in byte order, a bucket's entries by
//!   member): servers with other table layouts (a replica) write the same bytes.
//! - Big arrays no longer needed (a hash table migrated away from) go to `storage::dispose`,
//!   which the server layer points at a background thread: freeing megabytes costs ~1 ms.
//!
//! Files, lowest first (none uses a file above it): `hash.rs` (the lookup table's cells),
//! `paths.rs` (which read plans ran, for tests), `accumulator.rs` (the dense sums'
//! accumulators, kept and made ready), `packed.rs` (packed copies of sealed
//! buckets), `members.rs` (names, totals, order index, lookup), `view.rs` (one view's state),
//! `bucket.rs` (a bucket's table and the scans of sums), `graveyard.rs` (state freed
//! piecewise), `key.rs` (the type, writes, sizes); above it `retire.rs` (freeing, aging,
//! packing, the clock index: the upkeep), `read.rs` (fixes, the cost model, the walk and the
//! sums), `merge.rs` (threshold merges), `plan.rs` (which plan a read takes), `top.rs` (a read:
//! its plan, then that plan), `views.rs`
//! (keeping views), `encoding.rs` (persistence), `defrag.rs` (active defrag); this file only
//! declares them. Tests in `tests.rs` (shared helpers, reads), `tables_tests.rs`,
//! `rules_tests.rs`, `encoding_tests.rs`, `model_tests.rs`, `plan_tests.rs`, `align_tests.rs`,
//! `defrag_tests.rs`, `views_tests.rs`, `timings.rs`.

mod accumulator;
mod bucket;
mod defrag;
mod encoding;
mod graveyard;
mod hash;
mod key;
mod members;
mod merge;
mod packed;
mod paths;
mod plan;
mod read;
mod retire;
mod top;
mod view;
mod views;

pub use accumulator::{tend as tend_read_buffers, READ_BUFFER_BYTES, TICK_MS};
pub use key::Full;
pub use retire::UpkeepShape;

#[cfg(test)]
mod align_tests;
#[cfg(test)]
mod boundary_tests;
#[cfg(test)]
mod defrag_tests;
#[cfg(test)]
mod encoding_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod rules_tests;
#[cfg(test)]
mod seal_tests;
#[cfg(test)]
mod tables_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod timings;
#[cfg(test)]
mod views_tests;
