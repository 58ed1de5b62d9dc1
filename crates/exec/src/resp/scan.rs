//! The cursor of HSCAN and ZSCAN over a collection too large for one page: members come in
//! the order of a fixed hash of their bytes, and the cursor is the first hash not yet
//! returned, so a member present for the whole scan is returned even when others come and
//! go (Redis's guarantee), however the collection is stored.

/// A large collection is scanned in at most about this many pages, whatever COUNT says (a
/// hint in Redis too): each page costs a pass over the collection, so small pages would
/// make a whole scan quadratic.
pub(super) const PAGES_MAX: usize = 16;

/// FNV-1a of a member, mapped to `1..=2^63` so that no member hashes to the cursor 0.
/// Stable across runs and builds, as a cursor must be.
pub(super) fn member_hash(bytes: &[u8]) -> u64 {
    let hash = bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (hash >> 1) + 1
}

/// One page of a collection of `len` members, given those whose hash is at or past the
/// cursor, and the cursor that follows it (0 at the end): the smallest hashes (found in
/// linear time), `count` of them or `len / PAGES_MAX` if more, and any others equal to the
/// largest of them (members sharing a hash share a page).
pub(super) fn page<T>(mut rest: Vec<(u64, T)>, count: usize, len: usize) -> (u64, Vec<T>) {
    let page_len = count.max(len / PAGES_MAX).max(1);
    if rest.len() <= page_len {
        rest.sort_by_key(|(hash, _)| *hash);
        return (0, rest.into_iter().map(|(_, member)| member).collect());
    }
    rest.select_nth_unstable_by_key(page_len - 1, |(hash, _)| *hash);
    let last = rest[page_len - 1].0;
    let next = rest[page_len..].iter().map(|(hash, _)| *hash).filter(|&hash| hash > last).min();
    let mut taken: Vec<(u64, T)> = rest
        .into_iter()
        .enumerate()
        .filter(|(at, (hash, _))| *at < page_len || *hash == last)
        .map(|(_, entry)| entry)
        .collect();
    taken.sort_by_key(|(hash, _)| *hash);
    (next.unwrap_or(0), taken.into_iter().map(|(_, member)| member).collect())
}
