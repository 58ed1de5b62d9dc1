//! [`rt::Session`] over a rustls server connection: ciphertext from the socket in,
//! plaintext out to the parser; replies in, records out to the send.
//!
//! rustls keeps at most one partial record of input and drains what it decrypts at once
//! into the loop's buffer, and its output queue is emptied into the connection's output
//! after every call, so its own buffers stay a record or so per connection: the loop's
//! bounds (pause threshold, output limit, input tails) apply to what it hands over.

use std::{
    io::{Read, Write},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use rt::Opened;
use rustls::{ServerConfig, ServerConnection};

pub struct TlsSession {
    conn: ServerConnection,
    /// Where a failed handshake is counted (memcached's `ssl_handshake_errors`).
    handshake_errors: Arc<AtomicU64>,
}

impl TlsSession {
    pub fn new(
        config: Arc<ServerConfig>,
        handshake_errors: Arc<AtomicU64>,
    ) -> Result<TlsSession, rustls::Error> {
        let mut conn = ServerConnection::new(config)?;
        // Its queues are drained at every call (see the module docs); a limit there would
        // cut replies short instead of bounding anything.
        conn.set_buffer_limit(None);
        Ok(TlsSession { conn, handshake_errors })
    }

    /// Moves every record rustls has to send to `out`.
    fn drain_records(&mut self, out: &mut Vec<u8>) {
        while self.conn.wants_write() {
            // Writing to a Vec cannot fail.
            if self.conn.write_tls(out).is_err() {
                break;
            }
        }
    }

    /// Moves the plaintext rustls decrypted to `plain`.
    fn drain_plaintext(&mut self, waiting_bytes: usize, plain: &mut Vec<u8>) -> bool {
        if waiting_bytes == 0 {
            return true;
        }
        let start = plain.len();
        plain.resize(start + waiting_bytes, 0);
        self.conn.reader().read_exact(&mut plain[start..]).is_ok()
    }
}

impl rt::Session for TlsSession {
    fn open(&mut self, mut input: &[u8], plain: &mut Vec<u8>, out: &mut Vec<u8>) -> Opened {
        let mut opened = Opened::Open;
        // Bounded: every pass consumes input (rustls takes up to a record's worth per call)
        // or ends the loop. rustls takes nothing once the peer's close_notify is in.
        while !input.is_empty() {
            match self.conn.read_tls(&mut input) {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => {
                    opened = Opened::Failed;
                    break;
                }
            }
            let state = match self.conn.process_new_packets() {
                Ok(state) => state,
                Err(_) => {
                    opened = Opened::Failed;
                    break;
                }
            };
            if !self.drain_plaintext(state.plaintext_bytes_to_read(), plain) {
                opened = Opened::Failed;
                break;
            }
            if state.peer_has_closed() {
                opened = Opened::PeerClosed;
                break;
            }
        }
        self.drain_records(out);
        if opened == Opened::Failed && self.conn.is_handshaking() {
            self.handshake_errors.fetch_add(1, Ordering::Relaxed);
        }
        opened
    }

    fn seal(&mut self, out: &mut Vec<u8>, from: usize) {
        if out.len() > from {
            // Unlimited buffers (see `new`): the write takes everything.
            let _ = self.conn.writer().write_all(&out[from..]);
            out.truncate(from);
        }
        self.drain_records(out);
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        self.conn.send_close_notify();
        self.drain_records(out);
    }
}
