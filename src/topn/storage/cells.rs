//! A fixed-size array of `Copy` cells initialized lazily, a chunk at a time (`MaybeUninit`
//! storage): allocating a big table costs nothing until its cells are written.

use std::mem::MaybeUninit;

use crate::tuples::defrag::Mover;

// ---------------------------------------------------------------------------------------------
// Lazily initialized cell arrays.

/// log2 of the cells per lazily initialized chunk.
const INIT_CHUNK_SHIFT: u32 = 9;
/// Arrays up to this many cells are filled at once (no chunk bitmap).
const EAGER_CELLS: usize = 4096;

/// A fixed-size array whose storage is initialized a chunk at a time, on the first write into
/// the chunk; unwritten chunks read as `empty`. A new big table thus costs an untouched
/// allocation instead of a fill, and its page faults are spread over the writes that follow.
///
/// Invariant: a cell of `data` is initialized when `init` is empty or its chunk's bit is set.
#[derive(Clone)]
pub(in crate::topn) struct Cells<T: Copy> {
    data: Vec<MaybeUninit<T>>,
    /// One bit per chunk: initialized. Empty when the whole array is (small arrays).
    init: Vec<u64>,
    empty: T,
}

impl<T: Copy> Cells<T> {
    pub(in crate::topn) fn new(len: usize, empty: T) -> Cells<T> {
        if len <= EAGER_CELLS {
            return Cells {
                data: vec![MaybeUninit::new(empty); len],
                init: Vec::new(),
                empty,
            };
        }
        let mut data: Vec<MaybeUninit<T>> = Vec::with_capacity(len);
        // SAFETY: `len <= capacity`, and `MaybeUninit<T>` needs no initialization. No chunk bit
        // is set yet, so `get` reads none of these cells before `set` initializes its chunk.
        unsafe { data.set_len(len) };
        let chunks = (len + (1 << INIT_CHUNK_SHIFT) - 1) >> INIT_CHUNK_SHIFT;
        Cells {
            data,
            init: vec![0; chunks.div_ceil(64)],
            empty,
        }
    }

    #[inline]
    pub(in crate::topn) fn len(&self) -> usize {
        self.data.len()
    }

    #[inline]
    fn is_init(&self, i: usize) -> bool {
        let c = i >> INIT_CHUNK_SHIFT;
        self.init.is_empty() || (self.init[c >> 6] >> (c & 63)) & 1 != 0
    }

    #[inline]
    pub(in crate::topn) fn get(&self, i: usize) -> T {
        let cell = &self.data[i];
        if self.is_init(i) {
            // SAFETY: the chunk of `i` is initialized (the invariant on `Cells`), and `i` is in
            // bounds (indexed above).
            unsafe { cell.assume_init() }
        } else {
            self.empty
        }
    }

    #[inline]
    pub(in crate::topn) fn set(&mut self, i: usize, v: T) {
        if !self.is_init(i) {
            let c = i >> INIT_CHUNK_SHIFT;
            let lo = c << INIT_CHUNK_SHIFT;
            let hi = (lo + (1 << INIT_CHUNK_SHIFT)).min(self.data.len());
            let empty = self.empty;
            for x in &mut self.data[lo..hi] {
                *x = MaybeUninit::new(empty);
            }
            self.init[c >> 6] |= 1 << (c & 63);
        }
        self.data[i] = MaybeUninit::new(v);
    }

    /// The initialized runs of cells, as `(first index, cells)`, ascending. Cells outside them
    /// read as `empty`. For scans: a plain slice walk instead of a chunk check per cell.
    pub(in crate::topn) fn init_runs(&self) -> impl Iterator<Item = (usize, &[T])> + '_ {
        let len = self.data.len();
        let run = if self.init.is_empty() {
            len.max(1)
        } else {
            1 << INIT_CHUNK_SHIFT
        };
        (0..len)
            .step_by(run)
            .filter(move |&lo| self.is_init(lo))
            .map(move |lo| {
                let cells = &self.data[lo..(lo + run).min(len)];
                // SAFETY: `lo..lo + run` lies in one chunk (a whole eager array has no chunk
                // bitmap and is initialized), and that chunk is initialized (checked by the
                // filter; the invariant on `Cells`). `MaybeUninit<T>` has `T`'s layout, so an
                // initialized `[MaybeUninit<T>]` may be read as `[T]`; the borrow of `self`
                // keeps the cells alive and unchanged.
                (lo, unsafe {
                    &*(cells as *const [MaybeUninit<T>] as *const [T])
                })
            })
    }

    pub(in crate::topn) fn heap_bytes(&self) -> usize {
        self.data.capacity() * std::mem::size_of::<T>() + self.init.capacity() * 8
    }

    /// Offers its two blocks to a defrag pass (a move copies the uninitialized cells too, as
    /// bytes: they stay unread until their chunk is initialized).
    pub(in crate::topn) fn defrag(&mut self, m: &mut impl Mover) {
        m.vec(&mut self.data);
        m.vec(&mut self.init);
    }
}
