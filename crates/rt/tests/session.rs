//! The loop's security-session seam (`rt::Session`, what TLS plugs into) on both back ends,
//! with a byte-wise XOR stand-in for TLS (`common::Xor`): handshake records before any reply,
//! pipelined and large replies sealed, backpressure on a slow reader, a protocol error
//! closing only its own connection, the peer's closing alert as its EOF, and the close
//! record after `quit`. A plain listener beside it stays plain.

mod common;

use std::{
    io::{Read, Write},
    net::TcpStream,
    sync::atomic::Ordering,
    time::Duration,
};

use common::*;
use rt::Backend;

both_backends!(
    sealed_batch_leaves_in_one_send,
    sealed_pipeline_and_plain_listener_side_by_side,
    sealed_large_reply_to_slow_reader,
    sealed_protocol_error_closes_only_that_connection,
    sealed_peer_close_is_eof,
    sealed_quit_sends_close_record,
);

const SEALED_TAG: u32 = 7;

fn serve_sealed(backend: Backend) -> Server {
    let options = Options { session_tag: Some(SEALED_TAG), ..PLAIN };
    start(config(backend), vec![listener(SEALED_TAG), listener(0)], options)
}

/// Connects to the sealed listener and reads the greeting (the "handshake").
fn connect_sealed(server: &Server, first: &[u8]) -> TcpStream {
    let mut s = connect(server.addrs[0]);
    s.write_all(&xor(first)).unwrap();
    assert_eq!(xor(&read_exact(&mut s, GREETING.len())), GREETING);
    s
}

/// The replies to a pipeline that arrived in one piece are sealed per handler call and
/// still leave in one send, as plain replies do; the greeting ("handshake") and the first
/// reply, made in one turn, share one too.
fn sealed_batch_leaves_in_one_send(backend: Backend) {
    let server = serve_sealed(backend);
    let mut s = connect_sealed(&server, b"first\n");
    assert_eq!(xor(&read_exact(&mut s, 6)), b"first\n");
    let sends = || server.stats.sends.load(Ordering::Relaxed);
    assert!(eventually(Duration::from_secs(2), || sends() == 1), "{} sends", sends());
    let batch: Vec<u8> = (0..50).flat_map(|i| format!("request {i}\n").into_bytes()).collect();
    s.write_all(&xor(&batch)).unwrap();
    assert_eq!(xor(&read_exact(&mut s, batch.len())), batch);
    assert!(eventually(Duration::from_secs(2), || sends() == 2), "{} sends", sends());
}

fn sealed_pipeline_and_plain_listener_side_by_side(backend: Backend) {
    let server = serve_sealed(backend);
    let batch: Vec<u8> = (0..200).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    let mut s = connect_sealed(&server, &batch);
    assert_eq!(xor(&read_exact(&mut s, batch.len())), batch);
    s.write_all(&xor(b"tag\n")).unwrap();
    assert_eq!(xor(&read_exact(&mut s, 2)), b"7\n");
    let mut plain = connect(server.addrs[1]);
    assert_eq!(request(&mut plain, b"tag\n", 2), b"0\n");
}

/// Several megabytes sealed in chunks (the handler yields at 64 KiB of output) arrive
/// whole and in order to a reader that starts late: pauses and partial sends carry
/// ciphertext as they carry plain output.
fn sealed_large_reply_to_slow_reader(backend: Backend) {
    let server = serve_sealed(backend);
    let n = 3_000_000;
    let mut s = connect_sealed(&server, format!("big {n}\nafter\n").as_bytes());
    std::thread::sleep(Duration::from_millis(100));
    let mut want = big_reply(n);
    want.extend_from_slice(b"after\n");
    let mut got = Vec::with_capacity(want.len());
    let mut chunk = vec![0; 128 * 1024];
    while got.len() < want.len() {
        let k = s.read(&mut chunk).unwrap();
        assert!(k > 0, "closed early after {} bytes", got.len());
        got.extend_from_slice(&chunk[..k]);
    }
    assert!(xor(&got) == want, "reply differs");
}

/// The session reports a protocol error: its alert is sent, that connection closes, and
/// another sealed connection and a plain one carry on.
fn sealed_protocol_error_closes_only_that_connection(backend: Backend) {
    let server = serve_sealed(backend);
    let mut other = connect_sealed(&server, b"x\n");
    assert_eq!(xor(&read_exact(&mut other, 2)), b"x\n");
    let mut bad = connect_sealed(&server, b"ok\n");
    assert_eq!(xor(&read_exact(&mut bad, 3)), b"ok\n");
    bad.write_all(&xor(b"half a line\xffmore\n")).unwrap();
    assert_eq!(xor(&read_to_end(&mut bad)), ALERT, "the alert, then the close");
    other.write_all(&xor(b"still here\n")).unwrap();
    assert_eq!(xor(&read_exact(&mut other, 11)), b"still here\n");
    let mut plain = connect(server.addrs[1]);
    assert_eq!(request(&mut plain, b"plain\n", 6), b"plain\n");
}

/// The peer's closing alert after a pipeline: every complete request is answered, then
/// the loop's own closing alert, then the connection closes (half-close rules), though the
/// TCP connection was not shut down.
fn sealed_peer_close_is_eof(backend: Backend) {
    let server = serve_sealed(backend);
    let mut s = connect_sealed(&server, b"a\nb\n");
    s.write_all(&xor(b"c\n\x04")).unwrap();
    let mut want = b"a\nb\nc\n".to_vec();
    want.extend_from_slice(CLOSE_RECORD);
    assert_eq!(xor(&read_to_end(&mut s)), want);
}

fn sealed_quit_sends_close_record(backend: Backend) {
    let server = serve_sealed(backend);
    let mut s = connect_sealed(&server, b"quit\n");
    let mut want = b"bye\n".to_vec();
    want.extend_from_slice(CLOSE_RECORD);
    assert_eq!(xor(&read_to_end(&mut s)), want);
}
