//! The gate: how a command that must not interleave with any other (Redis EXEC, and the
//! writes that touch several keys: MSET, RENAME, SMOVE, the STORE forms) gets the whole
//! store to itself, while every other command pays one uncontended store and load.
//!
//! Each worker marks itself inside the gate while it executes a batch of requests (one
//! `Handler::receive`) and outside while it waits for input. A command that needs
//! exclusivity takes the gate's mutex (so such commands run one at a time, in arrival
//! order of the mutex), raises `pending`, and waits until every other worker is outside;
//! a worker that comes in while `pending` is up steps out again and waits on the mutex.
//! The two flags are a Dekker pair (each side stores its flag, then loads the other's,
//! both `SeqCst`), so at least one side sees the other and no batch overlaps an exclusive
//! command. Workers are only ever stopped between requests, never inside one, so no store
//! lock is held by a stopped worker and the exclusive command cannot deadlock on it. A
//! worker asking for exclusivity from inside its batch steps out first, so two workers
//! asking at once queue on the mutex instead of waiting for each other.
//!
//! The gate is re-entrant: a thread that already holds it (EXEC, a script) and runs a
//! command that asks for it again (SWAPDB, a multi-key write, a blocking pop) just runs
//! that command. Waiting for itself would stop every worker for good (each would wait on
//! the mutex its holder never lets go). Which thread holds which gate is a thread-local,
//! so the check costs nothing to the workers that do not hold it.
//!
//! A script past its time limit (`resp::script`) raises `busy`: a worker waiting to enter
//! through [`Gate::enter_or_busy`] stops waiting and serves its batch without entering,
//! answering `-BUSY` to everything but SCRIPT KILL and FUNCTION KILL (exec checks
//! [`Entered::Busy`] through the session), so it never touches the store while the
//! script holds the gate. Waiters look at `busy` every 10 ms while they wait. A busy
//! script also yields to its own worker's loop between slices, keeping the gate: the
//! hold outlives the call that took it ([`Gate::hold`] ... [`Gate::release`]), and the
//! holder's thread is marked as the holder only while the script runs
//! ([`Gate::mark_held`]), so that thread's other batches are turned away as any other
//! worker's are.
//!
//! Why not a lock per key: taking (and ordering) key locks would cost every string
//! command a lock; the gate costs a batch two atomic stores and a load on a line of its
//! own, and with one worker (`-t 1`) exclusivity is free.

use std::{
    cell::Cell,
    sync::{
        atomic::{AtomicBool, Ordering::SeqCst},
        Arc,
    },
    thread,
    time::Duration,
};

use parking_lot::{Condvar, Mutex};

/// One worker's "inside" flag, alone on its cache line pair (no false sharing between
/// workers).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Inside(AtomicBool);

#[derive(Debug)]
pub struct Gate {
    inside: Box<[Inside]>,
    pending: AtomicBool,
    /// Whether an exclusive command holds the gate; a flag under a mutex rather than the
    /// mutex's own guard, so that a hold can outlive the call that took it (a busy script
    /// suspended between turns of its loop, see [`Hold`]).
    owned: Mutex<bool>,
    /// Signalled when the holder lets go.
    freed: Condvar,
    /// The exclusive command is a script past its time limit.
    busy: Arc<AtomicBool>,
}

/// The gate taken by [`Gate::hold`]: no other worker executes until
/// [`Gate::release`] gets it back. Not `Clone`, and it must be released: dropped, it
/// leaves every worker stopped (prefer [`Gate::hold_guarded`] where the hold ends in the
/// same call).
#[derive(Debug)]
#[must_use = "a hold must be given back with Gate::release"]
pub struct Hold {
    worker: usize,
}

/// A [`Hold`] given back when dropped (see [`Gate::hold_guarded`]).
#[derive(Debug)]
pub struct Held<'a> {
    gate: &'a Gate,
    hold: Option<Hold>,
}

impl Held<'_> {
    /// Keeps the gate past this guard (a suspended script): this thread stops being its
    /// holder until [`Gate::mark_held`] says so again, and [`Gate::release`] ends it.
    pub fn keep(mut self) -> Hold {
        self.gate.mark_held(false);
        self.hold.take().expect("a guard holds until kept or dropped")
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(hold) = self.hold.take() {
            // Back inside before the next exclusive command can start.
            self.gate.release(hold, true);
        }
    }
}

/// How [`Gate::enter_or_busy`] let a worker in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entered {
    /// Inside: execute as usual, then [`Gate::leave`].
    Inside,
    /// Not inside: a busy script holds the gate; answer `-BUSY`, touch nothing, and do not
    /// call [`Gate::leave`].
    Busy,
}

impl Gate {
    pub fn new(workers: usize) -> Gate {
        let inside = (0..workers.max(1)).map(|_| Inside::default()).collect();
        let busy = Arc::new(AtomicBool::new(false));
        let (owned, freed) = (Mutex::new(false), Condvar::new());
        Gate { inside, pending: AtomicBool::new(false), owned, freed, busy }
    }

