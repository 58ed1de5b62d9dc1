//! The locked core: what one operation does with its key's stripe held (memcached's `do_`
//! functions). Functions taking a `Ctx` run with the key's stripe held; the public wrappers
//! in `ops.rs` lock and retry.

use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use super::{
    count_unlink, growth::Grown, secs_stamp, ttl_class, Ctx, Need, NewItem, OpError, Resolved,
    Room, Store, Unlink, Writer, OP_ATTEMPTS,
};
use crate::{
    bytes::{self, RawItem},
    index::{self, Found, GrowWhen, HashParts, Insert, Location, Slot, LARGE_SEGMENT},
    item::Header,
    segment::Queue,
    shared_writes::{self, Site},
    types::*,
};

impl Store {
    pub(super) fn check_key(&self, key: &[u8]) -> Result<(), StoreError> {
        if key.len() > KEY_LEN_MAX {
            return Err(StoreError::KeyTooLong { len: key.len() });
        }
        Ok(())
    }

    /// Checks key + value against `size_max` (the configured item size, or a write's own
    /// limit), capped at half the memory limit.
    pub(super) fn check_size_within(
        &self,
        key: &[u8],
        value_len: usize,
        size_max: usize,
    ) -> Result<(), StoreError> {
        self.check_key(key)?;
        let max = size_max.min(self.memory_limit() / 2).max(1024);
        let size = key.len() + value_len;
        if size > max {
            return Err(StoreError::TooLarge { size, max });
        }
        Ok(())
    }

    /// Runs `body` with the key's stripe locked; when it needs memory, makes room with no
    /// lock held and no epoch pinned, then runs it again.
    pub(super) fn locked_op<R>(
        &self,
        key: &[u8],
        mut body: impl FnMut(&Store, &mut Ctx<'_>) -> Result<R, OpError>,
    ) -> Result<R, StoreError> {
        let hash = HashParts::of(key);
        let mut room = Room::default();
        let result = self.locked_attempts(key, hash, &mut room, &mut body);
        self.give_back(room);
        result
    }

    pub(super) fn locked_attempts<R>(
        &self,
        key: &[u8],
        hash: HashParts,
        room: &mut Room,
        body: &mut impl FnMut(&Store, &mut Ctx<'_>) -> Result<R, OpError>,
    ) -> Result<R, StoreError> {
        for _ in 0..OP_ATTEMPTS {
            let now_ms = self.config.clock.now_ms();
            self.check_flush(now_ms);
            let guard = shared_writes::pin();
            let result = {
                let mut stats = self.lock_stripe(hash);
                let mut ctx = Ctx {
                    key,
                    hash,
                    guard: &guard,
                    now_ms,
                    flush_gen: self.flush_gen.load(Ordering::Acquire),
                    flushed_through_secs: self.flushed_through_secs.load(Ordering::Acquire),
                    stats: &mut stats,
                    room: &mut *room,
                };
                body(self, &mut ctx)
            };
            self.after_write(hash.sub, &guard);
            drop(guard);
            self.reuse_ahead();
            match result {
                Ok(r) => return Ok(r),
                Err(OpError::Store(e)) => return Err(e),
                Err(OpError::NeedRoom(need)) => self.make_room(need, room)?,
            }
        }
        Err(StoreError::NoSpace)
    }

    /// Finds the entry and item for a key, visible or not.
    #[inline]
    pub(super) fn find_item<'g>(
        &'g self,
        key: &[u8],
        hash: HashParts,
        guard: &'g Guard,
    ) -> Option<(Found<'g>, Resolved<'g>)> {
        self.index.find_map(hash, guard, |slot| {
            let r = self.resolve(slot.location(), guard);
            same_key(r.key(), key).then_some(r)
        })
    }

    /// The key's visible item; an invisible one (expired, flushed) is unlinked on the way.
    pub(super) fn current<'g>(
        &'g self,
        ctx: &mut Ctx<'_>,
        guard: &'g Guard,
    ) -> Option<(Found<'g>, Resolved<'g>)> {
        let (found, r) = self.find_item(ctx.key, ctx.hash, guard)?;
        if r.visible(ctx.now_ms, ctx.flush_gen, ctx.flushed_through_secs) {
            return Some((found, r));
        }
        self.unlink(ctx, &found, &r, Unlink::Dead);
        None
    }

