//! The replication backlog: the last bytes of the replication stream, by offset, so that a
//! replica that lost its link for a moment continues where it was (`PSYNC` answered
//! `+CONTINUE`) and every replica is fed from one copy of the stream.
//!
//! Offsets are Redis's: `end` is `master_repl_offset`, the count of bytes ever appended;
//! the byte at offset `o` (1-based) is the `o`-th byte of the stream. The backlog keeps
//! `repl-backlog-size` bytes, and more while a replica still needs older ones (one being
//! sent a full copy, or one behind), up to [`HARD_LIMIT_BYTES`]: past that the replica is
//! dropped, as Redis drops a replica past its `client-output-buffer-limit`.

use std::collections::VecDeque;

/// The most a backlog keeps for replicas that are behind (Redis's default hard
/// `client-output-buffer-limit replica`).
pub const HARD_LIMIT_BYTES: usize = 256 << 20;

#[derive(Debug)]
pub struct Backlog {
    bytes: VecDeque<u8>,
    /// `repl-backlog-size`.
    size: usize,
    /// Bytes ever appended (`master_repl_offset`).
    end: u64,
}

impl Backlog {
    /// An empty backlog whose next byte has offset `end + 1`.
    pub fn new(size: usize, end: u64) -> Backlog {
        Backlog { bytes: VecDeque::new(), size: size.max(1), end }
    }

    pub fn end(&self) -> u64 {
        self.end
    }

    /// Offset of the oldest byte kept (`repl_backlog_first_byte_offset`).
    pub fn first_offset(&self) -> u64 {
        self.end + 1 - self.bytes.len() as u64
    }

    pub fn histlen(&self) -> usize {
        self.bytes.len()
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn set_size(&mut self, size: usize) {
        self.size = size.max(1);
    }

    /// Appends `bytes`, then drops the oldest bytes past the size, keeping those from
    /// `needed_from` on (the oldest offset a replica still needs), up to the hard limit.
    pub fn append(&mut self, bytes: &[u8], needed_from: Option<u64>) {
        self.bytes.extend(bytes);
        self.end += bytes.len() as u64;
        let mut keep = self.size;
        if let Some(from) = needed_from {
            let wanted = (self.end + 1).saturating_sub(from) as usize;
            keep = keep.max(wanted.min(HARD_LIMIT_BYTES));
        }
        if self.bytes.len() > keep {
            let drop = self.bytes.len() - keep;
            self.bytes.drain(..drop);
        }
    }

    /// Appends to `out` up to `max` bytes from offset `from` on; `None` when `from` is no
    /// longer kept (or lies past the end by more than one).
    pub fn copy_from(&self, from: u64, max: usize, out: &mut Vec<u8>) -> Option<usize> {
        if from < self.first_offset() || from > self.end + 1 {
            return None;
        }
        let skip = (from - self.first_offset()) as usize;
        let take = (self.bytes.len() - skip).min(max);
        let (a, b) = self.bytes.as_slices();
        let mut left = take;
        let mut at = skip;
        for part in [a, b] {
            if at >= part.len() {
                at -= part.len();
                continue;
            }
            let n = (part.len() - at).min(left);
            out.extend_from_slice(&part[at..at + n]);
            left -= n;
            at = 0;
            if left == 0 {
                break;
            }
        }
        Some(take)
    }

    /// Whether a replica asking for offset `from` can continue from here.
    pub fn holds(&self, from: u64) -> bool {
        from >= self.first_offset() && from <= self.end + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: offsets follow Redis's (first byte 1), the size bounds what is kept unless a
    /// replica still needs older bytes, and a copy across the ring's seam is whole.
    #[test]
    fn keeps_the_last_bytes_by_offset() {
        let mut backlog = Backlog::new(4, 0);
        backlog.append(b"abcdef", None);
        assert_eq!((backlog.end(), backlog.first_offset(), backlog.histlen()), (6, 3, 4));
        let mut out = Vec::new();
        assert_eq!(backlog.copy_from(3, 10, &mut out), Some(4));
        assert_eq!(out, b"cdef");
        assert_eq!(backlog.copy_from(2, 10, &mut out), None);
        assert_eq!(backlog.copy_from(7, 10, &mut Vec::new()), Some(0));
        assert_eq!(backlog.copy_from(8, 10, &mut Vec::new()), None);
        backlog.append(b"gh", Some(4));
        assert_eq!(backlog.first_offset(), 4);
        let mut out = Vec::new();
        assert_eq!(backlog.copy_from(5, 2, &mut out), Some(2));
        assert_eq!(out, b"ef");
    }
}