    /// The flag a running script raises once it passes its time limit.
    pub fn busy_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.busy)
    }

    /// [`Gate::enter`], unless a busy script holds the gate: then returns
    /// [`Entered::Busy`] without entering.
    #[inline]
    pub fn enter_or_busy(&self, worker: usize) -> Entered {
        let flag = self.flag(worker);
        loop {
            flag.store(true, SeqCst);
            if !self.pending.load(SeqCst) {
                return Entered::Inside;
            }
            flag.store(false, SeqCst);
            if self.busy.load(SeqCst) {
                return Entered::Busy;
            }
            self.wait_free(Some(Duration::from_millis(10)));
        }
    }

    fn flag(&self, worker: usize) -> &AtomicBool {
        &self.inside[worker % self.inside.len()].0
    }

    /// Marks `worker` inside (before it executes a batch); waits while an exclusive
    /// command runs.
    #[inline]
    pub fn enter(&self, worker: usize) {
        let flag = self.flag(worker);
        loop {
            flag.store(true, SeqCst);
            if !self.pending.load(SeqCst) {
                return;
            }
            flag.store(false, SeqCst);
            self.wait_free(None);
        }
    }

    /// Waits until no exclusive command holds the gate (at most `timeout`).
    fn wait_free(&self, timeout: Option<Duration>) {
        let mut owned = self.owned.lock();
        if *owned {
            match timeout {
                Some(timeout) => drop(self.freed.wait_for(&mut owned, timeout)),
                None => self.freed.wait(&mut owned),
            }
        }
    }

    /// Marks `worker` outside (after its batch).
    #[inline]
    pub fn leave(&self, worker: usize) {
        self.flag(worker).store(false, SeqCst);
    }

    /// Runs `f` with no other worker inside the gate. The caller (`worker`) is inside and
    /// stays so. Re-entrant: called again from inside `f` (on the same thread), it runs
    /// the inner `f` at once, since the gate is already held.
    pub fn exclusive<R>(&self, worker: usize, f: impl FnOnce() -> R) -> R {
        if self.inside.len() == 1 || self.held_here() {
            return f();
        }
        let _held = self.hold_guarded(worker);
        f()
    }

    /// [`Gate::hold`], given back (the holder back inside) when the guard drops, even by a
    /// panic, so the other workers are not stopped for good; or kept with
    /// [`Held::keep`].
    pub fn hold_guarded(&self, worker: usize) -> Held<'_> {
        Held { gate: self, hold: Some(self.hold(worker)) }
    }

    /// Takes the gate for `worker` (which steps out of it first) and waits until every
    /// other worker has finished its batch; the calling thread is marked as the holder
    /// ([`Gate::held_here`]). Not re-entrant: see [`Gate::exclusive`].
    pub fn hold(&self, worker: usize) -> Hold {
        self.leave(worker);
        {
            let mut owned = self.owned.lock();
            while *owned {
                self.freed.wait(&mut owned);
            }
            *owned = true;
        }
        self.mark_held(true);
        self.pending.store(true, SeqCst);
        for (index, other) in self.inside.iter().enumerate() {
            if index == worker % self.inside.len() {
                continue;
            }
            // Another worker finishes its current batch: at most `-R` requests.
            let mut spins = 0u32;
            while other.0.load(SeqCst) {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    thread::yield_now();
                }
            }
        }
        Hold { worker }
    }

    /// Gives the gate back; `inside` says whether the holder's worker is back inside
    /// (it was in the middle of a batch) or not (a suspended script finished between
    /// batches).
    pub fn release(&self, hold: Hold, inside: bool) {
        self.pending.store(false, SeqCst);
        self.mark_held(false);
        self.flag(hold.worker).store(inside, SeqCst);
        *self.owned.lock() = false;
        self.freed.notify_all();
    }

    /// While a held gate's command is suspended (`false`) or resumed (`true`) on this
    /// thread: the thread's other batches are not the holder's and must not run as if
    /// they held it.
    pub fn mark_held(&self, held: bool) {
        let marked = if held { self as *const Gate as usize } else { 0 };
        HOLDING.with(|holding| holding.set(marked));
    }
}

thread_local! {
    /// The address of the gate this thread holds (0: none).
    static HOLDING: Cell<usize> = const { Cell::new(0) };
}

impl Gate {
    /// Whether this thread holds the gate now (inside [`Gate::exclusive`]).
    pub fn held_here(&self) -> bool {
        HOLDING.with(|holding| holding.get() == self as *const Gate as usize)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        atomic::{AtomicU64, Ordering::Relaxed},
        Arc,
    };

    use super::*;