    pub(super) fn unlink(
        &self,
        ctx: &mut Ctx<'_>,
        found: &Found<'_>,
        r: &Resolved<'_>,
        why: Unlink,
    ) {
        self.index.remove(ctx.hash, found);
        count_unlink(ctx.stats, r, found.value.freq(), why, ctx.flush_gen);
        self.retire_item(found.value.location(), r, ctx.guard);
        if why == Unlink::Dead {
            self.observe_expiry(r, ctx.flush_gen);
        }
    }

    /// Writes a new item for the key and points the index at it; returns its CAS unique.
    /// The caller checked the item's size (`check_size_within`).
    pub(super) fn put(
        &self,
        ctx: &mut Ctx<'_>,
        existing: Option<(&Found<'_>, &Resolved<'_>)>,
        item: &NewItem<'_>,
    ) -> Result<u64, OpError> {
        if item.expiry.is_expired(ctx.now_ms) {
            // Stored and at once expired, as memcached does with a negative TTL.
            if let Some((found, r)) = existing {
                self.unlink(ctx, found, r, Unlink::Deleted);
            }
            let fresh = || {
                shared_writes::note(Site::Seq);
                self.seq.fetch_add(1, Ordering::Relaxed) << index::OFFSET_BITS
            };
            return Ok(item.cas.unwrap_or_else(fresh));
        }
        let header = Header {
            client_flags: item.flags,
            expiry: item.expiry,
            key_len: ctx.key.len(),
            value_len: item.value_len(),
            cas: item.cas,
            meta: item.meta,
            kind: item.kind,
        };
        let class = ttl_class(item.expiry, ctx.now_ms);
        let stamp = item.stamp.unwrap_or_else(|| secs_stamp(ctx.now_ms));
        let new = (stamp, &header, ctx.key, item.value);
        let len = bytes::stored_len(&header);
        let (location, cas) = if len >= self.large_min {
            self.write_large(new, ctx.flush_gen, class, ctx.room)?
        } else {
            self.append_sized(Queue::Small, class, new, len, Writer::Client(ctx.room))
                .ok_or(OpError::NeedRoom(Need::Segment))?
        };
        // A rewrite of a live item (overwrite, append, incr, touch) counts as an access: a
        // key written every few milliseconds is as hot as one read that often, and its new
        // copy must not start cold in the small queue, where S3-FIFO drops unaccessed items
        // (measured: appended keys lost while 90% of the cache was cold). Keeping the count
        // also spares the next readers a write to the slot.
        // A new owner skips the small queue (`owners.rs`): it starts counted once, the
        // chance a new item gets there, so that eviction passes over it once.
        let new_owner = item.flags == OWNER_FLAGS && item.kind != ValueKind::String;
        let freq = existing.map_or(u8::from(new_owner), |(found, _)| {
            (found.value.freq() + 1).min(index::FREQ_MAX)
        });
        let slot = Slot::new(ctx.hash.tag, location, freq);
        let data_len = (header.key_len + header.value_len) as i64;
        // The item is counted in the generation of the memory it landed in: a segment opened
        // before a flush that came while this write ran holds it invisible, and uncounted.
        let gen = if location.segment == LARGE_SEGMENT {
            ctx.flush_gen
        } else {
            self.segments.header(location.segment).flush_gen.load(Ordering::Acquire)
        };
        let linked = match existing {
            Some((found, r)) if self.index.replace(ctx.hash, found, slot, ctx.guard) => {
                if r.flush_gen == gen {
                    ctx.stats.count(gen, 0, data_len - r.data_len());
                } else {
                    ctx.stats.count(r.flush_gen, -1, -r.data_len());
                    ctx.stats.count(gen, 1, data_len);
                }
                self.retire_replaced(found, r, item, ctx.guard);
                Linked::Yes
            }
            Some((found, r)) => {
                // Moving out of a migrating table found no room: drop the old entry first
                // (an owner rewritten as itself lives on in the new one).
                self.index.remove(ctx.hash, found);
                count_unlink(ctx.stats, r, found.value.freq(), Unlink::Deleted, ctx.flush_gen);
                self.retire_replaced(found, r, item, ctx.guard);
                self.insert_new(ctx, slot, gen, data_len)
            }
            None => self.insert_new(ctx, slot, gen, data_len),
        };
        linked.or_refuse()?;
        if new_owner && !existing.is_some_and(|(_, r)| same_owner(r, item)) {
            self.queue_owner(ctx.key, &item.value.concat(), class, ctx.guard);
        }
        ctx.stats.total_items += 1;
        Ok(cas)
    }

