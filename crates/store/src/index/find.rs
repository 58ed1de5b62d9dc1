//! Lookups: a key's entry in its sub-table's current table, and while it grows in its old
//! one (see the module doc of `index` for the version check that makes a move never show as
//! a miss).

use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use super::{Found, HashParts, Index, Slot, Sub, Table, TAG_SHIFT, TAG_VALID_MASK, VALID};

impl Index {
    /// Finds the entry for a key: `is_key` confirms a tag match by reading the item.
    pub(crate) fn find<'g>(
        &self,
        hash: HashParts,
        guard: &'g Guard,
        mut is_key: impl FnMut(Slot) -> bool,
    ) -> Option<Found<'g>> {
        self.find_map(hash, guard, |slot| is_key(slot).then_some(())).map(|(found, ())| found)
    }

    /// [`Index::find`] whose test also returns what it read to confirm the match (a
    /// lookup's decoded item), so that nothing is kept aside or read twice.
    #[inline]
    pub(crate) fn find_map<'g, T>(
        &self,
        hash: HashParts,
        guard: &'g Guard,
        mut is_key: impl FnMut(Slot) -> Option<T>,
    ) -> Option<(Found<'g>, T)> {
        let sub = &self.subs[hash.sub];
        // Bounded: a retry needs a concurrent move, and moves are finite per growth.
        for _ in 0..64 {
            let version = sub.version.load(Ordering::Acquire);
            let current = sub.current.load(Ordering::Acquire, guard);
            // SAFETY: tables are retired only through the epoch, and we are pinned; the
            // current table is never null.
            let table = unsafe { current.deref() };
            if let Some(found) = probe(table, hash, &mut is_key) {
                return Some(found);
            }
            // `old` is loaded after `current`: growth publishes `old` first, so seeing the
            // new current table implies seeing the old one too. Most lookups (a hit while
            // no table grows) never load it.
            if let Some(found) = probe_old(sub, hash, guard, &mut is_key) {
                return Some(found);
            }
            if sub.version.load(Ordering::Acquire) == version {
                return None;
            }
        }
        None
    }
}

/// [`probe`] in a sub-table's old table, if it is growing: out of the lookups' way.
#[cold]
#[inline(never)]
fn probe_old<'g, T>(
    sub: &Sub,
    hash: HashParts,
    guard: &'g Guard,
    is_key: &mut impl FnMut(Slot) -> Option<T>,
) -> Option<(Found<'g>, T)> {
    let old = sub.old.load(Ordering::Acquire, guard);
    // SAFETY: tables are retired only through the epoch, and we are pinned.
    let table = unsafe { old.as_ref() }?;
    let (found, t) = probe(table, hash, is_key)?;
    Some((Found { in_old_table: true, ..found }, t))
}

/// A key's entry in `table`: its home bucket first, then (a hit there needs no more) its
/// second one. The second bucket's place is found only when the home bucket has no match:
/// in one loop over both buckets the compiler computed it before the first probe, about 30
/// instructions that a home-bucket hit (most hits) did not need (callgrind, `get` of 10k
/// keys at pipeline 32).
#[inline]
fn probe<'t, T>(
    table: &'t Table,
    hash: HashParts,
    is_key: &mut impl FnMut(Slot) -> Option<T>,
) -> Option<(Found<'t>, T)> {
    let want = (u64::from(hash.tag) << TAG_SHIFT) | VALID;
    let home = table.home(hash.pos);
    if let Some(found) = probe_bucket(table, home, want, is_key) {
        return Some(found);
    }
    probe_bucket(table, table.alternate(home, hash), want, is_key)
}

/// The slot of `bucket` whose tag matches (`want`) and whose item `is_key` confirms.
#[inline(always)]
fn probe_bucket<'t, T>(
    table: &'t Table,
    bucket: usize,
    want: u64,
    is_key: &mut impl FnMut(Slot) -> Option<T>,
) -> Option<(Found<'t>, T)> {
    for slot in &table.bucket(bucket).0 {
        let value = slot.load(Ordering::Acquire);
        if value & TAG_VALID_MASK == want {
            if let Some(t) = is_key(Slot(value)) {
                return Some((Found { slot, value: Slot(value), in_old_table: false }, t));
            }
        }
    }
    None
}
