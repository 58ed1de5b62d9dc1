//! Lent parts of a reply ([`crate::Handler::lent`]): bytes the handler did not copy into
//! `out` (large values, sent from the memory they live in), placed at offsets of `out`.
//!
//! ```text
//!   out:   [earlier unsent | VALUE k 0 10000\r\n | \r\nVALUE ...\r\n | \r\nEND\r\n]
//!   lent:                                       ^ at: 10000 bytes    ^ at: 10000 bytes
//!   sent:  one sendmsg(MSG_DONTWAIT) of the pieces in order, in the same turn
//!   kept:  what the kernel did not take, copied into a buffer that replaces `out`
//! ```
//!
//! The handler's memory is valid only while `Handler::lent` runs, so everything happens
//! within it: a send now if the connection may send now (nothing in flight, socket not
//! known full, no TLS), then the copy of the rest. Either way the peer gets the same bytes
//! in the same order as if they had been copied.
//!
//! With a zero-copy threshold (`LoopConfig::zerocopy_min_bytes`), the send's first bytes
//! (up to the peer's window, on a socket with nothing queued) go with `MSG_ZEROCOPY`
//! instead, and the handler's hold on the parts outlives this call (`zerocopy.rs`).

use std::{io::IoSlice, os::fd::RawFd, time::Instant};

use crate::{
    buf::{OutBuf, OutPool},
    sys,
    zerocopy::{Hold, ZeroCopy},
};

/// The most pieces one send takes (the kernel's `UIO_MAXIOV`); the rest is copied.
const IOV_MAX: usize = 1024;

/// Lent parts of fewer bytes than this in one handler call are copied into `out` and leave
/// with the turn's ordinary send: a send of their own in the middle of the turn cost more
/// than the copy (single gets of 10 KB values, io_uring: 103k requests per server
/// CPU-second against 127k copied), while a multiget's chunk (64 KiB) gains from it.
pub(crate) const SEND_BYTES_MIN: usize = 32 << 10;

/// A connection's zero-copy sends ([`crate::zerocopy`]), for a call of [`place`].
pub(crate) struct ZeroCopySend<'z> {
    pub zc: &'z mut ZeroCopy,
    /// Lent bytes of one call from which its send is zero-copy.
    pub min_bytes: usize,
    /// Takes the handler's hold on the parts ([`crate::Handler::hold_lent`]).
    pub hold: fn() -> Option<Hold>,
}

impl ZeroCopySend<'_> {
    fn wants(&self, lent: usize) -> bool {
        self.min_bytes > 0 && lent >= self.min_bytes && self.zc.usable()
    }
}

/// Places `parts` (offsets into `out`'s bytes, ascending, none before its unsent front)
/// into `out`'s stream: sends them with `out`'s unsent bytes through `fd` when given and
/// they come to [`SEND_BYTES_MIN`] or more (or to the zero-copy threshold, when `zc` is
/// given: that send is zero-copy), and copies whatever was not sent into `out`. Returns
/// the bytes sent.
pub(crate) fn place(
    out: &mut OutBuf,
    parts: &[(usize, &[u8])],
    fd: Option<RawFd>,
    pool: &mut OutPool,
    zc: Option<ZeroCopySend<'_>>,
) -> usize {
    let front = out.bytes().len() - out.unsent_len();
    let mut last = front;
    for &(at, _) in parts {
        assert!(last <= at && at <= out.bytes().len(), "lent part out of order");
        last = at;
    }
    let lent: usize = parts.iter().map(|(_, bytes)| bytes.len()).sum();
    let zc = zc.filter(|zc| zc.wants(lent));
    let sent = match fd {
        Some(fd) if lent >= SEND_BYTES_MIN || zc.is_some() => {
            send(fd, out.bytes(), front, parts, zc)
        }
        _ => 0,
    };
    let total = out.unsent_len() + lent;
    if sent == total {
        out.clear();
    } else if sent == 0 {
        insert(out, parts);
    } else {
        let mut rest = pool.take();
        rest.reserve(total - sent);
        let mut skip = sent;
        for_each_piece(out.bytes(), front, parts, |piece| {
            let from = skip.min(piece.len());
            skip -= from;
            rest.extend_from_slice(&piece[from..]);
            true
        });
        pool.give(out.take_vec());
        *out = OutBuf::from(rest);
    }
    sent
}

