//! A vector in fixed-size chunks: growing never copies what is stored (a
//! `Vec` doubling a million records copies them all in one call), and
//! freeing can go a chunk at a time. Pure Rust, no FFI.

use super::defrag::{Mover, Pass};

/// Items per chunk: a big vector grows a chunk at a time; a small one has
/// one chunk that grows as a `Vec` does.
pub const CHUNK: usize = 4096;

#[derive(Clone, Debug)]
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }

    pub fn push(&mut self, item: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(item),
            _ => {
                // The first chunk starts small; later ones are full-size at once.
                let capacity = if self.chunks.is_empty() { 0 } else { CHUNK };
                let mut chunk = Vec::with_capacity(capacity);
                chunk.push(item);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    pub fn pop(&mut self) -> Option<T> {
        let last = self.chunks.last_mut()?;
        let item = last.pop();
        if last.is_empty() {
            self.chunks.pop();
        }
        self.len -= item.is_some() as usize;
        item
    }

    /// Removes item `i`; the last item moves into its place (as
    /// `Vec::swap_remove`).
    pub fn swap_remove(&mut self, i: usize) -> Option<T> {
        let last = self.pop()?;
        if i == self.len {
            return Some(last);
        }
        self.get_mut(i).map(|slot| std::mem::replace(slot, last))
    }

    /// Drops the last chunk (up to `CHUNK` items); false once empty. Frees a
    /// big vector in bounded slices.
    pub fn drop_chunk(&mut self) -> bool {
        match self.chunks.pop() {
            Some(chunk) => {
                self.len -= chunk.len();
                true
            }
            None => false,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }

    /// The items chunk by chunk, in order: a scan's plain slices.
    pub fn slices(&self) -> impl Iterator<Item = &[T]> + '_ {
        self.chunks.iter().map(Vec::as_slice)
    }

    /// Heap bytes of the chunks themselves (what the items own besides is the
    /// caller's to count).
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum::<usize>() * std::mem::size_of::<T>()
            + self.chunks.capacity() * std::mem::size_of::<Vec<T>>()
    }

    /// About how many allocations freeing it takes (not counting what the
    /// items own).
    pub fn allocations(&self) -> usize {
        self.chunks.len() + 1
    }

    /// Offers its blocks to a defrag pass: the chunk list, then a chunk per
    /// unit of work with the blocks `own` offers of its items.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>, mut own: impl FnMut(&mut T, &mut M)) {
        pass.work(|m| m.vec(&mut self.chunks));
        pass.each(self.chunks.iter_mut(), |chunk, pass| {
            pass.work(|m| defrag_chunk(chunk, m, &mut own))
        });
    }

    /// [`Chunked::defrag`], and after each chunk `inner` walks what each of
    /// its items holds that is too big for a unit of work.
    pub fn defrag_nested<M: Mover>(
        &mut self,
        pass: &mut Pass<M>,
        mut own: impl FnMut(&mut T, &mut M),
        mut inner: impl FnMut(&mut T, &mut Pass<M>),
    ) {
        pass.work(|m| m.vec(&mut self.chunks));
        pass.each(self.chunks.iter_mut(), |chunk, pass| {
            pass.work(|m| defrag_chunk(chunk, m, &mut own));
            pass.each(chunk.iter_mut(), &mut inner);
        });
    }
}

fn defrag_chunk<T, M: Mover>(chunk: &mut Vec<T>, m: &mut M, own: impl FnMut(&mut T, &mut M)) {
    m.vec(chunk);
    let mut own = own;
    chunk.iter_mut().for_each(|item| own(item, m));
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn model() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut v: Chunked<u32> = Chunked::default();
        let mut model: Vec<u32> = Vec::new();
        for step in 0..100_000u32 {
            match rng.gen_range(0..10) {
                0..=5 => {
                    v.push(step);
                    model.push(step);
                }
                6 => assert_eq!(v.pop(), model.pop()),
                7 if !model.is_empty() => {
                    let i = rng.gen_range(0..model.len());
                    assert_eq!(v.swap_remove(i), Some(model.swap_remove(i)));
                }
                _ if !model.is_empty() => {
                    let i = rng.gen_range(0..model.len());
                    *v.get_mut(i).expect("in range") += 1;
                    model[i] += 1;
                }
                _ => {}
            }
            assert_eq!(v.len(), model.len());
        }
        assert!(v.len() > 3 * CHUNK, "test too small: {}", v.len());
        assert!(v.iter().eq(model.iter()));
        assert_eq!(v.get(model.len()), None);
        // Every chunk but the last is full.
        let full = v.chunks.iter().rev().skip(1).all(|c| c.len() == CHUNK);
        assert!(full);
        let mut dropped = 0;
        while v.drop_chunk() {
            dropped += 1;
        }
        assert_eq!((v.len(), dropped), (0, model.len().div_ceil(CHUNK)));
    }
}
