//! Active defrag of a full key (`tuples::defrag`): every heap block it owns, offered in bounded
//! units of work. The member names are the delicate part (the order indexes point into them):
//! `storage::NameTable::defrag` moves them a run at a time, re-pointing their keys in the same
//! unit. Everything else is owned outright and holds positions, never pointers, so a move is
//! safe at any point of an incremental job (a sealing, a sum's walk, a graveyard being freed).

use super::key::Full;
use crate::tuples::defrag::{vec_deque, Mover, Pass};

impl Full {
    /// Offers its blocks to a defrag pass: the small ones in a first unit, then the members, the
    /// buckets, the sums' exact totals and each graveyard like the live state.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        let (c, sums, up) = (&mut self.content, &mut self.sums, &mut self.upkeep);
        pass.work(|m| {
            vec_deque(m, &mut c.buckets);
            m.vec(&mut up.graveyards);
            m.vec(&mut sums.reach);
            m.vec(&mut sums.ks);
        });
        c.members.defrag(pass);
        pass.each(c.buckets.iter_mut(), |b, pass| {
            pass.work(|m| m.boxed(b));
            b.defrag(pass)
        });
        pass.each(sums.big.iter_mut(), |big, pass| big.defrag(pass, |_, _| {}));
        pass.each(up.graveyards.iter_mut(), |g, pass| g.defrag(pass));
    }
}
