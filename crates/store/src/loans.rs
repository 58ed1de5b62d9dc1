//! Loans: item values a reply sends from item memory instead of copying them into its
//! output buffer (issue 36: a 48-key get of 10 KB values spent a fifth of the server's CPU
//! copying values into the reply).
//!
//! ```text
//!   server: loans::open()             this thread may lend, for one batch of requests
//!   exec:   item.lend_value(at)       value >= VALUE_BYTES_MIN: recorded (at, bytes), not
//!                                     copied;
//!                                     the first loan pins the epoch (nested in the reader's)
//!   server: loans::settle(|parts| ..) the loop sends or copies every part, then the pin
//!                                     is dropped and lending closes
//! ```
//!
//! Why a part stays valid until `settle` returns: an [`Item`] exists only while the pin of
//! the reader (or locked operation) that found it is held, on this thread (an `Item` is not
//! `Send`). The loan's own pin is taken while that pin is held, so the thread stays pinned
//! without a gap from the read until `settle` drops it; item memory (segments, large-item
//! mappings) is reused only after every thread pinned before its unlink has unpinned, and
//! item bytes are never written in place once published. So the bytes can be neither freed
//! nor changed before the parts are sent or copied.
//!
//! A pin must not be held across a wait of the loop: a writer on another thread that needs
//! memory back waits for the grace period (`wait_for_frees`). `settle` is called by the
//! loop in the same turn, right after the handler call that lent.
//!
//! Writes run behind loans (a set after a large get in one pipeline). One that needs memory
//! back must wait for a grace period that its own thread's loan pin holds up; before it
//! waits, [`unpin`] copies the values lent so far out of item memory and drops the pin, so
//! the wait can end (and no thread ever waits for frees while its loans pin the epoch).
//! The parts keep their offsets, so the replies leave in the same order either way; the
//! copy is what lending saved, paid only by a batch whose write found the store full.
//!
//! The one exception is a [`Hold`] (zero-copy sends, `--zerocopy-min-bytes`): taken within
//! `settle`, it keeps the pin until the kernel says it is done with the pages, about one
//! round trip, at most a second (rt resets a connection whose send is held longer). While it
//! lives, writers elsewhere wait longer for memory, and a write on this thread that needs
//! memory back evicts rather than waits. Parts [`unpin`] copied are not in item memory,
//! and their copies go at `settle`'s end: a batch with copies gets no hold (sent plainly).

use std::cell::{Cell, RefCell};

use crossbeam_epoch::Guard;

use crate::types::Item;

