//! Persistence: the content's encoding (RDB, DUMP) and its decoder, and the content as
//! increments (AOF rewrite). The bytes are a function of the content alone (members in byte
//! order, a bucket's entries by member), not of how its buckets are held, so a replica encodes
//! exactly what its master does. The format is `topn/encoding.rs`'s, shared with the compact
//! layout.

use std::collections::VecDeque;

use super::bucket::Bucket;
use super::key::{Content, Full};
use super::members::Members;
use super::sealed::Sealed;
use crate::topn::encoding::{
    write, Reader, ENCODING_VERSION, ENCODING_VERSION_ALIGNED, ENCODING_VERSION_VIEWS,
};
use crate::topn::error::{Error, MAX_VIEWS, MAX_WINDOW};
use crate::topn::shape::Shape;
use crate::topn::views::Views;

impl Full {
    /// The buckets of the window ending at the clock, ascending.
    fn live_buckets(&self) -> impl Iterator<Item = &Bucket> + '_ {
        let shape = &self.content.shape;
        self.content
            .buckets
            .iter()
            .filter(|b| !shape.is_stale(b.idx))
            .map(|b| &**b)
    }

    /// A bucket's nonzero counts by member id (a member's main entry, 0 once it has a late one,
    /// and its late one summed).
    fn counts_of(b: &Bucket) -> Vec<(u32, i64)> {
        let mut v: Vec<(u32, i64)> = Vec::with_capacity(b.len());
        b.for_each(|id, count| v.push((id, count)));
        if !b.ids_unique() {
            v.sort_unstable_by_key(|e| e.0);
            v.dedup_by(|later, first| {
                let same = later.0 == first.0;
                if same {
                    first.1 += later.1;
                }
                same
            });
        }
        v.retain(|e| e.1 != 0);
        v
    }

    /// The versioned binary encoding (`topn/encoding.rs`): the shape, the views, the names of
    /// the members written (in byte order), each live bucket's nonzero counts by member.
    /// Cost: sorting the names, O(M log M), and each bucket's entries.
    pub fn encode(&self) -> Vec<u8> {
        let m = &self.content.members;
        let buckets: Vec<(i64, Vec<(u32, i64)>)> = self
            .live_buckets()
            .map(|b| (b.idx, Full::counts_of(b)))
            .filter(|(_, entries)| !entries.is_empty())
            .collect();
        // Member numbers: the members written, in byte order.
        const NONE: u32 = u32::MAX;
        let mut renum: Vec<u32> = vec![NONE; m.slots()];
        let mut names: Vec<u32> = Vec::new();
        for &(id, _) in buckets.iter().flat_map(|(_, e)| e) {
            if renum[id as usize] == NONE {
                renum[id as usize] = 0;
                names.push(id);
            }
        }
        names.sort_unstable_by(|a, b| m.name(*a).cmp(m.name(*b)));
        for (n, &id) in names.iter().enumerate() {
            renum[id as usize] = n as u32;
        }
        let names: Vec<&[u8]> = names.iter().map(|&id| m.name(id)).collect();
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
        write(&self.content.shape, &self.content.views, &names, &buckets)
    }

    /// Rebuilds a key from `encode()`'s bytes, for a server whose time is `now_ms`: buckets that
    /// left the window at that time load out of the window's sum (no upkeep is owed for them),
    /// buckets older than the clock (or sealed by the time) load sealed. Refuses truncated or
    /// malformed input.
    pub fn decode_at(bytes: &[u8], now_ms: Option<i64>) -> Result<Full, Error> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        let versions = [
            ENCODING_VERSION,
            ENCODING_VERSION_ALIGNED,
            ENCODING_VERSION_VIEWS,
        ];
        if !versions.contains(&version) {
            return Err(Error::UnknownVersion(version.into()));
        }
        let bucket_ms = r.i64()?;
        if bucket_ms < 1 {
            return Err(Error::Invalid("bucket_ms"));
        }
        let window = r.u32()?;
        if !(1..=MAX_WINDOW).contains(&window) {
            return Err(Error::Invalid("window"));
        }
        let align_ms = match version {
            ENCODING_VERSION_ALIGNED => {
                // Version 2 exists only for a non-zero ALIGN: 0 is as malformed as one too big.
                let align_ms = r.i64()?;
                if !(1..bucket_ms).contains(&align_ms) {
                    return Err(Error::Invalid("align_ms"));
                }
                align_ms
            }
            ENCODING_VERSION_VIEWS => {
                let align_ms = r.i64()?;
                if !(0..bucket_ms).contains(&align_ms) {
                    return Err(Error::Invalid("align_ms"));
                }
                align_ms
            }
            _ => 0,
        };
        let views = match version {
            ENCODING_VERSION_VIEWS => decode_views(&mut r, window)?,
            _ => Views::NONE,
        };
        let has_clock = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(Error::Invalid("clock flag")),
        };
        let clock = r.i64()?;
        if !has_clock && clock != 0 {
            return Err(Error::Invalid("clock"));
        }
        let shape = Shape {
            clock: has_clock.then_some(clock),
            ..Shape::new(bucket_ms, window, align_ms)
        };
        let mut members = Members::new(1 + views.len());
        let nmembers = r.u32()? as usize;
        if nmembers > r.rest().len() / 4 {
            return Err(Error::Truncated);
        }
        if !has_clock && nmembers != 0 {
            return Err(Error::Invalid("members without clock"));
        }
        for _ in 0..nmembers {
            let len = r.u32()? as usize;
            let name = r.bytes(len)?;
            let hash = Members::hash(name);
            if members.find(name, hash).is_some() {
                return Err(Error::Invalid("duplicate member"));
            }
            members.intern(name, hash);
        }
        let now = now_ms.unwrap_or(i64::MIN);
        let nbuckets = r.u32()? as usize;
        if nbuckets > r.rest().len() / 12 {
            return Err(Error::Truncated);
        }
        let mut buckets: VecDeque<Box<Bucket>> = VecDeque::with_capacity(nbuckets);
        let mut entries = 0;
        for _ in 0..nbuckets {
            let idx = r.i64()?;
            if !has_clock || shape.is_stale(idx) || idx > clock {
                return Err(Error::Invalid("bucket outside the window"));
            }
            if buckets.back().is_some_and(|b| idx <= b.idx) {
                return Err(Error::Invalid("buckets out of order"));
            }
            let n = r.u32()? as usize;
            if n == 0 {
                return Err(Error::Invalid("empty bucket"));
            }
            if n > r.rest().len() / 12 {
                return Err(Error::Truncated);
            }
            let mut counts: Vec<(u32, i64)> = Vec::with_capacity(n);
            for _ in 0..n {
                let (m, v) = (r.u32()?, r.i64()?);
                if m as usize >= nmembers {
                    return Err(Error::Invalid("member number"));
                }
                if v == 0 {
                    return Err(Error::Invalid("zero count"));
                }
                counts.push((m, v));
                members.add_ref(m);
            }
            // Written by member; sorted anyway, so that any order loads.
            counts.sort_unstable_by_key(|e| e.0);
            if counts.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(Error::Invalid("duplicate entry"));
            }
            entries += n;
            let bucket = match shape.seals_at(idx, i64::MIN) <= now {
                true => {
                    let (ids, counts) = counts.into_iter().unzip();
                    Bucket::sealed(idx, Sealed::from_sorted(ids, counts))
                }
                false => {
                    let mut b = Bucket::new(idx);
                    for (id, v) in counts {
                        b.add(id, v);
                    }
                    b
                }
            };
            buckets.push_back(Box::new(bucket));
        }
        if !r.rest().is_empty() {
            return Err(Error::Invalid("trailing bytes"));
        }
        if members.ids().any(|id| members.refs(id) == 0) {
            return Err(Error::Invalid("unused member"));
        }
        let unsealed = buckets.iter().filter(|b| !b.is_sealed()).count();
        let content = Content {
            shape,
            views,
            members,
            buckets,
            entries,
            unsealed,
        };
        Ok(Full::built(content, now))
    }

    /// Every nonzero count of the live buckets as `(bucket, member, count)`, by bucket.
    pub fn live_entries(&self) -> impl Iterator<Item = (i64, &[u8], i64)> + '_ {
        let m = &self.content.members;
        self.live_buckets().flat_map(move |b| {
            let counts = Full::counts_of(b);
            counts
                .into_iter()
                .map(move |(id, v)| (b.idx, m.name(id), v))
        })
    }

    /// Increments that rebuild an equal key when replayed with `incr` in order on an empty
    /// one of the same shape: `(member, by, at_ms)` in ascending bucket order, and a final
    /// `(b"", 0, clock_ms)` that restores the clock when its bucket holds no nonzero count.
    pub fn replay_events(&self) -> Vec<(&[u8], i64, i64)> {
        let shape = &self.content.shape;
        let mut out: Vec<(&[u8], i64, i64)> = self
            .live_entries()
            .map(|(idx, name, count)| (name, count, shape.bucket_start(idx)))
            .collect();
        if let Some(c) = shape.clock {
            let last = self.live_entries().last().map(|e| e.0);
            if last != Some(c) {
                out.push((b"", 0, shape.bucket_start(c)));
            }
        }
        out
    }
}

/// The views of a version-4 encoding: `u8 n, n x u32 k`, ascending.
fn decode_views(r: &mut Reader, window: u32) -> Result<Views, Error> {
    let n = r.u8()? as usize;
    if n == 0 || n > MAX_VIEWS {
        return Err(Error::Invalid("number of views"));
    }
    let mut ks = Vec::with_capacity(n);
    for _ in 0..n {
        ks.push(i64::from(r.u32()?));
    }
    let views = Views::new(&ks, window).map_err(|_| Error::Invalid("views"))?;
    // The set's own order: a payload is a function of the content.
    if !views.iter().map(i64::from).eq(ks.iter().copied()) {
        return Err(Error::Invalid("views out of order"));
    }
    Ok(views)
}
