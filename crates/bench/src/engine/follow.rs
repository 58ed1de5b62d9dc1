//! Follow-ups: commands an op sends after one of its replies, on the same connection (a
//! stream consumer's XACK of what XREADGROUP delivered; XGROUP CREATE after -NOGROUP). The
//! op's slot counts them as parts, so it ends, and its latency stops, when they are answered.

use proto_resp::{parse_reply, ParseError, Value};

use super::Engine;
use crate::{
    client::{ErrorKind, Tally},
    conn::Part,
};

impl Engine<'_> {
    /// Queues the commands in `self.follow` on connection `index` as parts of `part`'s op,
    /// which then ends when their replies are in.
    pub(super) fn send_follow_ups(&mut self, index: usize, part: Part) {
        let conn = &mut self.conns[index];
        conn.out.buf_mut().extend_from_slice(&self.follow.bytes);
        let follow_up = Part { key_count: 0, redirects: 0, asking: false, follow_up: true, ..part };
        for _ in 0..self.follow.commands {
            conn.pending.push_back(follow_up);
        }
        self.dirty.mark(index as u32, &mut conn.dirty);
        let slot = &mut self.slots[part.slot as usize];
        slot.parts_left += self.follow.commands;
        let (measured, sent) = (slot.measured, self.follow.bytes.len() as u64);
        self.stats_for(measured).counts.bytes_sent += sent;
    }

    /// A follow-up's reply: an integer (XACK), `+OK` or -BUSYGROUP (XGROUP CREATE: another
    /// client made the group first) are fine, another error is the server's. Returns the
    /// bytes used (0: incomplete), or `None` when the stream broke.
    pub(super) fn follow_up_reply(
        &mut self,
        index: usize,
        part: Part,
        input: &[u8],
    ) -> Option<usize> {
        let (error, used) = match parse_reply(input) {
            Ok((Value::Integer(_) | Value::Simple(_), used)) => (None, used),
            Ok((Value::Error(text), used)) if text.starts_with(b"BUSYGROUP") => (None, used),
            Ok((Value::Error(_) | Value::BulkError(_), used)) => {
                (Some(ErrorKind::ServerError), used)
            }
            Ok(_) => return None,
            Err(ParseError::Incomplete) => return Some(0),
            Err(_) => return None,
        };
        self.conns[index].pending.pop_front();
        self.part_done(part.slot, Tally::default(), error);
        Some(used)
    }
}
