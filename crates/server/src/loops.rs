//! The loops' back end, chosen once for all of them, and their threads' end.
//!
//! `--io auto` asks io_uring for what every loop will use before any loop starts (see
//! `rt::probe_uring_for`) and falls back to epoll for all of them, with one line saying
//! which call was refused and why: under a container runtime's default seccomp profile
//! io_uring is refused, and the server must still start. `--io uring` refuses to start
//! instead. A loop that still fails to set up later (memory gone between the probe and the
//! loop) stops the whole server: it never serves with some loops missing.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::{config::Config, signals};

/// The back end of every loop; `Err` (the reason to exit on) only for `--io uring`.
pub fn choose(
    config: &Config,
    recv_buffers: u16,
    recv_buffer_bytes: u32,
) -> Result<rt::Chosen, String> {
    let needs = rt::UringNeeds { loops: config.threads.max(1), recv_buffers, recv_buffer_bytes };
    rt::choose_backend(config.io, needs).map_err(|why| {
        format!("--io uring: io_uring unavailable: {why} (--io auto would use epoll)")
    })
}

/// The one line an epoll fallback gets.
pub fn warn_fallback(chosen: &rt::Chosen) {
    if let Some(why) = &chosen.fallback {
        tracing::warn!("io_uring unavailable: {why}; using epoll");
    }
}

/// Runs one worker's loop; a loop that fails stops the others (`stop`), so that the server
/// exits with the reason rather than serving on fewer loops.
pub fn run_worker<H: rt::Handler>(
    config: &rt::LoopConfig,
    listeners: Vec<rt::Listener>,
    handler: H,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let result = rt::run(config, listeners, handler);
    if let Err(e) = &result {
        tracing::error!("worker failed: {e}; stopping the server");
        stop.store(true, Ordering::Relaxed);
    }
    result
}

/// Waits for the workers, then the UDP threads; the last failure, if any.
pub fn wait_for_threads(
    handles: Vec<std::thread::JoinHandle<std::io::Result<()>>>,
    udp_handles: Vec<std::thread::JoinHandle<()>>,
    stop: &AtomicBool,
) -> Option<String> {
    let mut failure = None;
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failure = Some(format!("worker failed: {e}")),
            Err(_) => failure = Some("worker panicked".to_string()),
        }
    }
    signals::workers_stopped();
    // The workers stopped on the stop flag or `shutdown`; the UDP threads see either within
    // one poll, and the flag is set here so that a worker failure stops them too.
    stop.store(true, Ordering::Relaxed);
    for handle in udp_handles {
        if handle.join().is_err() {
            failure = Some("UDP thread panicked".to_string());
        }
    }
    failure
}
