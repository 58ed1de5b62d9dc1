//! Per-connection buffers, shared by the server loop and by clients that drive their own
//! sockets (the load generator): the output queue with its partial-write offset, the
//! unconsumed tail of input, and the list of connections with output to send this turn.
//!
//! ```text
//!   OutBuf:     [sent ........ | unsent .........]   append at the back, write from `sent`;
//!                                                     a partial write leaves the rest
//!   InputTail:  unconsumed bytes of earlier input     empty (no allocation) once consumed
//!   DirtyList:  [key, key, ...]                       each connection listed once per turn
//! ```
//!
//! The loop's output pool ([`OutPool`]) lives here too: output buffers are taken from it when
//! a handler needs to write and given back once their bytes are sent.

use std::{
    io::{self, Write},
    mem,
};

/// Output queued for one socket: bytes are appended at the back and written from the front;
/// a partial write leaves the rest for a later write, ahead of anything appended meanwhile.
#[derive(Debug, Default)]
pub struct OutBuf {
    buf: Vec<u8>,
    sent: usize,
}

impl From<Vec<u8>> for OutBuf {
    fn from(buf: Vec<u8>) -> Self {
        OutBuf { buf, sent: 0 }
    }
}

impl OutBuf {
    #[inline]
    pub const fn new() -> Self {
        OutBuf { buf: Vec::new(), sent: 0 }
    }

    pub fn with_capacity(capacity: usize) -> Self {
        OutBuf { buf: Vec::with_capacity(capacity), sent: 0 }
    }

    /// The buffer to append to. Its front may hold bytes already written; append only.
    #[inline]
    pub fn buf_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Every byte queued since the buffer was last emptied, written ones included.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Bytes queued and not yet written.
    #[inline]
    pub fn unsent(&self) -> &[u8] {
        &self.buf[self.sent..]
    }

    #[inline]
    pub fn unsent_len(&self) -> usize {
        self.buf.len() - self.sent
    }

    #[inline]
    pub fn has_unsent(&self) -> bool {
        self.sent < self.buf.len()
    }

    /// Whether the buffer holds no bytes at all, written or not.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Whether every queued byte was written (also true when nothing is queued).
    #[inline]
    pub fn is_drained(&self) -> bool {
        self.sent == self.buf.len()
    }

    #[inline]
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Records that the front `bytes` of the unsent part were written.
    #[inline]
    pub fn advance(&mut self, bytes: usize) {
        assert!(bytes <= self.unsent_len(), "wrote more than was queued");
        self.sent += bytes;
    }

    /// Drops the written front, moving the unsent rest to the start, so appending reuses
    /// the room a partial write freed instead of growing the allocation: under
    /// backpressure a connection's buffer stays near the pause threshold, not twice it.
    /// Only for a buffer no write in flight points into (epoll writes in place at once).
    pub fn compact(&mut self) {
        if self.sent > 0 {
            self.buf.drain(..self.sent);
            self.sent = 0;
        }
    }

    /// Forgets every byte, keeping the allocation.
    #[inline]
    pub fn clear(&mut self) {
        self.buf.clear();
        self.sent = 0;
    }

    /// Takes the vector out (to pool or free it), leaving an empty buffer with no allocation.
    #[inline]
    pub fn take_vec(&mut self) -> Vec<u8> {
        self.sent = 0;
        mem::take(&mut self.buf)
    }