    /// Retires the item a write replaced: an owner rewritten as itself lives on in the new
    /// one, so it is not released.
    fn retire_replaced(
        &self,
        found: &Found<'_>,
        r: &Resolved<'_>,
        item: &NewItem<'_>,
        guard: &Guard,
    ) {
        if same_owner(r, item) {
            self.retire(found.value.location(), guard);
        } else {
            self.retire_item(found.value.location(), r, guard);
        }
    }

    /// Points the index at a new item. When it found no slot, an item that must not be
    /// dropped is not linked: the write is refused, or, if the index could have grown with
    /// more memory, it makes room for the new table and tries again.
    #[must_use]
    pub(super) fn insert_new(
        &self,
        ctx: &mut Ctx<'_>,
        slot: Slot,
        gen: u32,
        data_len: i64,
    ) -> Linked {
        // memcached -M evicts nothing, not even to find an index slot: the write is refused.
        let may_evict = self.when_full() != WhenFull::Refuse;
        let mut growth_bytes = None;
        for _ in 0..4 {
            if let Insert::Done = self.index.insert(ctx.hash, slot, ctx.guard) {
                ctx.stats.count(gen, 1, data_len);
                return Linked::Yes;
            }
            // Both buckets are full before the table reached its load limit: grow
            // now (a sub-table is 1/64 of the index), or, without memory to, make way.
            if self.relocate_from_buckets(ctx.hash, ctx.guard) {
                continue;
            }
            let sub = ctx.hash.sub;
            match self.grow_from(sub, GrowWhen::BucketsFull, &mut ctx.room.bytes, ctx.guard) {
                Grown::Started => continue,
                Grown::NoMemory(bytes) => growth_bytes = Some(bytes),
                Grown::NotStarted => {}
            }
            if may_evict {
                self.evict_from_window(ctx);
            }
        }
        // Nothing in the window could give way (all stripes busy, or every item protected):
        // the new item is dropped as if evicted at once. Growth of the table (after this
        // write) makes it rare. One that must not be evicted is not linked, and neither is
        // any under -M.
        let r = self.resolve(slot.location(), ctx.guard);
        self.retire_item(slot.location(), &r, ctx.guard);
        if !may_evict {
            return Linked::Refused;
        }
        if self.protection().protects(&r) {
            // The memory a grown table needs may be held by evictable items, or by a
            // replaced table in its grace period: refusing here refused a never-evict
            // write while expiring items could go (1 run in 10-40 of `volatile_refuses...`).
            return growth_bytes.map_or(Linked::Refused, Linked::NeedsIndexBytes);
        }
        ctx.stats.evictions += 1;
        Linked::Yes
    }

    /// [`Store::retire`] for an item whose index entry went for good: an owner is released.
    /// Returns the bytes the owner had charged outside the store, given back now.
    pub(super) fn retire_item(&self, location: Location, r: &Resolved<'_>, guard: &Guard) -> usize {
        let mut released_bytes = 0;
        if r.is_owner() {
            if let Some(observer) = &self.config.on_release {
                released_bytes = observer(r.value());
                self.uncharge_outside(released_bytes);
            }
        }
        self.retire(location, guard);
        released_bytes
    }
}

/// Whether `new` rewrites the owner `old` as itself (a touch, EXPIRE): its memory outside
/// the store lives on in the new item.
fn same_owner(old: &Resolved<'_>, new: &NewItem<'_>) -> bool {
    old.header.client_flags == OWNER_FLAGS
        && new.flags == OWNER_FLAGS
        && old.header.kind == new.kind
        && new.value.concat() == old.value()
}