    /// Goal: no batch of another worker overlaps an exclusive command, and nothing
    /// deadlocks when every worker asks for exclusivity at once. Method: four workers each
    /// run batches of a read-increment-write on a shared counter split in two halves that
    /// must stay equal; exclusive commands check that they are equal and change both. A
    /// torn update or an overlap shows as unequal halves.
    #[test]
    fn exclusive_commands_see_no_other_batch() {
        let gate = Arc::new(Gate::new(4));
        let halves = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
        let overlaps = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|worker| {
                let (gate, halves, overlaps) =
                    (Arc::clone(&gate), Arc::clone(&halves), Arc::clone(&overlaps));
                thread::spawn(move || {
                    for round in 0..2_000u64 {
                        gate.enter(worker);
                        if round % 50 == 0 {
                            gate.exclusive(worker, || {
                                let (a, b) = (halves.0.load(Relaxed), halves.1.load(Relaxed));
                                if a != b {
                                    overlaps.fetch_add(1, Relaxed);
                                }
                                halves.0.store(a + 1000, Relaxed);
                                halves.1.store(b + 1000, Relaxed);
                            });
                        }
                        // A shared-mode batch: the halves may differ only inside it, and
                        // only by this worker's own step, undone before it leaves.
                        halves.0.fetch_add(1, Relaxed);
                        halves.1.fetch_add(1, Relaxed);
                        gate.leave(worker);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(overlaps.load(Relaxed), 0);
        let (a, b) = (halves.0.load(Relaxed), halves.1.load(Relaxed));
        assert_eq!((a, b), (4 * 2_000 + 4 * 40 * 1000, 4 * 2_000 + 4 * 40 * 1000));
    }

    /// Goal: an exclusive command that asks for the gate again (SWAPDB inside EXEC or a
    /// script) runs instead of waiting for itself, and the other workers are let in once
    /// the outer one ends. Method: worker 0 nests three levels on a gate of two workers
    /// while worker 1 waits to enter; a deadlock shows as the test never finishing.
    #[test]
    fn exclusive_is_reentrant() {
        let gate = Arc::new(Gate::new(2));
        gate.enter(0);
        let depth = gate.exclusive(0, || {
            assert!(gate.held_here());
            gate.exclusive(0, || gate.exclusive(0, || 3))
        });
        assert_eq!(depth, 3);
        assert!(!gate.held_here(), "released once the outer call ends");
        gate.leave(0);
        let other = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                gate.enter(1);
                let held = gate.exclusive(1, || gate.held_here());
                gate.leave(1);
                held
            })
        };
        assert!(other.join().unwrap());
        assert!(!gate.held_here(), "another thread's hold is not this thread's");
    }

    /// Goal: while an exclusive command has raised `busy`, a worker asking through
    /// `enter_or_busy` is turned away (not inside) instead of waiting, and once the command
    /// ends it enters as usual. Method: worker 1 holds the gate with `busy` up until
    /// worker 0 reports back.
    #[test]
    fn busy_exclusive_turns_waiters_away() {
        let gate = Arc::new(Gate::new(2));
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                gate.enter(1);
                gate.exclusive(1, || {
                    gate.busy.store(true, SeqCst);
                    entered_tx.send(()).unwrap();
                    done_rx.recv().unwrap();
                    gate.busy.store(false, SeqCst);
                });
                gate.leave(1);
            })
        };
        entered_rx.recv().unwrap();
        assert_eq!(gate.enter_or_busy(0), Entered::Busy);
        assert!(!gate.flag(0).load(SeqCst), "a busy waiter is not inside");
        done_tx.send(()).unwrap();
        holder.join().unwrap();
        assert_eq!(gate.enter_or_busy(0), Entered::Inside);
        gate.leave(0);
    }

    /// Goal: a hold kept past the call that took it (a busy script suspended between loop
    /// turns) turns away the holder thread's own later batches as well as the others',
    /// and once released lets everyone in, the holder's worker left outside. Method: worker
    /// 0 holds and keeps; both workers ask through `enter_or_busy` while `busy` is up.
    #[test]
    fn kept_hold_turns_away_its_own_thread_too() {
        let gate = Arc::new(Gate::new(2));
        gate.enter(0);
        let kept = gate.hold_guarded(0).keep();
        gate.leave(0);
        assert!(!gate.held_here(), "kept: this thread is not marked between turns");
        gate.busy.store(true, SeqCst);
        assert_eq!(gate.enter_or_busy(0), Entered::Busy);
        let other = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || gate.enter_or_busy(1))
        };
        assert_eq!(other.join().unwrap(), Entered::Busy);
        gate.mark_held(true);
        assert_eq!(gate.exclusive(0, || 7), 7, "re-entrant while resumed");
        gate.mark_held(false);
        gate.busy.store(false, SeqCst);
        gate.release(kept, false);
        assert!(!gate.flag(0).load(SeqCst), "released between batches: not inside");
        let other = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                let entered = gate.enter_or_busy(1);
                gate.leave(1);
                entered
            })
        };
        assert_eq!(other.join().unwrap(), Entered::Inside);
    }
}
