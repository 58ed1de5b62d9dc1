//! Sans-IO codec for Redis RESP2 and RESP3: bytes in, commands out; replies composed into
//! a buffer. Both halves are here, so one codec serves the server, the load generator and
//! the round-trip tests (Pelikan's idea).
//!
//! ```text
//!  server:  socket bytes --parse_command--> Command<'_> --(exec)--> Reply --> Vec<u8>
//!                              |                  |
//!                          Limits            route: lookup, subcommand, arity (once)
//!
//!  client:  &[&[u8]] --compose_command--> Vec<u8> ... bytes --parse_reply--> Value<'_>
//! ```
//!
//! Goals:
//! - Behave as Redis does on the wire: the same framing rules, the same protocol error
//!   texts, the same close-after-error decisions, the same number formats.
//! - No allocation per argument: a parsed command is spans into the caller's buffer.
//! - Every bound comes from [`Limits`]; every loop is bounded by the input length.
//!
//! Non-goals: sockets, threads, the store, command semantics (the `exec` layer decides
//! what SET means), ACLs and authentication-dependent limits (Redis lowers the multibulk
//! and bulk bounds for unauthenticated clients; that belongs to the server, which knows
//! who is authenticated), RESP3 streamed types.

#![forbid(unsafe_code)]

pub mod args;
pub mod client;
pub mod cluster;
pub mod commands;
pub mod error;
mod inline;
pub mod limits;
mod parse;
pub mod reply;
mod route;
pub mod value;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod testutil;

pub use client::{compose_bulk_arg, compose_command, compose_command_head, parse_reply};
pub use commands::{
    lookup, rename_commands, ArgRule, CommandId, CommandSpec, Run, SubcommandId, SubcommandSpec,
    COMMANDS,
};
pub use error::{ParseError, ProtocolError};
pub use limits::Limits;
/// The fuzz target's invariant checks (shared with the in-crate randomized test).
#[doc(hidden)]
pub use parse::fuzz_check;
pub use parse::{parse_command, parse_command_in, ArgStorage, Command};
pub use reply::Reply;
pub use route::{check_arity, route, ArityError, Route, RouteError, Routed};
pub use value::Value;

/// The protocol version a connection speaks; chosen by `HELLO`, RESP2 until then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Protocol {
    #[default]
    Resp2,
    Resp3,
}

impl Protocol {
    /// The version `HELLO <protover>` asks for, or `None` (reply [`error::NOPROTO`]).
    pub fn from_version(version: i64) -> Option<Protocol> {
        match version {
            2 => Some(Protocol::Resp2),
            3 => Some(Protocol::Resp3),
            _ => None,
        }
    }
}
