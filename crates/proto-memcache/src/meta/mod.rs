//! The meta protocol: `mg`, `ms`, `md`, `ma`, `me`, `mn` and their two-letter replies.
//!
//! ```text
//!  mg <key> <flag>*                 -> VA <len> <flag>* + data | HD <flag>* | EN
//!  ms <key> <datalen> <flag>* + data -> HD <flag>* | NS | EX | NF
//!  md <key> <flag>*                 -> HD <flag>* | NF | EX
//!  ma <key> <flag>*                 -> HD <flag>* | VA <len> <flag>* + number | NF | NS | EX
//!  me <key> [b]                     -> ME <key> <k>=<v>* | EN
//!  mn                               -> MN
//! ```
//!
//! Returned flags come back in the order the request listed them; `O` and `k` are echoed
//! on every status. Quiet mode (`q`) drops the nominal reply; which one that is depends on
//! the command ([`quiet_suppresses`]). Errors are always sent.

pub mod flags;
pub(crate) mod request;
pub mod response;

pub use flags::{compose_flags, Flag, MetaFlags};
pub use request::{compose_meta, MetaArith, MetaDebug, MetaDelete, MetaGet, MetaSet, SetMode};
pub use response::{
    compose_meta_reply, compose_meta_reply_or_lend, ItemInfo, MetaReply, MetaResponse, MetaStatus,
    RecacheState, ReturnedFlags,
};

use crate::base64;

/// The six meta commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaCommand {
    Get,
    Set,
    Delete,
    Arith,
    Debug,
    Noop,
}

impl MetaCommand {
    pub fn name(&self) -> &'static [u8] {
        match self {
            MetaCommand::Get => b"mg",
            MetaCommand::Set => b"ms",
            MetaCommand::Delete => b"md",
            MetaCommand::Arith => b"ma",
            MetaCommand::Debug => b"me",
            MetaCommand::Noop => b"mn",
        }
    }
}

/// Whether quiet mode (`q`) drops a reply with `status` to `command`, as memcached does:
/// `mg` drops `EN`; `ms` and `md` drop `HD`; `ma` drops its success reply (`HD`, or `VA`
/// with `v`). Failures other than these, and errors, are always sent.
pub fn quiet_suppresses(command: MetaCommand, status: MetaStatus) -> bool {
    match command {
        MetaCommand::Get => status == MetaStatus::En,
        MetaCommand::Set | MetaCommand::Delete => status == MetaStatus::Hd,
        MetaCommand::Arith => matches!(status, MetaStatus::Hd | MetaStatus::Va),
        MetaCommand::Debug | MetaCommand::Noop => false,
    }
}

/// The key to look up: `key` itself, or its base64 decoding into `scratch` when the request
/// had `b`. `None` only if `scratch` is too small (it needs `key.len() / 4 * 3` bytes);
/// the parser already checked that the key decodes.
pub fn decoded_key<'s>(key: &'s [u8], base64_key: bool, scratch: &'s mut [u8]) -> Option<&'s [u8]> {
    if !base64_key {
        return Some(key);
    }
    let len = base64::decode(key, scratch)?;
    Some(&scratch[..len])
}
