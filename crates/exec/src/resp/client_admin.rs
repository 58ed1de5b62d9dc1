//! CLIENT KILL, NO-EVICT, NO-TOUCH, REPLY and HELP: the CLIENT subcommands that act on
//! connections rather than describe them (those are in `connection.rs`).
//!
//! CLIENT KILL ends connections owned by any worker: under the client registry's lock it
//! asks the server to shut each one's socket down (`ServerControl::end_connection`); the
//! owning loop then reads the end of the stream and closes the connection as if the peer
//! had. The lock makes that safe: a connection leaves the registry (taking the lock) before
//! its socket is closed, so a socket named in the registry is still that connection's.
//! A killed connection leaves the registry in the same pass, as Redis frees it at once: a
//! second KILL, CLIENT LIST or INFO right after no longer counts it.
//! The killing connection itself, when it matches (SKIPME no), is closed after its reply.

use proto_resp::{args::parse_i64, error};

use super::{
    clients::{flag, ClientInfo, Matched},
    connection::ClientType,
    Ctx,
};
use crate::Flow;

/// Which clients a CLIENT KILL names; every filter given must match.
#[derive(Debug, Default)]
struct Filter {
    id: Option<u64>,
    kind: Option<ClientType>,
    addr: Option<Vec<u8>>,
    laddr: Option<Vec<u8>>,
    user: Option<Vec<u8>>,
    max_age_secs: Option<u64>,
    skip_me: bool,
}

impl Filter {
    fn matches(&self, client: &ClientInfo, now_ms: u64) -> bool {
        let age_secs = now_ms.saturating_sub(client.connected_ms) / 1000;
        let user = if client.user.is_empty() { "default" } else { client.user.as_str() };
        self.id.is_none_or(|id| client.id == id)
            && self.kind.is_none_or(|kind| kind.matches(client))
            && self.addr.as_ref().is_none_or(|addr| client.addr.as_bytes() == addr.as_slice())
            && self.laddr.as_ref().is_none_or(|addr| client.laddr.as_bytes() == addr.as_slice())
            && self.user.as_ref().is_none_or(|name| user.as_bytes() == name.as_slice())
            && self.max_age_secs.is_none_or(|max| age_secs > max)
    }
}

const NO_SUCH_CLIENT: &str = "ERR No such client";

/// CLIENT KILL ip:port (answers OK), or CLIENT KILL <filter> <value> ... (answers how many).
pub(super) fn kill(ctx: &mut Ctx<'_>) -> Flow {
    if ctx.argc() == 3 {
        let filter = Filter { addr: Some(ctx.arg(2).to_vec()), ..Filter::default() };
        return match end_matching(ctx, &filter) {
            (0, _) => {
                ctx.error(NO_SUCH_CLIENT);
                Flow::Continue
            }
            (_, me) => answered(ctx, me, |ctx| ctx.reply().ok()),
        };
    }
    let filter = match parse_filter(ctx) {
        Ok(filter) => filter,
        Err(message) => {
            ctx.error(message);
            return Flow::Continue;
        }
    };
    let (ended, me) = end_matching(ctx, &filter);
    answered(ctx, me, |ctx| ctx.reply().integer(ended as i64))
}

/// Replies; the connection closes after the reply if it killed itself.
fn answered(ctx: &mut Ctx<'_>, me: bool, reply: impl FnOnce(&mut Ctx<'_>)) -> Flow {
    reply(ctx);
    if me {
        Flow::Close
    } else {
        Flow::Continue
    }
}