/// This thread's loans, from the first to [`settle`].
struct Loans {
    /// Held from the first loan to [`settle`].
    guard: Option<Guard>,
    /// (offset in the output, value) in the order lent. The `'static` is not true: each
    /// slice is valid while `guard` is held (`parts[copied..]`) or while `copies` holds its
    /// bytes (`parts[..copied]`), and is only handed out borrowed from them.
    parts: Vec<(usize, &'static [u8])>,
    /// The first `copied` parts point into `copies`, not into item memory ([`unpin`]).
    copied: usize,
    /// The values [`unpin`] copied out of item memory, one buffer per call; a buffer's
    /// bytes stay where they are when the list grows.
    copies: Vec<Vec<u8>>,
}

thread_local! {
    /// Lending is open (between [`open`] and [`settle`]). Apart from the loans, so that a
    /// batch that lends nothing reads no more than two plain cells.
    static OPEN: Cell<bool> = const { Cell::new(false) };
    /// Bytes lent since [`open`].
    static LENT_BYTES: Cell<usize> = const { Cell::new(0) };
    /// Within `settle`'s `f` (the loans' pin held) and no part copied: [`hold`] may pin on.
    static SETTLING: Cell<bool> = const { Cell::new(false) };
    static LOANS: RefCell<Loans> = const {
        RefCell::new(Loans { guard: None, parts: Vec::new(), copied: 0, copies: Vec::new() })
    };
}

/// Values of at least this many bytes are lent; smaller ones are copied (cheaper than a
/// piece of a vectored send; see docs/benchmarks/large-values.md).
pub const VALUE_BYTES_MIN: usize = 4096;

/// Opens lending on this thread: until [`settle`], values of [`VALUE_BYTES_MIN`] or more may
/// be lent ([`Item::lend_value`]).
#[inline]
pub fn open() {
    debug_assert_eq!(LENT_BYTES.get(), 0, "lending opened with loans not settled");
    OPEN.set(true);
}

/// Bytes lent on this thread since [`open`] (a batch counts them as output it produced).
#[inline]
pub fn lent_bytes() -> usize {
    LENT_BYTES.get()
}

/// Closes lending on this thread: `f` gets the parts lent since [`open`] (each with its
/// offset in the output the batch wrote, in the order lent), if there are any, and must
/// send or copy them before it returns; then the pin goes.
#[inline]
pub fn settle<R>(f: impl FnOnce(&[(usize, &[u8])]) -> R) -> Option<R> {
    OPEN.set(false);
    if LENT_BYTES.get() == 0 {
        return None;
    }
    LENT_BYTES.set(0);
    LOANS.with(|cell| {
        let mut loans = cell.borrow_mut();
        // The slices shrink to this borrow, within which the guard is held.
        let parts: &[(usize, &[u8])] = &loans.parts;
        // Parts copied by `unpin` are freed below, before a hold's send would be done.
        SETTLING.set(loans.copied == 0);
        let result = f(parts);
        SETTLING.set(false);
        loans.parts.clear();
        loans.copied = 0;
        loans.copies.clear();
        loans.guard = None;
        Some(result)
    })
}

/// Lets go of this thread's loan pin, if it holds one, after copying the values lent since
/// the last call out of item memory: the parts keep their offsets and order, and `settle`
/// hands out the copies. For a write on this thread that must wait for a grace period
/// (`Store::wait_for_frees`), which the pin would hold up for good. A value lent after
/// this pins again. True if a pin was let go.
pub(crate) fn unpin() -> bool {
    LOANS.with(|cell| {
        // Never borrowed across a store call; a borrow here would be a bug, not a wait.
        let Ok(mut loans) = cell.try_borrow_mut() else { return false };
        if loans.guard.is_none() {
            return false;
        }
        let loans = &mut *loans;
        let fresh = &mut loans.parts[loans.copied..];
        let mut copy = Vec::with_capacity(fresh.iter().map(|(_, part)| part.len()).sum());
        for (_, part) in fresh.iter() {
            copy.extend_from_slice(part);
        }
        let mut from = 0;
        for (_, part) in fresh.iter_mut() {
            let len = part.len();
            // SAFETY: `copy`'s heap buffer is kept in `copies` until `settle` clears the
            // parts, is never written again, and does not move when `copies` grows; so the
            // slice stays valid for as long as the part exists (see `Loans::parts`).
            *part = unsafe { std::slice::from_raw_parts(copy.as_ptr().add(from), len) };
            from += len;
        }
        loans.copies.push(copy);
        loans.copied = loans.parts.len();
        // The item memory is no longer referred to: its grace period may end.
        loans.guard = None;
        true
    })
}

/// A pin of this thread that outlives [`settle`]: taken within `settle`'s `f`, it keeps the
/// parts being settled valid and unchanged for as long as it lives (a zero-copy send, whose
/// kernel reads them after `f` returns). Each one delays the reuse of freed memory on every
/// thread while it lives: drop it as soon as the kernel is done.
pub struct Hold {
    _guard: Guard,
}

/// A [`Hold`] on the parts lent on this thread, or None outside `settle` (no loan pinned)
/// and when a write behind the loans had them copied ([`unpin`]): those are sent plainly.
pub fn hold() -> Option<Hold> {
    // Nested in the loans' pin, which is held while `f` runs: no gap in the thread's pin.
    SETTLING.get().then(|| Hold { _guard: crate::shared_writes::pin() })
}

impl Item<'_> {
    /// Lends this item's value to the batch's output at offset `at` instead of copying it:
    /// true if lent (the caller writes nothing of the value), false if lending is closed on
    /// this thread or the value is under its size.
    #[inline]
    pub fn lend_value(&self, at: usize) -> bool {
        let value = self.value;
        if value.len() < VALUE_BYTES_MIN {
            return false;
        }
        if !OPEN.get() {
            return false;
        }
        LOANS.with(|cell| {
            let mut loans = cell.borrow_mut();
            if loans.guard.is_none() {
                // Nested in the pin this item was read under (see the module docs).
                loans.guard = Some(crate::shared_writes::pin());
            }
            // SAFETY: the slice stays valid and unchanged while `guard` is held (module
            // docs), and it is only handed out by `settle`, borrowed within the guard's
            // life; the guard is dropped after the parts are cleared, or by `unpin` after
            // it re-pointed this part at a copy.
            let part: &'static [u8] =
                unsafe { std::slice::from_raw_parts(value.as_ptr(), value.len()) };
            loans.parts.push((at, part));
        });
        LENT_BYTES.set(LENT_BYTES.get() + value.len());
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::{Config, Expiry, Mode, Store};

    fn small_store() -> Store {
        Store::new(Config { memory_bytes: 16 << 20, ..Config::default() }).unwrap()
    }

    #[test]
    fn only_open_lending_and_large_values_are_lent() {
        let store = small_store();
        store.store(b"big", &[7; 5000], 0, Expiry::Never, Mode::Set).unwrap();
        store.store(b"small", &[8; 10], 0, Expiry::Never, Mode::Set).unwrap();
        let reader = store.reader();
        let big = reader.get(b"big").unwrap();
        assert!(!big.lend_value(0), "lending is closed");
        super::open();
        assert!(!reader.get(b"small").unwrap().lend_value(0));
        assert!(big.lend_value(3));
        assert_eq!(super::lent_bytes(), 5000);
        drop(reader);
        let seen = super::settle(|parts| {
            assert_eq!(parts.len(), 1);
            (parts[0].0, parts[0].1.to_vec())
        });
        assert_eq!(seen, Some((3, vec![7; 5000])));
        assert_eq!(super::lent_bytes(), 0);
        assert_eq!(super::settle(|_| ()), None);
    }

    /// A write on the lending thread that needs memory back (several times the store's memory
    /// written behind a loan) waits for a grace period that its own loan would hold up for
    /// good: the loan's value is copied and its pin let go first, so every write is stored
    /// (before, none could wait, and the full store refused them), a value lent after that
    /// pins again, and both leave whole and in order.
    #[test]
    fn writes_behind_a_loan_wait_after_copying_it() {
        let store = small_store();
        store.store(b"k", &[1; 10_000], 0, Expiry::Never, Mode::Set).unwrap();
        store.store(b"j", &[2; 10_000], 0, Expiry::Never, Mode::Set).unwrap();
        super::open();
        assert!(store.reader().get(b"k").unwrap().lend_value(0));
        for round in 0..4_000u32 {
            let key = format!("f{round}");
            let value = [(round % 250) as u8; 10_000];
            store.store(key.as_bytes(), &value, 0, Expiry::Never, Mode::Set).unwrap();
            if round == 2_000 {
                // The copy is made once, on the first wait; the next loan pins again.
                assert!(!crossbeam_epoch::is_pinned(), "the loan's pin was let go");
                store.store(b"j", &[2; 10_000], 0, Expiry::Never, Mode::Set).unwrap();
                assert!(store.reader().get(b"j").unwrap().lend_value(7));
                assert!(crossbeam_epoch::is_pinned());
            }
        }
        store.store(b"k", &[3; 10_000], 0, Expiry::Never, Mode::Set).unwrap();
        store.delete(b"j", None).unwrap();
        let seen = super::settle(|parts| {
            // Copied parts are freed at settle's end: no zero-copy hold may outlive them.
            assert!(super::hold().is_none(), "a hold over copied parts");
            let whole = |part: &[u8]| part.iter().all(|&b| b == part[0]);
            parts.iter().map(|&(at, part)| (at, part[0], whole(part))).collect::<Vec<_>>()
        });
        assert_eq!(seen, Some(vec![(0, 1, true), (7, 2, true)]));
    }

    /// A hold taken within `settle` keeps the part valid after it, while another thread
    /// overwrites, deletes and evicts; outside `settle` there is nothing to hold.
    #[test]
    fn a_hold_outlives_settle() {
        let store = Arc::new(small_store());
        store.store(b"k", &[1; 100_000], 0, Expiry::Never, Mode::Set).unwrap();
        assert!(super::hold().is_none());
        super::open();
        assert!(store.reader().get(b"k").unwrap().lend_value(0));
        let (hold, part) = super::settle(|parts| {
            let part: &'static [u8] =
                // SAFETY: read only while `hold` lives (the point of this test).
                unsafe { std::slice::from_raw_parts(parts[0].1.as_ptr(), parts[0].1.len()) };
            (super::hold(), part)
        })
        .unwrap();
        assert!(hold.is_some());
        let writer = Arc::clone(&store);
        std::thread::spawn(move || {
            for round in 0..20 {
                let v = vec![round as u8 + 2; 100_000];
                writer.store(b"k", &v, 0, Expiry::Never, Mode::Set).ok();
                writer.store(format!("f{round}").as_bytes(), &v, 0, Expiry::Never, Mode::Set).ok();
                writer.delete(b"k", None).ok();
            }
        })
        .join()
        .unwrap();
        assert!(part.iter().all(|&b| b == 1), "a held part changed");
        drop(hold);
    }

    /// A lent value stays whole while another thread overwrites and deletes its key, however
    /// long the loan is held: a value in a segment, and a large item with a mapping of its
    /// own (without the pin, a deleted large item's mapping is the spare the next write of
    /// its size fills). The writes stay within the limit: one that needs memory back waits
    /// for the grace period, which the loan holds up.
    #[test]
    fn lent_values_survive_overwrites_and_eviction() {
        for len in [10_000, 100_000] {
            let store = Arc::new(small_store());
            let value = |round: u8| vec![round; len];
            store.store(b"k", &value(1), 0, Expiry::Never, Mode::Set).unwrap();
            super::open();
            {
                let reader = store.reader();
                assert!(reader.get(b"k").unwrap().lend_value(0));
            }
            std::thread::scope(|scope| {
                let writer = Arc::clone(&store);
                scope.spawn(move || {
                    for round in 0..(20 * 100_000 / len) {
                        let v = value((round % 250) as u8 + 2);
                        writer.store(b"k", &v, 0, Expiry::Never, Mode::Set).ok();
                        let other = format!("f{round}");
                        writer.store(other.as_bytes(), &v, 0, Expiry::Never, Mode::Set).ok();
                        if round % 7 == 0 {
                            writer.delete(b"k", None).ok();
                        }
                    }
                });
            });
            let whole = super::settle(|parts| parts[0].1.iter().all(|&b| b == 1));
            assert_eq!(whole, Some(true), "value of {len} bytes changed under its loan");
        }
    }
}
