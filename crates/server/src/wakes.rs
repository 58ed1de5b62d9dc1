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

/// [`STATE`]: no batch running (wakes go out at once).
const IDLE: u8 = 0;
/// A batch is running and has held no wake.
const HOLDING: u8 = 1;
/// A batch is running and `HELD` may hold wakes.
const HOLDING_SOME: u8 = 2;

thread_local! {
    /// Whether this thread is running an input batch, and whether it held a wake: one cell,
    /// so that a batch that held none (most) ends with one read and write of it (a
    /// `RefCell` of a `Vec` in a thread-local checks its destructor's registration at each
    /// access: about 80 instructions per batch, measured with callgrind at pipeline 1; two
    /// flags and an out-of-line `release` were 19 more).
    static STATE: Cell<u8> = const { Cell::new(IDLE) };
    /// The loops to wake when it ends, each once.
    static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// From now until [`release`], this thread's wakes of other loops are held.
#[inline]
pub(crate) fn hold() {
    STATE.set(HOLDING);
}

/// Holds a wake of loop `worker` if a batch is running on this thread; false if not (the
/// caller wakes it now).
pub(crate) fn held(worker: usize) -> bool {
    if STATE.get() == IDLE {
        return false;
    }
    HELD.with_borrow_mut(|held| {
        if !held.contains(&worker) {
            held.push(worker);
        }
    });
    STATE.set(HOLDING_SOME);
    true
}

/// Ends the batch: wakes each held loop once with `wake`.
#[inline]
pub(crate) fn release(wake: impl Fn(usize)) {
    if STATE.replace(IDLE) == HOLDING_SOME {
        release_held(wake);
    }
}

#[cold]
fn release_held(wake: impl Fn(usize)) {
    let held = HELD.with_borrow_mut(std::mem::take);
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
