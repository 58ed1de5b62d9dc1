//! Which writes a primary sends as the command itself rather than as the state of the
//! keys it changed (`crate::repl`): the deterministic collection writes, so that a push
//! onto a long list, or a field set in a large hash, sends its arguments and not the whole
//! collection again (APPEND and SETRANGE too: a growing string would go whole at every
//! append); and the TTL commands, sent as their outcome (PEXPIREAT, PERSIST,
//! DEL). Such a write runs with the journal's lock held from before it executes until it
//! is appended, so two of them on one key are sent in the order they applied; and only
//! while no full copy is being walked (a walk may already hold a write made during it:
//! replayed as a command it would apply twice, so the state goes instead).
//!
//! Left to state: whatever is random or clock-bound (SPOP, XCLAIM's idle times,
//! XREADGROUP, HINCRBYFLOAT's formatting), approximate trimming (`~`: Spinel's stream
//! nodes are not Redis's, so `~` trims elsewhere), the STORE forms, scripts and blocking
//! commands (they take the gate themselves, which must never be waited for with the
//! journal's lock held).

use proto_resp::{
    commands::{CommandId as C, HashId as H, ListId as L, SetId as S, StreamId as X, ZSetId as Z},
    Route, SubcommandId as Sub,
};

use super::Ctx;

/// How a write goes to the replicas when it is not sent as state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verbatim {
    /// The command as it was sent.
    Command,
    /// XADD: the command with the ID it generated in place of `*`.
    Xadd,
    /// EXPIRE and its kin: the key's expiry now (PEXPIREAT, PERSIST, or DEL).
    Expiry,
}

/// Whether this write (not nested in EXEC or a script) may be sent verbatim.
pub(super) fn kind_of(ctx: &Ctx<'_>, route: Route) -> Option<Verbatim> {
    let kind = match route {
        Route::Command(C::Lists(
            L::Lpush
            | L::Rpush
            | L::Lpushx
            | L::Rpushx
            | L::Lpop
            | L::Rpop
            | L::Lset
            | L::Lrem
            | L::Ltrim
            | L::Linsert
            | L::Lmove
            | L::Rpoplpush
            | L::Lmpop,
        ))
        | Route::Command(C::Hashes(H::Hset | H::Hsetnx | H::Hmset | H::Hdel | H::Hincrby))
        | Route::Command(C::Sets(S::Sadd | S::Srem | S::Smove))
        | Route::Command(C::SortedSets(
            Z::Zadd
            | Z::Zrem
            | Z::Zincrby
            | Z::Zremrangebyscore
            | Z::Zremrangebyrank
            | Z::Zremrangebylex
            | Z::Zpopmin
            | Z::Zpopmax
            | Z::Zmpop,
        ))
        | Route::Command(C::Streams(X::Xdel | X::Xack | X::Xsetid))
        | Route::Command(C::Geo(proto_resp::commands::GeoId::Geoadd))
        | Route::Command(C::Rename | C::Renamenx | C::Copy | C::Move)
        | Route::Command(C::Append | C::Setrange) => Verbatim::Command,
        Route::Command(C::Streams(X::Xtrim)) if !approximate(ctx, 3) => Verbatim::Command,
        Route::Command(C::Streams(X::Xadd)) => {
            id_at(ctx)?;
            Verbatim::Xadd
        }
        Route::Subcommand(
            Sub::XgroupCreate
            | Sub::XgroupSetid
            | Sub::XgroupDestroy
            | Sub::XgroupCreateconsumer
            | Sub::XgroupDelconsumer,
        ) => Verbatim::Command,
        Route::Command(C::Expire | C::Pexpire | C::Expireat | C::Pexpireat | C::Persist) => {
            Verbatim::Expiry
        }
        _ => return None,
    };
    Some(kind)
}

fn approximate(ctx: &Ctx<'_>, at: usize) -> bool {
    ctx.cmd.arg(at).is_some_and(|a| a == b"~")
}

/// XADD's ID argument, when its trimming (if any) is exact: None for `~`.
pub(super) fn id_at(ctx: &Ctx<'_>) -> Option<usize> {
    let mut at = 2;
    loop {
        let word = ctx.cmd.arg(at)?;
        if word.eq_ignore_ascii_case(b"nomkstream") {
            at += 1;
        } else if word.eq_ignore_ascii_case(b"maxlen") || word.eq_ignore_ascii_case(b"minid") {
            at += 1;
            match ctx.cmd.arg(at)? {
                b"~" => return None,
                b"=" => at += 2,
                _ => at += 1,
            }
            if ctx.cmd.arg(at).is_some_and(|w| w.eq_ignore_ascii_case(b"limit")) {
                return None;
            }
        } else {
            return Some(at);
        }
    }
}

/// The ID an XADD answered (a bulk string at `reply_at`).
pub(super) fn answered_id(out: &[u8], reply_at: usize) -> Option<&[u8]> {
    let reply = out.get(reply_at..)?.strip_prefix(b"$")?;
    let end = reply.iter().position(|&b| b == b'\r')?;
    let len: usize = std::str::from_utf8(&reply[..end]).ok()?.parse().ok()?;
    reply.get(end + 2..end + 2 + len)
}
