//! Wakes of other loops, held until the end of the input batch that caused them.
//!
//! A PUBLISH (or a push that serves a client blocked on another loop) wakes the loops
//! whose connections got mail. Sent at once, one batch of 100 pipelined PUBLISHes to a
//! subscriber on another loop costs up to 100 wakes: the woken loop, on a core it shares
//! or not, takes each one as it comes, sends one message, sleeps, and is woken again. Held
//! until the batch ends, the batch costs one wake per loop, and the messages leave in one
//! send, as a batch's replies do. The delay is the rest of the batch, which the publisher's
//! own replies wait for too.

use std::cell::{Cell, RefCell};

thread_local! {
    /// Whether this thread is running an input batch (wakes are held).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
    /// The loops to wake when it ends, each once.
    static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// Whether `HELD` may hold a wake: most batches hold none, and then [`release`] reads
    /// this flag instead of taking and putting back the list (a `RefCell` of a `Vec` in a
    /// thread-local checks its destructor's registration at each access: about 80
    /// instructions per batch, measured with callgrind at pipeline 1).
    static ANY_HELD: Cell<bool> = const { Cell::new(false) };
}

/// From now until [`release`], this thread's wakes of other loops are held.
pub(crate) fn hold() {
    HOLDING.set(true);
}

/// Holds a wake of loop `worker` if a batch is running on this thread; false if not (the
/// caller wakes it now).
pub(crate) fn held(worker: usize) -> bool {
    if !HOLDING.get() {
        return false;
    }
    HELD.with_borrow_mut(|held| {
        if !held.contains(&worker) {
            held.push(worker);
        }
    });
    ANY_HELD.set(true);
    true
}

/// Ends the batch: wakes each held loop once with `wake`.
pub(crate) fn release(wake: impl Fn(usize)) {
    HOLDING.set(false);
    if !ANY_HELD.replace(false) {
        return;
    }
    let held = HELD.with_borrow_mut(std::mem::take);
    if held.is_empty() {
        HELD.set(held);
        return;
    }
    held.iter().for_each(|worker| wake(*worker));
    // Keep the allocation for the next batch.
    HELD.with_borrow_mut(|slot| {
        let mut held = held;
        held.clear();
        *slot = held;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_are_held_once_each_until_release() {
        assert!(!held(3), "not held outside a batch");
        hold();
        assert!(held(1) && held(2) && held(1));
        let woken = RefCell::new(Vec::new());
        release(|worker| woken.borrow_mut().push(worker));
        assert_eq!(*woken.borrow(), [1, 2]);
        assert!(!held(1), "released");
        release(|_| panic!("nothing held"));
    }
}