    /// Writes the unsent bytes to a non-blocking writer until it would block or they are
    /// all written; returns the bytes written. A drained buffer is cleared (allocation kept).
    pub fn write_to(&mut self, w: &mut impl Write) -> io::Result<usize> {
        let mut written = 0;
        while self.has_unsent() {
            match w.write(self.unsent()) {
                Ok(n) => {
                    self.advance(n);
                    written += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        if self.is_drained() {
            self.clear();
        }
        Ok(written)
    }
}

/// The unconsumed tail of a connection's input: an incomplete request, or requests the
/// consumer left for a later turn. An idle connection holds no allocation here.
#[derive(Debug, Default)]
pub struct InputTail(Vec<u8>);

impl InputTail {
    #[inline]
    pub const fn new() -> Self {
        InputTail(Vec::new())
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    #[inline]
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }

    /// The kept bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// Keeps `data` behind the tail without offering it (a paused connection).
    #[inline]
    pub fn keep(&mut self, data: &[u8]) {
        self.0.extend_from_slice(data);
    }

    /// Drops the tail and its allocation.
    #[inline]
    pub fn free(&mut self) {
        self.0 = Vec::new();
    }

    /// Offers the tail followed by `data` to `consume`, which returns how many bytes it used
    /// from the start, and a value handed back to the caller; the rest is kept for the next
    /// call. With no tail, `data` is offered in place and only the rest is copied. A tail
    /// consumed to the end is freed, not kept: an idle connection must not hold a buffer.
    #[inline]
    pub fn offer<R>(&mut self, data: &[u8], consume: impl FnOnce(&[u8]) -> (usize, R)) -> R {
        if self.0.is_empty() {
            let (used, result) = consume(data);
            assert!(used <= data.len(), "consumed more than was offered");
            self.0.extend_from_slice(&data[used..]);
            return result;
        }
        self.0.extend_from_slice(data);
        let (used, result) = consume(&self.0);
        assert!(used <= self.0.len(), "consumed more than was offered");
        self.0.drain(..used);
        if self.0.is_empty() {
            self.free();
        }
        result
    }
}

/// Connections with output to send, each listed once, in the order they were marked. The
/// "listed" bit lives with each connection, so marking costs no search.
///
/// A flush walks one pass: [`DirtyList::begin_pass`] hands out the keys listed so far;
/// keys marked during the pass wait for the next one, as do keys the pass
/// [`DirtyList::keep`]s (their bit stays set); [`DirtyList::end_pass`] gives the vector back.
#[derive(Debug)]
pub struct DirtyList<K> {
    listed: Vec<K>,
    kept: Vec<K>,
}

impl<K: Copy> Default for DirtyList<K> {
    fn default() -> Self {
        DirtyList::new()
    }
}

impl<K: Copy> DirtyList<K> {
    #[inline]
    pub const fn new() -> Self {
        DirtyList { listed: Vec::new(), kept: Vec::new() }
    }

    pub fn with_capacity(capacity: usize) -> Self {
        DirtyList { listed: Vec::with_capacity(capacity), kept: Vec::new() }
    }

    /// Lists `key` unless its bit says it already is, and sets the bit.
    #[inline]
    pub fn mark(&mut self, key: K, listed: &mut bool) {
        if !*listed {
            *listed = true;
            self.listed.push(key);
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty() && self.kept.is_empty()
    }

    /// Starts a pass over the keys listed so far. The caller clears each key's bit as it
    /// handles it (or keeps the key), then hands the vector to [`DirtyList::end_pass`].
    #[inline]
    pub fn begin_pass(&mut self) -> Vec<K> {
        mem::take(&mut self.listed)
    }

    /// Lists a key of the current pass again for the next one (its bit stays set).
    #[inline]
    pub fn keep(&mut self, key: K) {
        self.kept.push(key);
    }

    /// Ends a pass: reuses its vector, and lists the kept keys after any marked meanwhile.
    #[inline]
    pub fn end_pass(&mut self, mut pass: Vec<K>) {
        pass.clear();
        if self.listed.is_empty() {
            mem::swap(&mut self.listed, &mut pass);
        }
        if !self.kept.is_empty() {
            self.listed.append(&mut self.kept);
        }
    }
}

/// Output buffers bigger than this are pooled only as one of the few large ones below: a
/// buffer that carried a large value stays resident while pooled (measured: 1 MiB buffers
/// pooled up to 8 MiB per loop made the peak RSS under 100-500 KB values 4-6 MiB above -m),
/// while reallocating one costs little next to copying the value into it. It holds a
/// multiget's reply chunk (the server's is 64 KiB) plus a value of up to 64 KiB: at 64 KiB
/// such buffers were freed after every chunk and faulted in again (13% of the server's CPU
/// on 48-key gets of 10 KB values).
const POOLED_CAPACITY_MAX: usize = 128 << 10;
/// A loop also keeps up to [`POOLED_LARGE_COUNT_MAX`] buffers of up to this capacity: a reply
/// made in one piece (a Redis MGET of 48 values of 10 KB is 480 KB) is past glibc's mmap
/// threshold (`tune_allocator`), so without them every such request mapped, faulted in and
/// unmapped its buffer (17% of the server's CPU).
const POOLED_LARGE_CAPACITY_MAX: usize = 1 << 20;
/// As many as one turn sends at once: with 50 connections each asking for 480 KB, 2 or 8
/// pooled buffers left most replies faulting theirs in (page faults 13% and 11% of the
/// server's CPU), 16 left 4%. They stay resident only while used: a tick that did not take
/// them frees them, and none is kept while the process's buffer budget is exceeded.
const POOLED_LARGE_COUNT_MAX: usize = 16;
/// At most this many bytes of capacity sit in the pool in buffers up to
/// [`POOLED_CAPACITY_MAX`] (they count against the process-wide buffer budget, so the pool
/// keeps little); the large ones come on top.
pub const POOLED_BYTES_MAX: usize = 1 << 20;
/// At most this many buffers sit in the pool: enough for every connection that sends in one
/// turn under load, while a burst (10,000 connections answered at once, each send in flight
/// with io_uring) does not leave 10,000 idle buffers behind.
const POOLED_COUNT_MAX: usize = 1024;
/// Capacity of a fresh output buffer.
const OUT_CAPACITY_INITIAL: usize = 1024;

/// Output buffers shared by all connections of a loop: taken when a handler needs to write,
/// given back once their bytes are sent.
pub(crate) struct OutPool {
    free: Vec<Vec<u8>>,
    bytes: usize,
    /// Pooled buffers over [`POOLED_CAPACITY_MAX`], and their capacity.
    large: usize,
    large_bytes: usize,
    /// Whether large buffers may be kept: not while the buffer budget is exceeded.
    large_allowed: bool,
    /// The fewest buffers the pool held since the last [`OutPool::trim`]: that many were
    /// not needed for a whole tick.
    idle_count: usize,
}

impl OutPool {
    pub fn new() -> Self {
        OutPool {
            free: Vec::new(),
            bytes: 0,
            large: 0,
            large_bytes: 0,
            large_allowed: true,
            idle_count: 0,
        }
    }

    /// Frees the buffers nobody needed since the last call (run at each tick), so a burst's
    /// buffers do not stay resident once it is over.
    pub fn trim(&mut self) {
        let idle = self.idle_count.min(self.free.len());
        let mut free = mem::take(&mut self.free);
        for buf in free.drain(..idle) {
            self.forget(buf.capacity());
        }
        // An emptied pool gives its list's allocation back too.
        self.free = if free.is_empty() { Vec::new() } else { free };
        self.idle_count = self.free.len();
    }

    /// Capacity held by pooled buffers.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn take(&mut self) -> Vec<u8> {
        match self.free.pop() {
            Some(buf) => {
                self.forget(buf.capacity());
                self.idle_count = self.idle_count.min(self.free.len());
                buf
            }
            None => Vec::with_capacity(OUT_CAPACITY_INITIAL),
        }
    }

    /// Gives `buf` back; a big buffer past the few large ones kept, or one that would push
    /// the pool over its byte budget, is freed instead. The last one given is the next one
    /// taken.
    pub fn give(&mut self, mut buf: Vec<u8>) {
        let capacity = buf.capacity();
        let large = capacity > POOLED_CAPACITY_MAX;
        let kept = if large {
            self.large_allowed
                && capacity <= POOLED_LARGE_CAPACITY_MAX
                && self.large < POOLED_LARGE_COUNT_MAX
        } else {
            capacity != 0 && self.bytes - self.large_bytes + capacity <= POOLED_BYTES_MAX
        };
        if !kept || self.free.len() >= POOLED_COUNT_MAX {
            return;
        }
        buf.clear();
        self.bytes += capacity;
        if large {
            self.large += 1;
            self.large_bytes += capacity;
        }
        self.free.push(buf);
    }

    /// Lets large buffers be kept, or not (run at each tick, from the buffer budget).
    pub fn allow_large(&mut self, allowed: bool) {
        self.large_allowed = allowed;
    }

    /// Counts a buffer of `capacity` out of the pool.
    fn forget(&mut self, capacity: usize) {
        self.bytes -= capacity;
        if capacity > POOLED_CAPACITY_MAX {
            self.large -= 1;
            self.large_bytes -= capacity;
        }
    }

    /// Buffers in the pool (for tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most `room` bytes, then says it would block.
    struct Tight {
        room: usize,
        got: Vec<u8>,
    }

    impl Write for Tight {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.room).min(3);
            self.room -= n;
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A partial write keeps the rest ahead of bytes appended later; a drained buffer is
    /// cleared but keeps its allocation.
    #[test]
    fn out_buf_partial_writes_keep_order() {
        let mut out = OutBuf::with_capacity(64);
        out.buf_mut().extend_from_slice(b"hello ");
        let mut w = Tight { room: 4, got: Vec::new() };
        assert_eq!(out.write_to(&mut w).unwrap(), 4);
        assert_eq!(out.unsent(), b"o ");
        out.buf_mut().extend_from_slice(b"world");
        w.room = 100;
        assert_eq!(out.write_to(&mut w).unwrap(), 7);
        assert_eq!(w.got, b"hello world");
        assert!(out.is_empty() && out.is_drained());
        assert_eq!(out.capacity(), 64);
    }

    /// Compacting after a partial write keeps the unsent bytes in order and lets the freed
    /// front take new output without growing the allocation.
    #[test]
    fn out_buf_compact_reuses_the_written_front() {
        let mut out = OutBuf::with_capacity(8);
        out.buf_mut().extend_from_slice(b"abcdefgh");
        let mut w = Tight { room: 6, got: Vec::new() };
        assert_eq!(out.write_to(&mut w).unwrap(), 6);
        out.compact();
        assert_eq!((out.unsent(), out.bytes()), (&b"gh"[..], &b"gh"[..]));
        out.buf_mut().extend_from_slice(b"ijklmn");
        assert_eq!(out.capacity(), 8);
        w.room = 100;
        assert_eq!(out.write_to(&mut w).unwrap(), 8);
        assert_eq!(w.got, b"abcdefghijklmn");
    }

    #[test]
    #[should_panic(expected = "wrote more than was queued")]
    fn out_buf_refuses_overrun() {
        let mut out = OutBuf::from(b"ab".to_vec());
        out.advance(3);
    }

    #[test]
    fn input_tail_keeps_only_the_rest() {
        let mut tail = InputTail::new();
        let used =
            |input: &[u8]| (input.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1), ());
        tail.offer(b"a\nb", used);
        assert_eq!(tail.0, b"b");
        tail.offer(b"c\n", used);
        assert!(tail.is_empty());
        assert_eq!(tail.capacity(), 0, "a consumed tail is freed");
        tail.offer(b"whole\n", used);
        assert_eq!(tail.capacity(), 0, "nothing copied when all is consumed in place");
    }

    /// Keys marked during a pass, and keys the pass keeps, make up the next pass, in that
    /// order; a key is never listed twice.
    #[test]
    fn dirty_list_passes() {
        let mut list = DirtyList::new();
        let mut bits = [false; 4];
        list.mark(0, &mut bits[0]);
        list.mark(1, &mut bits[1]);
        list.mark(0, &mut bits[0]);
        let pass = list.begin_pass();
        assert_eq!(pass, [0, 1]);
        list.keep(0);
        bits[1] = false;
        list.mark(2, &mut bits[2]);
        list.mark(0, &mut bits[0]);
        list.end_pass(pass);
        assert_eq!(list.begin_pass(), [2, 0]);
    }

    #[test]
    fn pool_trims_what_a_tick_did_not_use() {
        let mut pool = OutPool::new();
        for _ in 0..4 {
            pool.give(Vec::with_capacity(100));
        }
        pool.trim(); // the first trim only starts the count
        assert_eq!(pool.len(), 4);
        let buf = pool.take();
        pool.give(buf);
        pool.trim();
        assert_eq!(pool.len(), 1, "three buffers were idle for a whole tick");
        assert_eq!(pool.bytes(), 100);
    }

    #[test]
    fn pool_is_bounded() {
        let mut pool = OutPool::new();
        pool.give(Vec::with_capacity(POOLED_LARGE_CAPACITY_MAX + 1));
        assert_eq!(pool.len(), 0, "a buffer over the large ones' capacity is freed");
        for _ in 0..(POOLED_BYTES_MAX / POOLED_CAPACITY_MAX + 5) {
            pool.give(Vec::with_capacity(POOLED_CAPACITY_MAX));
        }
        assert!(pool.bytes() <= POOLED_BYTES_MAX);
        pool.allow_large(false);
        pool.give(Vec::with_capacity(512 << 10));
        assert!(pool.bytes() <= POOLED_BYTES_MAX, "no large buffer over the budget");
    }

    /// A few large buffers are kept (a big reply reuses a resident one), no more than the
    /// count; the next take hands out the last one given; a tick that did not use them
    /// frees them.
    #[test]
    fn pool_keeps_a_few_large_buffers() {
        let mut pool = OutPool::new();
        for _ in 0..POOLED_LARGE_COUNT_MAX + 2 {
            pool.give(Vec::with_capacity(512 << 10));
        }
        assert_eq!((pool.len(), pool.large), (POOLED_LARGE_COUNT_MAX, POOLED_LARGE_COUNT_MAX));
        assert_eq!(pool.bytes(), POOLED_LARGE_COUNT_MAX * (512 << 10));
        pool.give(Vec::with_capacity(100));
        assert_eq!(pool.take().capacity(), 100);
        let big = pool.take();
        assert_eq!((big.capacity(), pool.large), (512 << 10, POOLED_LARGE_COUNT_MAX - 1));
        pool.give(big);
        pool.trim(); // starts the count
        pool.trim();
        assert_eq!((pool.len(), pool.large, pool.large_bytes), (0, 0, 0), "idle for a tick");
        assert_eq!(pool.bytes(), 0);
    }
}