/// Copies the parts into `out` at their offsets: the bytes after the first offset (lines
/// and trailers, small) are set aside and appended again between the parts.
fn insert(out: &mut OutBuf, parts: &[(usize, &[u8])]) {
    let Some(&(first, _)) = parts.first() else { return };
    let buf = out.buf_mut();
    let after = buf[first..].to_vec();
    let lent: usize = parts.iter().map(|(_, bytes)| bytes.len()).sum();
    buf.truncate(first);
    buf.reserve(after.len() + lent);
    let mut from = first;
    for &(at, part) in parts {
        buf.extend_from_slice(&after[from - first..at - first]);
        buf.extend_from_slice(part);
        from = at;
    }
    buf.extend_from_slice(&after[from - first..]);
}

/// One vectored send of the pieces without waiting, zero-copy when `zc` is given and the
/// socket still takes it; 0 when the socket takes nothing or fails (the ordinary send that
/// follows finds the error).
fn send<'a>(
    fd: RawFd,
    bytes: &'a [u8],
    front: usize,
    parts: &[(usize, &'a [u8])],
    zc: Option<ZeroCopySend<'_>>,
) -> usize {
    let mut sent = 0;
    if let Some(zc) = zc {
        match zero_copy(fd, bytes, front, parts, zc) {
            Some(0) => return 0,
            Some(taken) => sent = taken,
            None => {}
        }
    }
    let rest = sys::sendmsg_nowait(fd, &pieces(bytes, front, parts, sent, usize::MAX));
    sent + rest.unwrap_or(0)
}

/// The zero-copy send of the stream's first bytes, as many as the peer's window takes at
/// once, and only on a socket with nothing queued: so the kernel puts them on the wire now
/// and is done with them one round trip later (a send queued behind a slow reader would
/// keep its pin for as long as the reader dawdles). None: none sent zero-copy (the caller
/// sends plainly); else the bytes taken.
fn zero_copy(
    fd: RawFd,
    bytes: &[u8],
    front: usize,
    parts: &[(usize, &[u8])],
    zc: ZeroCopySend<'_>,
) -> Option<usize> {
    let room = sys::tcp_send_room(fd);
    if room < zc.min_bytes {
        return None;
    }
    let hold = zc.zc.begin(fd, zc.hold)?;
    // The kernel reads every piece in place until the notification: `out`'s bytes (reply
    // lines) go from a copy kept with the hold, as `out` is reused at once.
    let lines = bytes.to_vec();
    let result = sys::sendmsg_zerocopy(fd, &pieces(&lines, front, parts, 0, room));
    zc.zc.end(result, Instant::now(), hold, lines)
}

/// The iovecs of one send: the stream's pieces in order, from byte `skip` of it, up to
/// `limit` bytes and at most [`IOV_MAX`] pieces.
fn pieces<'a>(
    bytes: &'a [u8],
    front: usize,
    parts: &[(usize, &'a [u8])],
    mut skip: usize,
    mut limit: usize,
) -> Vec<IoSlice<'a>> {
    let mut iov: Vec<IoSlice<'a>> = Vec::with_capacity((2 * parts.len() + 1).min(IOV_MAX));
    for_each_piece(bytes, front, parts, |piece| {
        let from = skip.min(piece.len());
        skip -= from;
        let piece = &piece[from..];
        let piece = &piece[..piece.len().min(limit)];
        limit -= piece.len();
        if !piece.is_empty() {
            iov.push(IoSlice::new(piece));
        }
        limit > 0 && iov.len() < IOV_MAX
    });
    iov
}

/// Calls `f` on each non-empty piece of the stream in order (`out`'s bytes from `front`,
/// with the parts at their offsets) until it returns false.
fn for_each_piece<'a>(
    bytes: &'a [u8],
    front: usize,
    parts: &[(usize, &'a [u8])],
    mut f: impl FnMut(&'a [u8]) -> bool,
) {
    let mut from = front;
    for &(at, part) in parts {
        for piece in [&bytes[from..at], part] {
            if !piece.is_empty() && !f(piece) {
                return;
            }
        }
        from = at;
    }
    if from < bytes.len() {
        f(&bytes[from..]);
    }
}

#[cfg(test)]
mod tests {
    use std::{io::Read, os::fd::AsRawFd};

    use super::*;

    fn stream(bytes: &[u8], parts: &[(usize, &[u8])]) -> Vec<u8> {
        let mut all = Vec::new();
        for_each_piece(bytes, 0, parts, |piece| {
            all.extend_from_slice(piece);
            true
        });
        all
    }

    #[test]
    fn without_a_socket_the_parts_are_copied_in_place() {
        let mut pool = OutPool::new();
        let mut out = OutBuf::from(b"A:\r\nB:\r\nEND\r\n".to_vec());
        let parts: [(usize, &[u8]); 3] = [(2, b"aaa"), (6, b"bb"), (6, b"c")];
        assert_eq!(place(&mut out, &parts, None, &mut pool, None), 0);
        assert_eq!(out.unsent(), b"A:aaa\r\nB:bbc\r\nEND\r\n");
    }

    /// A small loan is copied and left for the turn's ordinary send.
    #[test]
    fn small_parts_are_copied_even_with_a_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut pool = OutPool::new();
        let mut out = OutBuf::from(b"V\r\n\r\nEND\r\n".to_vec());
        let value = vec![b'x'; 5000];
        let parts: [(usize, &[u8]); 1] = [(3, &value)];
        let want = stream(out.bytes(), &parts);
        assert_eq!(place(&mut out, &parts, Some(client.as_raw_fd()), &mut pool, None), 0);
        assert_eq!(out.unsent(), &want[..]);
    }

    /// A zero-copy send: the peer gets the stream whole although `out` is rewritten at
    /// once (its lines left from a copy kept with the hold), and the hold is kept.
    #[test]
    fn a_zero_copy_send_keeps_its_lines_and_its_hold() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        let big: Vec<u8> = (0..40_000).map(|i| i as u8).collect();
        let mut pool = OutPool::new();
        let mut out = OutBuf::from(b"VALUE a\r\n\r\nEND\r\n".to_vec());
        let parts: [(usize, &[u8]); 1] = [(9, &big)];
        let want = stream(out.bytes(), &parts);
        let mut zc = ZeroCopy::new();
        let send = ZeroCopySend { zc: &mut zc, min_bytes: 16 << 10, hold: || Some(Box::new(7u8)) };
        let sent = place(&mut out, &parts, Some(client.as_raw_fd()), &mut pool, Some(send));
        assert_eq!(sent, want.len());
        assert!(zc.held_bytes() > 0, "nothing held");
        out.buf_mut().clear();
        out.buf_mut().extend_from_slice(&[b'!'; 64]);
        let mut got = vec![0; want.len()];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(got, want);
    }

    /// A peer that reads nothing: the kernel takes what its buffers hold, the rest is
    /// copied, and the two together are the stream.
    #[test]
    fn a_full_socket_leaves_the_rest_copied() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        let big: Vec<u8> = (0..8 << 20).map(|i| i as u8).collect();
        let mut pool = OutPool::new();
        let mut out = OutBuf::from(b"head\r\ntail".to_vec());
        let parts: [(usize, &[u8]); 2] = [(6, &big), (10, b"!")];
        assert!(big.len() >= SEND_BYTES_MIN);
        let want = stream(out.bytes(), &parts);
        let sent = place(&mut out, &parts, Some(client.as_raw_fd()), &mut pool, None);
        assert!(sent > 0 && sent < want.len(), "sent {sent}");
        assert_eq!(out.unsent(), &want[sent..]);
        drop(client);
        let mut got = Vec::new();
        peer.read_to_end(&mut got).unwrap();
        assert_eq!(got, &want[..sent]);
    }
}
