//! A security layer between the socket's bytes and the handler (TLS; the server implements
//! it with rustls, so the runtime knows neither TLS nor its crate).
//!
//! ```text
//!   driver bytes ──> Session::open ──> plaintext ──> deliver ──> Handler::receive
//!                       │ handshake, alerts                         │ replies (plaintext)
//!                       v                                           v
//!   driver send  <── Conn::out  <────────────── Session::seal (out[from..] -> records)
//! ```
//!
//! The loop keeps `Conn::out` ciphertext only: the plaintext a handler call appended is
//! replaced by its records right after the call, so the drivers send, count and pause on
//! ciphertext as on any output, and every reply of one batch still leaves in one send.
//! Both drivers get it the same way, since it sits in the loop and not in a driver.

/// What [`Session::open`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// The session goes on (plaintext, if any, was appended).
    Open,
    /// The peer sent its closing alert: treat as the peer's end of input.
    PeerClosed,
    /// The peer broke the protocol (plain text on a TLS port, a failed handshake): send what
    /// was appended to `out` (an alert), then close.
    Failed,
}

/// One connection's security session; the handler makes one per accepted connection
/// ([`crate::Handler::session`]).
pub trait Session {
    /// Takes `input` as read from the socket; appends the plaintext it carried to `plain` and
    /// what the session must send in answer (handshake records, alerts) to `out`.
    fn open(&mut self, input: &[u8], plain: &mut Vec<u8>, out: &mut Vec<u8>) -> Opened;

    /// Replaces the plaintext at `out[from..]` by its records (and appends anything else the
    /// session has to send). `out[..from]` is ciphertext already and is left alone.
    fn seal(&mut self, out: &mut Vec<u8>, from: usize);

    /// Appends the closing alert, for a connection the handler closes.
    fn close(&mut self, out: &mut Vec<u8>);
}