impl Store {
    /// Reads the item at `location`. The caller is pinned and the location was read from
    /// the index while pinned, so the memory cannot be reused before `guard` is dropped.
    // `#[inline(always)]` here cost 1,227 instructions more per 48-key text get (callgrind).
    #[inline]
    pub(super) fn resolve<'g>(&'g self, location: Location, guard: &'g Guard) -> Resolved<'g> {
        if location.segment == LARGE_SEGMENT {
            return self.resolve_large(location, guard);
        }
        let RawItem { stamp, header, header_len, bytes } =
            self.segments.item(location.segment, location.offset, guard);
        let seg = self.segments.header(location.segment);
        let cas = header.cas.unwrap_or(
            (seg.seq.load(Ordering::Acquire) << index::OFFSET_BITS) | u64::from(location.offset),
        );
        Resolved {
            stamp,
            bytes,
            header,
            header_len,
            cas,
            flush_gen: seg.flush_gen.load(Ordering::Acquire),
        }
    }

    /// [`Store::resolve`] for a large item, out of the small items' way.
    #[inline(never)]
    fn resolve_large<'g>(&'g self, location: Location, guard: &'g Guard) -> Resolved<'g> {
        let large = self
            .recycled
            .large(location.offset, guard)
            .expect("index points at a freed large item");
        let RawItem { stamp, header, header_len, bytes } = bytes::large_item(&large.region);
        let cas = header.cas.unwrap_or(large.seq << index::OFFSET_BITS);
        let flush_gen = large.flush_gen;
        Resolved { stamp, bytes, header, header_len, cas, flush_gen }
    }

    /// Whether the index still points at `location` for `key` (the item stored there): a
    /// segment walk's test for an item still live, not replaced or deleted since.
    pub(super) fn indexed_at(&self, location: Location, key: &[u8], guard: &Guard) -> bool {
        let hash = HashParts::of(key);
        self.index.find(hash, guard, |slot| slot.location() == location).is_some()
    }
}

/// `a == b` for a lookup's tag match: keys of up to 32 bytes (most keys) compared as two
/// overlapping words each, without a call to `memcmp` (whose call and size dispatch were
/// about a fifth of the compare's instructions on 20-byte keys, callgrind).
#[inline(always)]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        16..=32 => {
            word::<16>(a, 0) == word::<16>(b, 0) && word::<16>(a, n - 16) == word::<16>(b, n - 16)
        }
        8..=15 => word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, n - 8) == word::<8>(b, n - 8),
        4..=7 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        _ => a == b,
    }
}

/// The `N` bytes of `bytes` from `at` (the caller checked they are there).
#[inline(always)]
fn word<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut word = [0; N];
    word.copy_from_slice(&bytes[at..at + N]);
    word
}

/// Whether [`Store::insert_new`] linked the item.
pub(super) enum Linked {
    /// Linked, or dropped as if evicted at once.
    Yes,
    /// Not linked: the write is refused.
    Refused,
    /// Not linked: a grown index table needs these bytes first.
    NeedsIndexBytes(usize),
}

impl Linked {
    /// The write goes on, is refused, or makes room for a grown index table first.
    fn or_refuse(self) -> Result<(), OpError> {
        match self {
            Linked::Yes => Ok(()),
            Linked::Refused => Err(OpError::Store(StoreError::NoSpace)),
            Linked::NeedsIndexBytes(bytes) => Err(OpError::NeedRoom(Need::Bytes(bytes))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::same_key;

    // Goal: the word-wise key compare agrees with `==` for every length up to 40 and a
    // difference at every position (first and last bytes of each word included).
    #[test]
    fn same_key_is_equality() {
        for len in 0..=40usize {
            let a: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
            assert!(same_key(&a, &a.clone()), "len {len}");
            for at in 0..len {
                let mut b = a.clone();
                b[at] ^= 1;
                assert!(!same_key(&a, &b), "len {len}, differs at {at}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!same_key(&a, &longer) && !same_key(&longer, &a), "len {len}");
        }
    }
}
