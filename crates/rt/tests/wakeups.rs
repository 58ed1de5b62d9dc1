//! How often a loop sleeps, counted as its thread's voluntary context switches. In a spaced
//! ping-pong every request wakes the loop once; a turn's send completions must not wake it a
//! second time (io_uring: they complete inline, within the enter that then waits; a 50 us
//! min-wait used to end that wait early, costing a sleep and a timer wake-up per request).
//!
//! Its own test binary, so that few other threads compete with the counted ones.

mod common;

use std::{
    sync::{atomic::AtomicBool, Arc},
    time::Duration,
};

use common::{config, connect, listener, request, uring_skip_reason, Lines, Stats, PLAIN};
use rt::Backend;

const REQUESTS: u64 = 200;
/// Longer than the old min-wait, so that each request finds the loop asleep.
const GAP: Duration = Duration::from_micros(300);

fn voluntary_switches(thread_name: &str) -> u64 {
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() != thread_name {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("voluntary_ctxt_switches:")).unwrap();
        return line.split_whitespace().nth(1).unwrap().parse().unwrap();
    }
    panic!("no thread named {thread_name}");
}

fn sleeps_per_request(backend: Backend) -> f64 {
    let thread_name = format!("wake-{backend:?}"); // comm holds at most 15 bytes
    let mut cfg = config(backend);
    // Ticks wake the loop too: keep them out of the count (shutdown waits for one).
    cfg.tick_interval = Duration::from_millis(500);
    let listen = listener(0);
    let addr = match &listen.socket {
        rt::ListenSocket::Tcp(socket) => socket.local_addr().unwrap(),
        rt::ListenSocket::Unix(_) => unreachable!("the test listens on TCP"),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let handler = Lines {
        stop: stop.clone(),
        stats: Arc::new(Stats::default()),
        refuse: PLAIN.refuse,
        one_line_per_call: PLAIN.one_line_per_call,
        session_tag: PLAIN.session_tag,
        feed: Default::default(),
    };
    let thread = std::thread::Builder::new()
        .name(thread_name.clone())
        .spawn(move || rt::run(&cfg, vec![listen], handler))
        .unwrap();
    let mut s = connect(addr);
    for _ in 0..10 {
        assert_eq!(request(&mut s, b"warm\n", 5), b"warm\n");
    }
    let before = voluntary_switches(&thread_name);
    for _ in 0..REQUESTS {
        assert_eq!(request(&mut s, b"ping\n", 5), b"ping\n");
        std::thread::sleep(GAP);
    }
    let after = voluntary_switches(&thread_name);
    drop(s);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    thread.join().unwrap().unwrap();
    (after - before) as f64 / REQUESTS as f64
}

/// Goal: one sleep per request on io_uring (the old min-wait made it two). Method: 200
/// spaced round trips on one connection; the loop thread's voluntary switches are counted
/// around them (ticks, every 500 ms, add at most a few).
#[test]
fn uring_sleeps_once_per_request() {
    if let Some(reason) = uring_skip_reason() {
        eprintln!("skipping: {reason}");
        return;
    }
    let per_request = sleeps_per_request(Backend::Uring);
    eprintln!("io_uring loop: {per_request:.2} sleeps per request");
    assert!(per_request < 1.3, "io_uring loop slept {per_request:.2} times per request");
}

/// Goal: the same for epoll (one `epoll_wait` sleep per request), the back end it is
/// compared with.
#[test]
fn epoll_sleeps_once_per_request() {
    let per_request = sleeps_per_request(Backend::Epoll);
    eprintln!("epoll loop: {per_request:.2} sleeps per request");
    assert!(per_request < 1.3, "epoll loop slept {per_request:.2} times per request");
}
