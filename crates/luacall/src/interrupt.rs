//! A throttle in front of mlua's interrupt callback. Luau calls the interrupt at every
//! function call, return and loop edge; through mlua each call is a protected Rust
//! callback (about 130 instructions: 20 calls, 2.6k instructions, of a 5-command script).
//! The throttle answers most calls itself, in a few instructions, and passes a call on
//! to mlua's (which runs the script engine's callback) when:
//! - the `attention` flag is up (a kill asked for by another thread; it stays up, so every
//!   later interrupt passes, as a script that catches the kill error must meet it again
//!   at its next call or loop edge),
//! - the callback asked for the next one ([`interrupt_soon`], a slice that wants to yield
//!   where it could not),
//! - or every `every` calls (the clock).
//!
//! The callback that mlua installs is a single function (`interrupt_proc`) for every
//! state, so the throttle keeps its address in a static and calls it as Luau would.

use std::{
    cell::Cell,
    ffi::c_int,
    ptr,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed},
        Arc,
    },
};

use mlua::{ffi, Lua};

/// mlua's interrupt function, found where [`throttle_interrupt`] replaced it.
static DELEGATE: AtomicUsize = AtomicUsize::new(0);

type Interrupt = unsafe extern "C-unwind" fn(*mut ffi::lua_State, c_int);

thread_local! {
    /// Calls left until the next one passes on.
    static COUNTDOWN: Cell<u32> = const { Cell::new(0) };
    /// How many calls make one pass.
    static EVERY: Cell<u32> = const { Cell::new(1) };
    /// Points into `ATTENTION_OWNER`'s flag (null: none; every call passes on).
    static ATTENTION: Cell<*const AtomicBool> = const { Cell::new(ptr::null()) };
    /// Keeps the flag `ATTENTION` points to alive.
    static ATTENTION_OWNER: Cell<Option<Arc<AtomicBool>>> = const { Cell::new(None) };
}

/// Puts the throttle in front of the interrupt callback `lua` has now (set with mlua's
/// `Lua::set_interrupt` just before): it passes every `every`-th call on, and every call
/// while `attention` is up. Scripts run by this thread use it until mlua's interrupt is
/// set or removed again.
pub fn throttle_interrupt(lua: &Lua, attention: &Arc<AtomicBool>, every: u32) {
    let owner = Some(Arc::clone(attention));
    ATTENTION.set(Arc::as_ptr(attention));
    // The previous flag (if any) is dropped only once nothing points to it.
    drop(ATTENTION_OWNER.replace(owner));
    EVERY.set(every.max(1));
    COUNTDOWN.set(every.max(1));
    lua.exec_raw_lua(|raw| {
        let state = raw.state();
        // SAFETY: `state` is the live state of `lua` (locked by `exec_raw_lua`); the
        // callbacks are its global state's, read and written from this thread only while
        // the lock is held (no Lua code runs meanwhile).
        unsafe {
            let callbacks = ffi::lua_callbacks(state);
            let current = (*callbacks).interrupt;
            match current {
                Some(f) if f as *const () == throttled as *const () => {}
                Some(f) => {
                    DELEGATE.store(f as *const () as usize, Relaxed);
                    (*callbacks).interrupt = Some(throttled);
                }
                None => {}
            }
        }
    });
}

/// The next interrupt on this thread passes on to the callback.
pub fn interrupt_soon() {
    COUNTDOWN.set(1);
}

unsafe extern "C-unwind" fn throttled(state: *mut ffi::lua_State, gc: c_int) {
    if gc >= 0 {
        return; // a garbage-collection step: mlua ignores those too
    }
    let left = COUNTDOWN.get();
    let flag = ATTENTION.get();
    // SAFETY: a non-null `flag` points into the Arc that ATTENTION_OWNER keeps alive.
    let attention = flag.is_null() || unsafe { (*flag).load(Relaxed) };
    if left > 1 && !attention {
        COUNTDOWN.set(left - 1);
        return;
    }
    COUNTDOWN.set(EVERY.get());
    let delegate = DELEGATE.load(Relaxed);
    if delegate != 0 {
        // SAFETY: DELEGATE holds an `Interrupt` function pointer taken from the
        // callbacks (never anything else), called as Luau calls it: same state and
        // arguments. It may raise or yield: this frame owns nothing to drop.
        unsafe {
            let delegate = std::mem::transmute::<usize, Interrupt>(delegate);
            delegate(state, gc);
        }
    }
}
