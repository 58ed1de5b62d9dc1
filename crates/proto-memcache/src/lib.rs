//! Sans-IO codec for the memcached text, meta and binary protocols: bytes in, requests out; replies
//! composed into a buffer. Both directions are here (Pelikan's idea), so the server, the
//! load generator and the round-trip tests share one codec.
//!
//! ```text
//!  server:  socket bytes --parse_request--> Request<'_> --(exec)--> compose_* --> Vec<u8>
//!                              |               borrows keys and values from the bytes
//!                           Limits             ParseError: Incomplete | Invalid{skip,reply} | Close
//!
//!  client:  Request::compose / compose_retrieve / compose_store / compose_meta --> Vec<u8>
//!           bytes --parse_response--> Response<'_>  (VALUE..END, STAT..END, statuses, meta)
//! ```
//!
//! Goals:
//! - Behave as memcached 1.6 does on the wire: the same error lines, the same decisions to
//!   swallow a data block or to hang up, the same token rules (spaces separate tokens, a
//!   line may end in a bare `\n`). Each deliberate difference is documented where it is made
//!   and listed on [`parse_request`].
//! - No allocation per request or key: a parsed request is slices of the caller's buffer; a
//!   multiget's keys are a span walked on demand ([`Words`]).
//! - Every bound comes from [`Limits`]; every loop is bounded by the input length.
//!
//! The binary protocol has its own parser and composers in [`binary`]; [`parse_request`]
//! (text and meta) hangs up on its magic byte, so a server picks the dialect per connection.
//! Authentication's wire forms are here too: binary SASL packets ([`binary::sasl`], `-S`) and
//! the text protocol's authentication `set` ([`text::auth`], `-Y`); checking credentials and
//! keeping each connection's state is the `exec` layer's.
//!
//! Non-goals: sockets, threads, the store, command semantics (what `ms` with `MA` and `N`
//! does is the `exec` layer's business), admin commands beyond `stats`, `version`,
//! `verbosity`, `flush_all`, `quit` and those of [`Request::Admin`] (`slabs`, `lru`,
//! `lru_crawler`, `watch`, `cache_memlimit`); any other gets `ERROR`.
//!
//! ```
//! use proto_memcache::{parse_request, text::response::compose_status, Limits, Request};
//! use proto_memcache::text::{response::Status, StoreCommand};
//!
//! let wire = b"set greeting 0 0 5\r\nhello\r\n";
//! let (request, consumed) = parse_request(wire, &Limits::default()).expect("complete");
//! let Request::Store(store) = request else { panic!("a storage command") };
//! assert_eq!((store.command, store.key, store.value), (StoreCommand::Set, &b"greeting"[..], &b"hello"[..]));
//! assert_eq!(consumed, wire.len());
//!
//! let mut reply = Vec::new();
//! compose_status(Status::Stored, &mut reply);
//! assert_eq!(reply, b"STORED\r\n");
//! ```

#![forbid(unsafe_code)]

pub mod base64;
pub mod binary;
pub mod error;
pub mod invariants;
pub mod limits;
mod line;
pub mod meta;
mod request;
mod response;
pub mod text;
pub mod udp;

#[cfg(test)]
mod tests;

pub use error::{ErrorReply, ParseError, ResponseError};
pub use limits::Limits;
pub use line::{find_below_bang, parse_c_i32, parse_c_u32, Words};
pub use request::{parse_request, Request};
pub use response::{compose_meta_debug, parse_response, Response};
pub use text::request::{compose_retrieve, compose_store};