fn parse_filter(ctx: &Ctx<'_>) -> Result<Filter, String> {
    let mut filter = Filter { skip_me: true, ..Filter::default() };
    let mut index = 2;
    while index < ctx.argc() {
        if index + 1 >= ctx.argc() {
            return Err(error::SYNTAX.into());
        }
        let (option, value) = (ctx.arg(index), ctx.arg(index + 1));
        let option = option.to_ascii_lowercase();
        match option.as_slice() {
            b"id" => match parse_i64(value) {
                Ok(id) if id > 0 => filter.id = Some(id as u64),
                _ => return Err("ERR client-id should be greater than 0".into()),
            },
            b"type" => {
                let name = value.to_ascii_lowercase();
                if !matches!(
                    name.as_slice(),
                    b"normal" | b"master" | b"replica" | b"slave" | b"pubsub"
                ) {
                    let shown = String::from_utf8_lossy(value);
                    return Err(format!("ERR Unknown client type '{shown}'"));
                }
                filter.kind = Some(ClientType::of(&name));
            }
            b"addr" => filter.addr = Some(value.to_vec()),
            b"laddr" => filter.laddr = Some(value.to_vec()),
            b"user" => {
                if ctx.shared.redis.users.get(value).is_none() {
                    let shown = String::from_utf8_lossy(value);
                    return Err(format!("ERR No such user '{shown}'"));
                }
                filter.user = Some(value.to_vec());
            }
            b"skipme" => match value.to_ascii_lowercase().as_slice() {
                b"yes" => filter.skip_me = true,
                b"no" => filter.skip_me = false,
                _ => return Err(error::SYNTAX.into()),
            },
            b"maxage" => match parse_i64(value) {
                Ok(secs) if secs >= 0 => filter.max_age_secs = Some(secs as u64),
                _ => return Err(error::SYNTAX.into()),
            },
            _ => return Err(error::SYNTAX.into()),
        }
        index += 2;
    }
    Ok(filter)
}

/// Ends every other matching connection; returns how many matched (this one included,
/// unless skipped) and whether this one did.
fn end_matching(ctx: &mut Ctx<'_>, filter: &Filter) -> (usize, bool) {
    let now_ms = super::ttl::now_ms(ctx.shared);
    let my_id = ctx.session.client.lock().id;
    let control = ctx.shared.redis.control.get();
    let mut me = false;
    let ended = ctx.shared.core.clients.match_locked(|client| {
        if !filter.matches(client, now_ms) {
            return Matched::No;
        }
        if client.id == my_id {
            if filter.skip_me {
                return Matched::No;
            }
            me = true;
            return Matched::Keep;
        }
        if client.activity.has(super::clients::flag::MASTER) {
            // The replication link: its thread reconnects (and continues with PSYNC).
            crate::repl::link::drop_connection(ctx.shared);
            return Matched::Keep;
        }
        if let (Some(control), Some(fd)) = (control, client.fd) {
            control.end_connection(fd);
        }
        Matched::Unlist
    });
    (ended, me)
}

/// CLIENT NO-EVICT on|off: kept as a flag (`e` in CLIENT LIST); Spinel never closes a
/// client to free memory, so there is nothing else to exempt it from.
pub(super) fn no_evict(ctx: &mut Ctx<'_>) {
    on_off(ctx, flag::NO_EVICT);
}

/// CLIENT NO-TOUCH on|off: its reads leave keys' access times and frequencies as they
/// were (`T` in CLIENT LIST); TOUCH itself still touches.
pub(super) fn no_touch(ctx: &mut Ctx<'_>) {
    on_off(ctx, flag::NO_TOUCH);
}

fn on_off(ctx: &mut Ctx<'_>, bit: u32) {
    let on = match ctx.arg(2).to_ascii_lowercase().as_slice() {
        b"on" => true,
        b"off" => false,
        _ => return ctx.error(error::SYNTAX),
    };
    ctx.session.activity.set(bit, on);
    ctx.reply().ok();
}

/// CLIENT REPLY ON|OFF|SKIP: OFF answers nothing (and no later command answers until ON),
/// SKIP drops the next command's reply (nothing while OFF); ON answers OK.
pub(super) fn reply_mode(ctx: &mut Ctx<'_>) {
    use super::ReplyMode;
    let mode = match ctx.arg(2).to_ascii_lowercase().as_slice() {
        b"on" => ReplyMode::On,
        b"off" => ReplyMode::Off,
        // SKIP while OFF changes nothing: the replies stay off.
        b"skip" if ctx.session.reply_mode == ReplyMode::Off => ReplyMode::Off,
        b"skip" => ReplyMode::SkipNext,
        _ => return ctx.error(error::SYNTAX),
    };
    ctx.session.reply_mode = mode;
    if mode == ReplyMode::On {
        ctx.reply().ok();
    }
}

const HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "HELP",
    "    Prints this help.",
];

pub(super) fn help(ctx: &mut Ctx<'_>) {
    super::help::reply(ctx, HELP);
}
