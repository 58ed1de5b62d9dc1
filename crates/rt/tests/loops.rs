//! The event loop against real sockets on 127.0.0.1: every scenario runs once per back end.

mod common;

use std::{
    io::{Read, Write},
    net::Shutdown,
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use common::*;
use rt::{Backend, IoChoice};

both_backends!(
    echo_split_at_every_byte,
    partial_consumer_tail_is_offered_again,
    partial_consumer_beyond_call_budget,
    many_connections,
    large_reply_to_slow_reader,
    non_reader_cut_off_at_output_limit,
    non_reader_is_paused_then_resumes,
    half_close_gets_every_reply,
    paused_pipeline_drains_completely,
    half_close_drops_incomplete_request,
    reset_frees_paused_connections,
    idle_connections_hold_no_output_buffer,
    idle_timeout_closes,
    idle_timeout_set_while_running,
    accept_refusal_sends_line,
    close_after_flush,
    shutdown_flushes_replies_in_flight,
    listeners_carry_tags,
    two_loops_share_a_port,
    peer_reset_during_large_send,
    input_while_send_in_flight_keeps_order,
    tiny_receive_ring_rearms,
    tiny_receive_ring_half_close,
    busy_poll_serves,
    blocked_send_does_not_delay_others,
    reply_past_the_pause_threshold_does_not_wait_for_the_tick,
    shutdown_with_stuck_reader_is_bounded,
    streaming_connection_gets_output_at_ticks,
);

/// A connection whose handler answered `After::Stream` is offered output at every tick, in
/// order, with no input; the others are not; closing it ends the streaming.
fn streaming_connection_gets_output_at_ticks(backend: Backend) {
    let server = serve(backend);
    let mut plain = connect(server.addr());
    let mut s = connect(server.addr());
    s.write_all(b"stream\n").unwrap();
    let want = b"streaming\ntick 1\ntick 2\ntick 3\n";
    assert_eq!(read_exact(&mut s, want.len()), want);
    plain.write_all(b"hello\n").unwrap();
    assert_eq!(read_exact(&mut plain, 6), b"hello\n");
    drop(s);
    assert!(eventually(Duration::from_secs(2), || server.stats.closed.load(Ordering::Relaxed) == 1));
    plain.write_all(b"again\n").unwrap();
    assert_eq!(read_exact(&mut plain, 6), b"again\n");
}

/// Pipelined requests split at every byte boundary into two writes all get their answers,
/// in order.
fn echo_split_at_every_byte(backend: Backend) {
    let server = serve(backend);
    let mut s = connect(server.addr());
    let input = b"hello\nworld 12\n\nthree lines\n";
    for split in 0..=input.len() {
        s.write_all(&input[..split]).unwrap();
        std::thread::sleep(Duration::from_millis(1));
        s.write_all(&input[split..]).unwrap();
        assert_eq!(read_exact(&mut s, input.len()), input, "split at {split}");
    }
}

/// A handler that answers one line per call still sees every buffered line, without more
/// input arriving.
fn partial_consumer_tail_is_offered_again(backend: Backend) {
    let options = Options { one_line_per_call: true, ..PLAIN };
    let server = start(config(backend), vec![listener(0)], options);
    let mut s = connect(server.addr());
    let input: Vec<u8> = (0..20).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    s.write_all(&input).unwrap();
    assert_eq!(read_exact(&mut s, input.len()), input);
}

/// Many buffered lines, one per call and turn, are all answered in later turns.
fn partial_consumer_beyond_call_budget(backend: Backend) {
    let options = Options { one_line_per_call: true, ..PLAIN };
    let server = start(config(backend), vec![listener(0)], options);
    let mut s = connect(server.addr());
    let input: Vec<u8> = (0..500).flat_map(|i| format!("{i}\n").into_bytes()).collect();
    s.write_all(&input).unwrap();
    assert_eq!(read_exact(&mut s, input.len()), input);
}

/// 200 connections open at once each get their own answer.
fn many_connections(backend: Backend) {
    let server = serve(backend);
    let mut clients: Vec<_> = (0..200).map(|_| connect(server.addr())).collect();
    for (i, c) in clients.iter_mut().enumerate() {
        c.write_all(format!("client {i}\n").as_bytes()).unwrap();
    }
    for (i, c) in clients.iter_mut().enumerate() {
        let want = format!("client {i}\n");
        assert_eq!(read_exact(c, want.len()), want.as_bytes());
    }
    assert!(
        eventually(Duration::from_secs(2), || server.stats.accepted.load(Ordering::Relaxed) == 200)
    );
}

/// A multi-megabyte reply to a reader that starts late and reads slowly arrives whole (the
/// loop continues partial sends), and `sent` accounts for every byte.
fn large_reply_to_slow_reader(backend: Backend) {
    let server = serve(backend);
    let mut s = connect(server.addr());
    let n = 6_000_000;
    s.write_all(format!("big {n}\nafter\n").as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut got = Vec::with_capacity(n + 7);
    let mut chunk = vec![0; 256 * 1024];
    while got.len() < n + 7 {
        let k = s.read(&mut chunk).unwrap();
        assert!(k > 0, "closed early after {} bytes", got.len());
        got.extend_from_slice(&chunk[..k]);
        if got.len() < 1_000_000 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let mut want = big_reply(n);
    want.extend_from_slice(b"after\n");
    assert!(got == want, "reply differs");
    assert!(eventually(Duration::from_secs(2), || server.stats.sent_bytes.load(Ordering::Relaxed)
        == want.len()));
}

/// A single batch whose output passes the limit closes the connection.
fn non_reader_cut_off_at_output_limit(backend: Backend) {
    let mut cfg = config(backend);
    cfg.output_limit_bytes = 1 << 20;
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut s = connect(server.addr());
    s.write_all(b"big 2000000\n").unwrap();
    assert!(
        eventually(Duration::from_secs(3), || server.stats.closed.load(Ordering::Relaxed) == 1),
        "connection was not closed"
    );
    let got = read_to_end(&mut s);
    assert!(got.len() < 2_000_001, "all output arrived ({} bytes)", got.len());
    // The loop still serves others.
    let mut other = connect(server.addr());
    assert_eq!(request_line(&mut other, b"ping\n"), b"ping\n");
}

/// A client that pipelines 24 MB of replies without reading is paused, not buffered: the
/// loop holds about the pause threshold for it, serves others meanwhile, and once the client
/// reads, every reply arrives.
fn non_reader_is_paused_then_resumes(backend: Backend) {
    let mut cfg = config(backend);
    cfg.output_pause_bytes = 64 * 1024;
    let buffers = cfg.buffers.clone();
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut s = connect(server.addr());
    let request = b"big 400000\n".repeat(60);
    let writer = {
        let mut s = s.try_clone().unwrap();
        std::thread::spawn(move || s.write_all(&request))
    };
    std::thread::sleep(Duration::from_millis(300));
    let held = buffers.used_bytes();
    assert!(held < 2 << 20, "the loop buffers {held} bytes for a client that does not read");
    let mut other = connect(server.addr());
    assert_eq!(request_line(&mut other, b"ping\n"), b"ping\n");
    let mut got = 0;
    let mut chunk = vec![0; 1 << 20];
    while got < 60 * 400_001 {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "closed after {got} bytes");
        got += n;
    }
    writer.join().unwrap().unwrap();
    assert_eq!(server.stats.closed.load(Ordering::Relaxed), 0);
}

/// 600 pipelined 10 KB replies to a client that reads only after a while: the connection is
/// paused and resumed many times (partial sends included) and every reply arrives in order.
fn paused_pipeline_drains_completely(backend: Backend) {
    let mut cfg = config(backend);
    cfg.output_pause_bytes = 32 * 1024;
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut s = connect(server.addr());
    s.write_all(&b"big 10000\n".repeat(600)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let want: Vec<u8> = (0..600).flat_map(|_| big_reply(10_000)).collect();
    assert!(read_exact(&mut s, want.len()) == want, "replies differ");
}

/// The client sends its requests and shuts down its side: every reply arrives, in order,
/// then EOF; at depths 1, 100 and 1,000 and with replies from 2 bytes to 10 KB.
fn half_close_gets_every_reply(backend: Backend) {
    let server = serve(backend);
    for depth in [1, 100, 1000] {
        for size in [1, 10_000] {
            let mut s = connect(server.addr());
            let mut want = Vec::new();
            let mut request = Vec::new();
            for i in 0..depth {
                if size == 1 {
                    request.extend_from_slice(format!("{i}\n").as_bytes());
                    want.extend_from_slice(format!("{i}\n").as_bytes());
                } else {
                    request.extend_from_slice(format!("big {size}\n").as_bytes());
                    want.extend_from_slice(&big_reply(size));
                }
            }
            s.write_all(&request).unwrap();
            s.shutdown(Shutdown::Write).unwrap();
            let got = read_to_end(&mut s);
            assert!(
                got == want,
                "depth {depth} size {size}: {} of {} bytes",
                got.len(),
                want.len()
            );
        }
    }
}

/// An incomplete request before EOF is dropped unanswered; the complete ones are answered.
fn half_close_drops_incomplete_request(backend: Backend) {
    let server = serve(backend);
    let mut s = connect(server.addr());
    s.write_all(b"one\ntwo\nthr").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(read_to_end(&mut s), b"one\ntwo\n");
    assert!(eventually(Duration::from_secs(2), || server.stats.closed.load(Ordering::Relaxed) == 1));
}

/// Connections that got a reply and then stay idle hold no output buffer once a tick has
/// passed: epoll keeps a drained one as the connection's spare across one wait only, and
/// the pool frees buffers nobody took for a tick.
fn idle_connections_hold_no_output_buffer(backend: Backend) {
    let cfg = config(backend);
    let buffers = cfg.buffers.clone();
    let server = start(cfg, vec![listener(0)], PLAIN);
    let clients: Vec<_> = (0..20)
        .map(|_| {
            let mut s = connect(server.addr());
            s.write_all(b"big 40000\n").unwrap();
            assert_eq!(read_exact(&mut s, 40_001).len(), 40_001);
            s
        })
        .collect();
    assert!(
        eventually(Duration::from_secs(2), || buffers.used_bytes() == 0),
        "{} bytes still held by idle connections",
        buffers.used_bytes()
    );
    drop(clients);
}

/// Resetting paused connections frees what they held at once; others are still served.
fn reset_frees_paused_connections(backend: Backend) {
    let mut cfg = config(backend);
    cfg.output_pause_bytes = 64 * 1024;
    let buffers = cfg.buffers.clone();
    let server = start(cfg, vec![listener(0)], PLAIN);
    let clients: Vec<_> = (0..20)
        .map(|_| {
            let mut s = connect(server.addr());
            s.write_all(&b"big 100000\n".repeat(40)).unwrap();
            s
        })
        .collect();
    assert!(eventually(Duration::from_secs(2), || buffers.used_bytes() > 20 * 64 * 1024));
    for s in clients {
        close_with_reset(s);
    }
    assert!(
        eventually(Duration::from_secs(2), || server.stats.closed.load(Ordering::Relaxed) == 20),
        "reset connections not closed"
    );
    assert!(
        eventually(Duration::from_secs(2), || buffers.used_bytes() < 1 << 20),
        "{} bytes still held",
        buffers.used_bytes()
    );
    let mut other = connect(server.addr());
    assert_eq!(request_line(&mut other, b"ping\n"), b"ping\n");
}

/// Closes with SO_LINGER 0, so the peer sees a reset rather than a FIN.
fn close_with_reset(s: std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: a valid socket fd and a correctly sized linger struct.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
}

fn request_line(s: &mut std::net::TcpStream, line: &[u8]) -> Vec<u8> {
    request(s, line, line.len())
}

/// An idle connection is closed after the idle timeout; an active one is kept.
fn idle_timeout_closes(backend: Backend) {
    let mut cfg = config(backend);
    // Generous against a loaded CI machine: the active connection pings every 50 ms, so
    // only a stall of 550 ms would make it look idle.
    cfg.idle_timeout = rt::IdleTimeout::new(Some(Duration::from_millis(600)));
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut idle = connect(server.addr());
    let mut active = connect(server.addr());
    assert_eq!(request_line(&mut idle, b"x\n"), b"x\n");
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(1300) {
        assert_eq!(request_line(&mut active, b"y\n"), b"y\n");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut buf = [0; 16];
    assert_eq!(idle.read(&mut buf).unwrap(), 0, "idle connection still open");
    assert_eq!(request_line(&mut active, b"z\n"), b"z\n");
    assert_eq!(server.stats.closed.load(Ordering::Relaxed), 1);
}

/// A timeout set while the loop runs (none at start) closes a connection idle for longer;
/// lifted again, the next idle connection stays.
fn idle_timeout_set_while_running(backend: Backend) {
    let cfg = config(backend);
    let timeout = cfg.idle_timeout.clone();
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut first = connect(server.addr());
    assert_eq!(request_line(&mut first, b"x\n"), b"x\n");
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(request_line(&mut first, b"y\n"), b"y\n", "closed with no timeout");
    timeout.set(Some(Duration::from_millis(200)));
    assert!(eventually(Duration::from_secs(3), || server.stats.closed.load(Ordering::Relaxed) == 1));
    let mut buf = [0; 16];
    assert_eq!(first.read(&mut buf).unwrap(), 0, "idle connection still open");
    timeout.set(None);
    let mut second = connect(server.addr());
    assert_eq!(request_line(&mut second, b"z\n"), b"z\n");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(request_line(&mut second, b"w\n"), b"w\n", "closed after the timeout was lifted");
}

/// A refused connection receives the refusal line, then end of stream.
fn accept_refusal_sends_line(backend: Backend) {
    let options = Options { refuse: Some(b"SERVER_ERROR too many connections\r\n"), ..PLAIN };
    let server = start(config(backend), vec![listener(0)], options);
    for _ in 0..3 {
        let mut s = connect(server.addr());
        assert_eq!(read_to_end(&mut s), b"SERVER_ERROR too many connections\r\n");
    }
    assert_eq!(server.stats.refused.load(Ordering::Relaxed), 3);
    assert_eq!(server.stats.accepted.load(Ordering::Relaxed), 0);
}

/// `quit` gets its reply, input after it is ignored, then the connection closes.
fn close_after_flush(backend: Backend) {
    let server = serve(backend);
    let mut s = connect(server.addr());
    s.write_all(b"a\nquit\nb\n").unwrap();
    assert_eq!(read_to_end(&mut s), b"a\nbye\n");
    assert!(eventually(Duration::from_secs(1), || server.stats.closed.load(Ordering::Relaxed) == 1));
    // Same with a large reply queued before the quit.
    let mut s = connect(server.addr());
    s.write_all(b"big 3000000\nquit\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let mut want = big_reply(3_000_000);
    want.extend_from_slice(b"bye\n");
    let got = read_to_end(&mut s);
    assert!(got == want, "got {} bytes", got.len());
}

/// On shutdown the loop stops accepting, sends replies already queued (a reader that keeps
/// reading gets all of them), closes every connection and returns.
fn shutdown_flushes_replies_in_flight(backend: Backend) {
    let server = serve(backend);
    let addr = server.addr();
    let mut s = connect(addr);
    let mut idle = connect(addr);
    assert_eq!(request_line(&mut idle, b"hi\n"), b"hi\n");
    s.write_all(b"big 4000000\n").unwrap();
    let first = read_exact(&mut s, 1000);
    assert_eq!(first, big_reply(4_000_000)[..1000]);
    let stats = server.stats.clone();
    let stopper = std::thread::spawn(move || server.shutdown());
    let rest = read_to_end(&mut s);
    assert_eq!(1000 + rest.len(), 4_000_001, "reply cut short");
    assert_eq!(read_to_end(&mut idle), b"");
    stopper.join().unwrap().expect("run returned an error");
    assert_eq!(stats.closed.load(Ordering::Relaxed), 2);
    assert!(std::net::TcpStream::connect(addr).is_err(), "listener still open");
}

/// Each listener's tag reaches the handler.
fn listeners_carry_tags(backend: Backend) {
    let server = start(config(backend), vec![listener(7), listener(9)], PLAIN);
    let mut a = connect(server.addrs[0]);
    let mut b = connect(server.addrs[1]);
    assert_eq!(request(&mut a, b"tag\n", 2), b"7\n");
    assert_eq!(request(&mut b, b"tag\n", 2), b"9\n");
}

/// Two loops listen on one port (SO_REUSEPORT); the kernel spreads connections over both.
fn two_loops_share_a_port(backend: Backend) {
    let first = rt::listen("127.0.0.1:0".parse().unwrap(), 128).unwrap();
    let addr = first.local_addr().unwrap();
    let second = rt::listen(addr, 128).unwrap();
    let a = start(config(backend), vec![rt::Listener { socket: first.into(), tag: 1 }], PLAIN);
    let b = start(config(backend), vec![rt::Listener { socket: second.into(), tag: 2 }], PLAIN);
    let mut seen = [0; 3];
    for _ in 0..64 {
        let mut s = connect(addr);
        let reply = request(&mut s, b"tag\n", 2);
        seen[(reply[0] - b'0') as usize] += 1;
    }
    assert!(seen[1] > 0 && seen[2] > 0, "one loop got nothing: {seen:?}");
    drop((a, b));
}

/// A peer that asks for a large reply and resets the connection mid-send is closed cleanly
/// and the loop keeps serving.
fn peer_reset_during_large_send(backend: Backend) {
    let server = serve(backend);
    for _ in 0..5 {
        let mut s = connect(server.addr());
        s.write_all(b"big 8000000\n").unwrap();
        let _ = read_exact(&mut s, 10);
        // Unread data in the receive queue makes close send RST.
        drop(s);
    }
    assert!(eventually(Duration::from_secs(3), || server.stats.closed.load(Ordering::Relaxed) == 5));
    let mut s = connect(server.addr());
    assert_eq!(request_line(&mut s, b"still\n"), b"still\n");
}

/// Requests sent while a large reply is still being sent are answered after it, in order.
fn input_while_send_in_flight_keeps_order(backend: Backend) {
    let server = serve(backend);
    let mut s = connect(server.addr());
    s.write_all(b"big 2000000\n").unwrap();
    std::thread::sleep(Duration::from_millis(50));
    for i in 0..10 {
        s.write_all(format!("n{i}\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    s.write_all(b"big 100000\nend\n").unwrap();
    let mut want = big_reply(2_000_000);
    for i in 0..10 {
        want.extend_from_slice(format!("n{i}\n").as_bytes());
    }
    want.extend_from_slice(&big_reply(100_000));
    want.extend_from_slice(b"end\n");
    let got = read_exact(&mut s, want.len());
    assert!(got == want, "reply out of order");
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(read_to_end(&mut s), b"");
}

/// With 2 provided buffers of 64 bytes and 50 clients sending at once, receives run out of
/// buffers (ENOBUFS) and are re-armed; every client still gets all its answers.
fn tiny_receive_ring_rearms(backend: Backend) {
    let mut cfg = config(backend);
    cfg.recv_buffers = 2;
    cfg.recv_buffer_bytes = 64;
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut clients: Vec<_> = (0..50).map(|_| connect(server.addr())).collect();
    let input: Vec<u8> = (0..100).flat_map(|i| format!("request {i}\n").into_bytes()).collect();
    for c in &mut clients {
        c.write_all(&input).unwrap();
    }
    for c in &mut clients {
        assert_eq!(read_exact(c, input.len()), input);
    }
}

/// The same ring with clients that half-close right after their requests: a connection
/// left waiting for a buffer (io_uring re-arms it only as buffers come back) still gets
/// every answer, then sees its close.
fn tiny_receive_ring_half_close(backend: Backend) {
    let mut cfg = config(backend);
    cfg.recv_buffers = 2;
    cfg.recv_buffer_bytes = 64;
    let server = start(cfg, vec![listener(0)], PLAIN);
    for round in 0..3 {
        let mut clients: Vec<_> = (0..100).map(|_| connect(server.addr())).collect();
        let input: Vec<u8> =
            (0..20).flat_map(|i| format!("round {round} request {i}\n").into_bytes()).collect();
        for c in &mut clients {
            c.write_all(&input).unwrap();
            c.shutdown(Shutdown::Write).unwrap();
        }
        for c in &mut clients {
            assert_eq!(read_to_end(c), input);
        }
    }
}

/// Busy polling before sleeping changes nothing visible: requests are answered, ticks run.
fn busy_poll_serves(backend: Backend) {
    let mut cfg = config(backend);
    cfg.busy_poll_us = 200;
    cfg.idle_timeout = rt::IdleTimeout::new(Some(Duration::from_millis(800)));
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut s = connect(server.addr());
    for i in 0..100 {
        let line = format!("{i}\n");
        assert_eq!(request_line(&mut s, line.as_bytes()), line.as_bytes());
    }
    // The idle timeout (checked at tick) still fires while the loop spins.
    let mut buf = [0; 4];
    assert_eq!(s.read(&mut buf).unwrap(), 0);
}

/// A send stuck on a full socket buffer must not hold back other connections' replies
/// until the next tick (the tick here is 1 s; 50 round trips must take far less).
fn blocked_send_does_not_delay_others(backend: Backend) {
    let mut cfg = config(backend);
    cfg.tick_interval = Duration::from_secs(1);
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut stuck = connect(server.addr());
    stuck.write_all(b"big 20000000\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let mut s = connect(server.addr());
    let start = Instant::now();
    for i in 0..50 {
        let line = format!("{i}\n");
        assert_eq!(request_line(&mut s, line.as_bytes()), line.as_bytes());
        // Keep the stuck connection's send in flight, woken now and then by a little reading.
        if i % 10 == 0 {
            let _ = read_exact(&mut stuck, 100);
        }
    }
    // The failure this guards against is each reply waiting for the stuck send or the 1 s
    // tick (50 s in all); the bound is far from both that and a loaded CI machine's pace.
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    drop(stuck);
}

/// A reply past the pause threshold pauses its connection, and the send's completion resumes
/// it: the rest of the batch must not wait for the next tick (the tick here is 2 s; with
/// io_uring, a get of a value over 32 KiB once waited for it, 100 ms at the default tick).
fn reply_past_the_pause_threshold_does_not_wait_for_the_tick(backend: Backend) {
    let mut cfg = config(backend);
    cfg.tick_interval = Duration::from_secs(2);
    cfg.output_pause_bytes = 32 * 1024;
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut s = connect(server.addr());
    let want: Vec<u8> = big_reply(70_000).into_iter().chain(b"ping\n".iter().copied()).collect();
    let start = Instant::now();
    for _ in 0..20 {
        s.write_all(b"big 70000\nping\n").unwrap();
        assert!(read_exact(&mut s, want.len()) == want, "replies differ");
    }
    // Waiting for the tick would take 20 of them (40 s); the bound is far from that and from
    // a loaded CI machine's pace.
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
}

/// A client that never reads cannot hold up shutdown: after the grace period its send is
/// cancelled, the handler is told, and `run` returns.
fn shutdown_with_stuck_reader_is_bounded(backend: Backend) {
    let mut cfg = config(backend);
    cfg.shutdown_grace = Duration::from_millis(300);
    let server = start(cfg, vec![listener(0)], PLAIN);
    let mut stuck = connect(server.addr());
    stuck.write_all(b"big 20000000\n").unwrap();
    let _ = read_exact(&mut stuck, 10);
    let stats = server.stats.clone();
    let start = Instant::now();
    server.shutdown().expect("run returned an error");
    assert!(start.elapsed() < Duration::from_secs(2), "shutdown took {:?}", start.elapsed());
    assert_eq!(stats.closed.load(Ordering::Relaxed), 1);
    drop(stuck);
}

/// On this machine (Linux 6.18, io_uring enabled) Auto picks io_uring; where io_uring is
/// refused, Auto picks epoll and says why, and Uring fails with the same reason.
#[test]
fn auto_chooses_uring() {
    let needs = rt::UringNeeds { loops: 4, ..Default::default() };
    let backend = |choice| rt::choose_backend(choice, needs).map(|c| c.backend);
    assert_eq!(backend(IoChoice::Epoll), Ok(Backend::Epoll));
    if let Err(reason) = rt::probe_uring_for(needs) {
        eprintln!("skipping auto_chooses_uring: io_uring unavailable: {reason}");
        let chosen = rt::choose_backend(IoChoice::Auto, needs).unwrap();
        assert_eq!(chosen.backend, Backend::Epoll);
        assert_eq!(chosen.fallback.as_deref(), Some(reason.as_str()));
        assert_eq!(rt::choose_backend(IoChoice::Uring, needs), Err(reason));
        return;
    }
    let chosen = rt::choose_backend(IoChoice::Auto, needs).unwrap();
    assert_eq!(chosen, rt::Chosen { backend: Backend::Uring, fallback: None });
    assert_eq!(backend(IoChoice::Uring), Ok(Backend::Uring));
}

/// `listen` works for IPv6 too (skipped when the host has no ::1).
#[test]
fn listen_ipv6() {
    match rt::listen("[::1]:0".parse().unwrap(), 16) {
        Ok(l) => {
            let addr = l.local_addr().unwrap();
            assert!(addr.is_ipv6() && addr.port() != 0);
            let again = rt::listen(addr, 16).expect("SO_REUSEPORT allows a second listener");
            drop(again);
        }
        Err(e) => eprintln!("skipping listen_ipv6: {e}"),
    }
}

/// The thread is pinned where asked.
#[test]
fn pin_to_cpu_zero() {
    std::thread::spawn(|| rt::pin_current_thread(0).unwrap()).join().unwrap();
    assert!(rt::pin_current_thread(1 << 20).is_err());
}
