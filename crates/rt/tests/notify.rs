//! Waking a loop from another thread (`rt::Notifier`) and the streaming connections it
//! serves, on both back ends: a notify streams at once rather than at the next tick, a
//! handler can cut a streaming connection off after its last bytes, and thousands of
//! streaming connections come and go without slowing the loop. The test thread plays the
//! publisher: it pushes items to the handler's shared feed, then notifies.

mod common;

use std::{
    io::Write,
    net::TcpStream,
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use common::*;
use rt::{Backend, LoopStats, Notifier};

both_backends!(
    notify_streams_without_waiting_for_a_tick,
    stream_cut_off_gets_final_bytes_then_eof,
    sealed_stream_cut_off_sends_close_record,
    many_streaming_connections_come_and_go,
    held_input_runs_once_unblocked,
    paused_stream_is_offered_more_once_sent,
);

/// Far longer than a notified delivery may take, and short enough for the shutdown (which
/// waits for a tick) to stay within the harness's 5 s.
const SLOW_TICK: Duration = Duration::from_secs(3);
/// The most a notified item may take to arrive.
const PROMPT: Duration = Duration::from_millis(500);

struct Notified {
    server: Server,
    notifier: Notifier,
    /// The loop's wake-ups (`LoopStats`).
    stats: Arc<LoopStats>,
}

fn serve_notified(backend: Backend, tick: Duration, options: Options) -> Notified {
    let notifier = Notifier::new().unwrap();
    let mut cfg = config(backend);
    cfg.tick_interval = tick;
    cfg.notifier = Some(notifier.clone());
    let stats = cfg.stats.clone();
    let listeners = match options.session_tag {
        Some(tag) => vec![listener(0), listener(tag)],
        None => vec![listener(0)],
    };
    Notified { server: start(cfg, listeners, options), notifier, stats }
}

fn subscribe(s: &mut TcpStream) {
    assert_eq!(request(s, b"subscribe\n", 11), b"subscribed\n");
}

fn publish(server: &Server, notifier: &Notifier, item: &[u8]) {
    server.feed.lock().unwrap().push_back(item.to_vec());
    notifier.notify();
}

/// With ticks 3 s apart, each published item reaches the subscriber within 500 ms, the
/// first before the handler has seen any tick: the notifier streamed it. A burst of
/// publishes (many notifies before the loop wakes) delivers every item, in order. Then the
/// loop sleeps: a drained notifier does not keep waking it.
fn notify_streams_without_waiting_for_a_tick(backend: Backend) {
    let Notified { server, notifier, stats } = serve_notified(backend, SLOW_TICK, PLAIN);
    let mut s = connect(server.addr());
    subscribe(&mut s);
    for round in 0..3 {
        let item = format!("item {round}\n");
        let published = Instant::now();
        publish(&server, &notifier, item.as_bytes());
        assert_eq!(read_exact(&mut s, item.len()), item.as_bytes());
        assert!(published.elapsed() < PROMPT, "round {round}: {:?}", published.elapsed());
        if round == 0 {
            assert_eq!(server.stats.ticks.load(Ordering::Relaxed), 0, "a tick streamed it");
        }
    }
    let mut want = Vec::new();
    for i in 0..200 {
        let item = format!("burst {i}\n");
        want.extend_from_slice(item.as_bytes());
        publish(&server, &notifier, item.as_bytes());
    }
    let published = Instant::now();
    assert_eq!(read_exact(&mut s, want.len()), want);
    assert!(published.elapsed() < PROMPT, "burst: {:?}", published.elapsed());
    std::thread::sleep(Duration::from_millis(20)); // the burst's last wakes
    let wakeups = stats.wakeups();
    std::thread::sleep(Duration::from_millis(200));
    assert!(stats.wakeups() - wakeups <= 1, "{} wake-ups idle", stats.wakeups() - wakeups);
}

/// A subscriber whose handler answers `CloseAfterFlush` from `stream` gets what was
/// streamed with it, then EOF; so does a tick streamer cut off after its third tick. A tick
/// streamer and a plain connection beside them carry on.
fn stream_cut_off_gets_final_bytes_then_eof(backend: Backend) {
    let Notified { server, notifier, .. } =
        serve_notified(backend, Duration::from_millis(10), PLAIN);
    let mut plain = connect(server.addr());
    let mut ticker = connect(server.addr());
    ticker.write_all(b"stream\n").unwrap();
    assert_eq!(read_exact(&mut ticker, 17), b"streaming\ntick 1\n");
    let mut cut_by_tick = connect(server.addr());
    cut_by_tick.write_all(b"stream 3\n").unwrap();
    assert_eq!(read_to_end(&mut cut_by_tick), b"streaming\ntick 1\ntick 2\ntick 3\n");
    let mut sub = connect(server.addr());
    subscribe(&mut sub);
    server.feed.lock().unwrap().push_back(b"last\n".to_vec());
    publish(&server, &notifier, b"cut");
    assert_eq!(read_to_end(&mut sub), b"last\ncut\n");
    let closed = || server.stats.closed.load(Ordering::Relaxed);
    assert!(eventually(Duration::from_secs(2), || closed() == 2), "{} closed", closed());
    assert_eq!(read_exact(&mut ticker, 14), b"tick 2\ntick 3\n");
    assert_eq!(request(&mut plain, b"hello\n", 6), b"hello\n");
}

/// On a sealed (TLS stand-in) connection, a cut-off subscriber's last bytes are sealed and
/// followed by the session's close record, as after `quit`.
fn sealed_stream_cut_off_sends_close_record(backend: Backend) {
    const SEALED_TAG: u32 = 7;
    let options = Options { session_tag: Some(SEALED_TAG), ..PLAIN };
    let Notified { server, notifier, .. } =
        serve_notified(backend, Duration::from_millis(10), options);
    let mut s = connect(server.addrs[1]);
    s.write_all(&xor(b"subscribe\n")).unwrap();
    let want = [GREETING, b"subscribed\n"].concat();
    assert_eq!(xor(&read_exact(&mut s, want.len())), want);
    publish(&server, &notifier, b"cut");
    assert_eq!(xor(&read_to_end(&mut s)), [b"cut\n", CLOSE_RECORD].concat());
}

/// 2,000 subscribers connect, then all leave at once: the loop answers at once, closes
/// them all promptly (dropping each from the streaming list in O(1), not a retain per
/// close), and a subscriber that stayed still gets every notified item.
fn many_streaming_connections_come_and_go(backend: Backend) {
    const CROWD: usize = 2000;
    let Notified { server, notifier, .. } =
        serve_notified(backend, Duration::from_millis(10), PLAIN);
    let mut stayer = connect(server.addr());
    subscribe(&mut stayer);
    // In batches well under the listen backlog (128), so that a loop thread that waits
    // for a CPU a while does not overflow the accept queue (a dropped SYN costs 1 s).
    let mut crowd: Vec<TcpStream> = Vec::with_capacity(CROWD);
    for _ in 0..CROWD / 100 {
        let mut batch: Vec<TcpStream> = (0..100).map(|_| connect(server.addr())).collect();
        for s in &mut batch {
            s.write_all(b"subscribe\n").unwrap();
        }
        for s in &mut batch {
            assert_eq!(read_exact(s, 11), b"subscribed\n");
        }
        crowd.append(&mut batch);
    }
    let started = Instant::now();
    drop(crowd);
    let closed = || server.stats.closed.load(Ordering::Relaxed);
    assert!(eventually(Duration::from_secs(5), || closed() == CROWD), "{} closed", closed());
    let mut plain = connect(server.addr());
    assert_eq!(request(&mut plain, b"still here\n", 11), b"still here\n");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    for i in 0..10 {
        let item = format!("news {i}\n");
        publish(&server, &notifier, item.as_bytes());
        assert_eq!(read_exact(&mut stayer, item.len()), item.as_bytes());
    }
}

/// A connection that waits (`block`, as a Redis BLPOP) gets nothing for the lines sent
/// behind it, before or while it waits; once a notified `stream` call answers it and
/// yields, those lines run in order, without more input from the client. Another
/// connection is served meanwhile.
fn held_input_runs_once_unblocked(backend: Backend) {
    let Notified { server, notifier, .. } = serve_notified(backend, SLOW_TICK, PLAIN);
    let mut s = connect(server.addr());
    s.write_all(b"block\nfirst\n").unwrap();
    let mut other = connect(server.addr());
    assert_eq!(request(&mut other, b"meanwhile\n", 10), b"meanwhile\n");
    s.write_all(b"second\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let mut byte = [0u8; 1];
    assert!(std::io::Read::read(&mut s, &mut byte).is_err(), "answered while blocked");
    s.set_read_timeout(None).unwrap();
    let published = Instant::now();
    publish(&server, &notifier, b"served\n");
    assert_eq!(read_exact(&mut s, 20), b"served\nfirst\nsecond\n");
    assert!(published.elapsed() < PROMPT, "{:?}", published.elapsed());
    assert_eq!(request(&mut s, b"again\n", 6), b"again\n");
}

/// A streaming connection whose every offer takes its output past the pause threshold (a
/// replica's full copy: a megabyte per offer) is offered more as soon as that output went,
/// not at the next tick: with ticks 3 s apart and no notify, 16 chunks of 64 KiB arrive
/// within 500 ms, in order.
fn paused_stream_is_offered_more_once_sent(backend: Backend) {
    let Notified { server, .. } = serve_notified(backend, SLOW_TICK, PLAIN);
    let mut s = connect(server.addr());
    let started = Instant::now();
    s.write_all(b"flood 16\n").unwrap();
    let got = read_exact(&mut s, 16 * FLOOD_CHUNK_BYTES);
    assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    assert!(got == big_reply(FLOOD_CHUNK_BYTES - 1).repeat(16), "chunks out of order");
}
