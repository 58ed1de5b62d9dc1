//! The event loop's zero-copy bookkeeping: reaping the kernel's notifications, and what
//! a released hold lets a connection do (see `zerocopy.rs`).

use std::{io, mem, time::Instant};

use super::EventLoop;
use crate::{conn::Key, driver::Driver, sys, zerocopy::HOLD_MAX, Handler};

impl<D: Driver, H: Handler> EventLoop<'_, D, H> {
    /// Takes the kernel's zero-copy notifications for every connection with held sends
    /// (each turn), finishes lingering closes, and at ticks resets a connection whose
    /// oldest held send is older than [`HOLD_MAX`] (its hold delays memory reuse on every
    /// thread).
    pub(super) fn reap_zerocopy(&mut self, tick: bool) -> io::Result<()> {
        // Zero-copy holds keep `Instant`s (`zerocopy.rs`): one more read, on this path only.
        let now = Instant::now();
        self.zerocopy.finish_lingering(now);
        for key in mem::take(&mut self.zerocopy.waiting) {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            let Some(zc) = conn.zc.as_mut() else { continue };
            if zc.reap(conn.fd) {
                self.after_zerocopy(key)?;
            }
            let Some(conn) = self.conns.get_mut(key) else { continue };
            let Some(zc) = conn.zc.as_mut() else { continue };
            if zc.is_idle() {
                zc.listed = false;
                continue;
            }
            self.zerocopy.waiting.push(key);
            let stuck = zc.oldest().is_some_and(|at| now.duration_since(at) >= HOLD_MAX);
            if tick && stuck && !zc.reset {
                zc.reset = true;
                sys::set_abortive_close(conn.fd);
                self.close(key)?;
            }
        }
        Ok(())
    }

    /// Held bytes were released: a paused connection may resume.
    pub(super) fn after_zerocopy(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if conn.try_resume(&self.bounds) {
            conn.enqueue_backlog(key, &mut self.backlog);
        }
        if !conn.is_open() {
            return Ok(());
        }
        if conn.zc.as_ref().is_some_and(|zc| !zc.is_idle()) {
            self.driver.watch_errors(key, conn)?;
        }
        self.sync_reading(key)
    }
}
