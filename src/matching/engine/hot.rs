//! The per-slot record of the engine's hot loops: one cache line with what a candidate
//! needs before it is known to match (price ceiling, term counts, and the statement's
//! term ids with its required designations in place).

use super::terms::OfferHits;

/// Statement term ids a [`Hot`] holds in place: a statement with at most this many terms
/// (nearly every title) is counted and its designations checked without reading
/// the slot's entry.
pub(super) const INLINE: usize = 10;

/// [`Hot::flags`]: the intent has criteria.
pub(super) const HAS_CRITERIA: u8 = 1;
/// [`Hot::flags`]: the intent has a price ceiling (`Hot::ceil`).
pub(super) const HAS_CEILING: u8 = 2;

/// Per-slot data read in the hot loops: one cache line, so that a candidate costs one
/// memory read before it is known to pass.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Hot {
    /// The oracle's `ceiling * (1 + 1e-9)`, when [`HAS_CEILING`] is set.
    pub(super) ceil: f64,
    /// Minimum number of statement terms the offer must hit (text group).
    pub(super) need: u32,
    /// Number of statement terms.
    pub(super) terms: u32,
    /// Number of statement terms outside the signature (text group): `found` is at most
    /// the posted count plus this.
    pub(super) unposted: u32,
    /// Bit `i` set: `ids[i]` is a designation the offer must contain exactly.
    pub(super) required: u16,
    /// [`HAS_CRITERIA`], [`HAS_CEILING`].
    pub(super) flags: u8,
    /// How many of `ids` hold the statement's term ids: all of them (`terms`) when there
    /// are at most [`INLINE`], else 0 (the slot's entry has them).
    pub(super) inline: u8,
    /// The statement's term ids (the first `inline`).
    pub(super) ids: [u32; INLINE],
}

impl Hot {
    pub(super) const VACANT: Hot =
        Hot { ceil: 0.0, need: u32::MAX, terms: 0, unposted: 0, required: 0, flags: 0, inline: 0, ids: [0; INLINE] };

    /// Whether the intent has criteria.
    #[inline]
    pub(super) fn criteria(&self) -> bool {
        self.flags & HAS_CRITERIA != 0
    }

    /// The oracle's price rule: no ceiling passes; otherwise an unconvertible price fails
    /// and a price above the tolerant ceiling fails.
    #[inline]
    pub(super) fn price_ok(&self, price: Option<f64>) -> bool {
        match price {
            _ if self.flags & HAS_CEILING == 0 => true,
            None => false,
            Some(p) => p.partial_cmp(&self.ceil) != Some(std::cmp::Ordering::Greater),
        }
    }

    /// With the term ids in place: `Some(Some(n))`, `n` of them in `hits.all` (the
    /// oracle's found count), or `Some(None)` when a required designation is not in
    /// `hits.exact`. `None` when the ids are not in place (the caller reads the slot's
    /// entry).
    #[inline]
    pub(super) fn found(&self, hits: &OfferHits) -> Option<Option<u32>> {
        if self.inline == 0 {
            return None;
        }
        let ids = &self.ids[..self.inline as usize];
        let missing =
            ids.iter().enumerate().any(|(i, t)| self.required & (1 << i) != 0 && hits.exact.binary_search(t).is_err());
        if missing {
            return Some(None);
        }
        Some(Some(ids.iter().filter(|t| hits.all.binary_search(t).is_ok()).count() as u32))
    }
}
