//! Persistence: the versioned encoding (RDB, DUMP), its decoder, and the replay of a key's
//! content as increments (AOF rewrite).

use super::bucket::EMPTY;
use super::bucket::{Bucket, Table};
use super::key::Full;
use crate::topn::encoding::{
    write, DecodeError, Reader, ENCODING_VERSION, ENCODING_VERSION_ALIGNED, ENCODING_VERSION_VIEWS,
};
use crate::topn::shape::Shape;
use crate::topn::views::{Views, MAX_VIEWS};

impl Full {
    /// Live buckets with their nonzero entries, ascending.
    pub(super) fn live_buckets(&self) -> impl Iterator<Item = &Bucket> + '_ {
        self.buckets.iter().filter(move |b| !self.is_stale(b.idx))
    }

    /// Versioned binary encoding (little endian):
    /// `u8 version=1, i64 bucket_ms, u32 window, u8 has_clock, i64 clock,
    ///  u32 nmembers, nmembers x (u32 len, bytes),
    ///  u32 nbuckets, nbuckets x (i64 bucket, u32 nentries, nentries x (u32 member, i64 count))`.
    /// A key with a non-zero ALIGN writes `version=2` and `i64 align_ms` after the window; a key
    /// with VIEWS writes `version=3`, `i64 align_ms` (0 too) and `u8 nviews, nviews x u32 k`
    /// after the window; a key with neither keeps writing version 1, byte for byte.
    /// Only live buckets and nonzero counts are written. The bytes are a function of the
    /// content alone (members in byte order, a bucket's entries by member), not of table
    /// layouts, so a replica encodes exactly what its master does. Cost: sorting the names,
    /// O(M log M), and each bucket's entries.
    pub fn encode(&self) -> Vec<u8> {
        let buckets: Vec<(i64, Vec<(u32, i64)>)> = self
            .live_buckets()
            .map(|b| (b.idx, b.iter().filter(|(_, v)| *v != 0).collect::<Vec<_>>()))
            .filter(|(_, entries)| !entries.is_empty())
            .collect();
        // Member numbers: the members written, in byte order.
        let mut renum: Vec<u32> = vec![EMPTY; self.m.nslots];
        let mut names: Vec<u32> = Vec::new();
        for (_, entries) in &buckets {
            for &(id, _) in entries {
                if renum[id as usize] == EMPTY {
                    renum[id as usize] = 0;
                    names.push(id);
                }
            }
        }
        names.sort_unstable_by(|a, b| self.m.name(*a).cmp(self.m.name(*b)));
        for (n, &id) in names.iter().enumerate() {
            renum[id as usize] = n as u32;
        }
        let names: Vec<&[u8]> = names.iter().map(|&id| self.m.name(id)).collect();
        let buckets: Vec<(i64, Vec<(u32, i64)>)> = buckets
            .into_iter()
            .map(|(idx, entries)| {
                let mut entries: Vec<(u32, i64)> = entries
                    .into_iter()
                    .map(|(id, v)| (renum[id as usize], v))
                    .collect();
                entries.sort_unstable_by_key(|e| e.0);
                (idx, entries)
            })
            .collect();
        let shape = Shape {
            bucket_ms: self.bucket_ms,
            window: self.window,
            align_ms: self.align_ms,
            clock: self.clock,
        };
        write(&shape, &self.declared_views(), &names, &buckets)
    }

    /// Rebuilds a structure from `encode()` output. Rejects truncated or malformed input.
    #[cfg(test)]
    pub fn decode(bytes: &[u8]) -> Result<Full, DecodeError> {
        Self::decode_at(bytes, None)
    }

    /// `decode`, for a server whose time is `now_ms`: buckets that already left the window at
    /// that time are loaded aged (out of the aggregate), so no upkeep is owed for them.
    pub fn decode_at(bytes: &[u8], now_ms: Option<i64>) -> Result<Full, DecodeError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if ![
            ENCODING_VERSION,
            ENCODING_VERSION_ALIGNED,
            ENCODING_VERSION_VIEWS,
        ]
        .contains(&version)
        {
            return Err(DecodeError::UnknownVersion(version.into()));
        }
        let bucket_ms = r.i64()?;
        if bucket_ms < 1 {
            return Err(DecodeError::Invalid("bucket_ms"));
        }
        let window = r.u32()?;
        if window < 1 {
            return Err(DecodeError::Invalid("window"));
        }
        let align_ms = if version == ENCODING_VERSION_ALIGNED {
            // Version 2 exists only for a non-zero ALIGN, so 0 is as malformed as one too big.
            let align_ms = r.i64()?;
            if !(1..bucket_ms).contains(&align_ms) {
                return Err(DecodeError::Invalid("align_ms"));
            }
            align_ms
        } else if version == ENCODING_VERSION_VIEWS {
            let align_ms = r.i64()?;
            if !(0..bucket_ms).contains(&align_ms) {
                return Err(DecodeError::Invalid("align_ms"));
            }
            align_ms
        } else {
            0
        };
        let views = if version == ENCODING_VERSION_VIEWS {
            let n = r.u8()? as usize;
            if n == 0 || n > MAX_VIEWS {
                return Err(DecodeError::Invalid("number of views"));
            }
            let mut ks = Vec::with_capacity(n);
            for _ in 0..n {
                ks.push(i64::from(r.u32()?));
            }
            let views = Views::new(&ks, window).map_err(|_| DecodeError::Invalid("views"))?;
            // The set's own order: a payload is a function of the content.
            if !views.iter().map(i64::from).eq(ks.iter().copied()) {
                return Err(DecodeError::Invalid("views out of order"));
            }
            views
        } else {
            Views::NONE
        };
        let has_clock = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(DecodeError::Invalid("clock flag")),
        };
        let clock = r.i64()?;
        if !has_clock && clock != 0 {
            return Err(DecodeError::Invalid("clock"));
        }
        let mut t = Full::new(bucket_ms, window)
            .with_align(align_ms)
            .with_views(&views);
        t.clock = if has_clock { Some(clock) } else { None };
        if let Some(now) = now_ms {
            t.observe_time(now);
        }
        if has_clock {
            t.agg_lo = t.agg_target();
        }

        let nmembers = r.u32()? as usize;
        if nmembers > r.rest().len() / 4 {
            return Err(DecodeError::Truncated);
        }
        if !has_clock && nmembers != 0 {
            return Err(DecodeError::Invalid("members without clock"));
        }
        t.m.reserve(nmembers);
        for _ in 0..nmembers {
            let len = r.u32()? as usize;
            let name = r.bytes(len)?;
            let hash = t.m.hash_name(name);
            if t.m.find(name, hash).is_some() {
                return Err(DecodeError::Invalid("duplicate member"));
            }
            t.m.intern_raw(name, hash);
        }
        let nbuckets = r.u32()? as usize;
        if nbuckets > r.rest().len() / 12 {
            return Err(DecodeError::Truncated);
        }
        let lo = t.live_lo(clock);
        let mut prev: Option<i64> = None;
        for _ in 0..nbuckets {
            let idx = r.i64()?;
            if !has_clock || idx < lo || idx > clock {
                return Err(DecodeError::Invalid("bucket outside the window"));
            }
            if prev.is_some_and(|p| idx <= p) {
                return Err(DecodeError::Invalid("buckets out of order"));
            }
            prev = Some(idx);
            let nentries = r.u32()? as usize;
            if nentries == 0 {
                return Err(DecodeError::Invalid("empty bucket"));
            }
            if nentries > r.rest().len() / 12 {
                return Err(DecodeError::Truncated);
            }
            let mut b = Bucket::new(idx);
            b.cur = Table::with_cap(nentries * 5 / 4 + 1);
            for _ in 0..nentries {
                let m = r.u32()?;
                let v = r.i64()?;
                if m as usize >= nmembers {
                    return Err(DecodeError::Invalid("member number"));
                }
                if v == 0 {
                    return Err(DecodeError::Invalid("zero count"));
                }
                let (pos, inserted) = b.entry(m);
                if !inserted {
                    return Err(DecodeError::Invalid("duplicate entry"));
                }
                b.set(pos, v);
                t.total_entries += 1;
                t.m.meta_mut(m).refs += 1;
                let clock_total = t.m.clock_total(m) + v as i128;
                t.m.set_clock_total(m, clock_total);
                if idx >= t.agg_lo {
                    let total = t.m.total(m) + v as i128;
                    t.m.set_total(m, total);
                }
            }
            if b.min_val < 0 {
                t.neg.insert(idx);
            }
            t.buckets.push_back(b);
        }
        if !r.rest().is_empty() {
            return Err(DecodeError::Invalid("trailing bytes"));
        }
        if t.m.ids().any(|id| t.m.meta(id).refs == 0) {
            return Err(DecodeError::Invalid("unused member"));
        }
        t.load_views();
        t.m.names.rebuild_index();
        if t.wants_clock_index() {
            // Buckets loaded aged: reads at the clock walk the clock index from the start (a
            // load is one step anyway; a second sorted build, like the order index's).
            t.m.names.rebuild_clock_index();
        }
        // Sealed buckets packed now too (a few ms for millions of entries, in a load that is
        // one step anyway): a replica's reads right after its sync sum packed copies, not
        // tables, as its master's do.
        t.pack(1 << 40);
        Ok(t)
    }

    /// Every nonzero count of the live buckets as `(bucket, member, count)`, by bucket.
    pub fn live_entries(&self) -> impl Iterator<Item = (i64, &[u8], i64)> + '_ {
        self.live_buckets().flat_map(move |b| {
            b.iter()
                .filter(|&(_, v)| v != 0)
                .map(move |(id, v)| (b.idx, self.m.name(id), v))
        })
    }

    /// Increments that rebuild an equal structure when replayed with `incr` in order (on a
    /// fresh `Full::new(bucket_ms, window)`): `(member, by, at_ms)` in ascending bucket order.
    /// A final `(b"", 0, clock_ms)` restores the clock when the newest live bucket holds no
    /// nonzero count.
    pub fn replay_events(&self) -> Vec<(&[u8], i64, i64)> {
        let mut out = Vec::new();
        let mut last: Option<i64> = None;
        for b in self.live_buckets() {
            let at = self.bucket_start(b.idx);
            for (id, v) in b.iter() {
                if v != 0 {
                    out.push((self.m.name(id), v, at));
                    last = Some(b.idx);
                }
            }
        }
        if let Some(c) = self.clock {
            if last != Some(c) {
                out.push((&b""[..], 0, self.bucket_start(c)));
            }
        }
        out
    }
}
