//! Lists: LPUSH ... LMPOP (the blocking variants are in `blocking.rs`).
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name.

use super::{spec, ArgRule, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListId {
    Lindex,
    Linsert,
    Llen,
    Lmove,
    Lmpop,
    Lpop,
    Lpos,
    Lpush,
    Lpushx,
    Lrange,
    Lrem,
    Lset,
    Ltrim,
    Rpop,
    Rpoplpush,
    Rpush,
    Rpushx,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static LIST_COMMANDS: &[CommandSpec] = {
    use {Flags as F, Group as G, ListId as L};
    const fn r(id: ListId) -> Run {
        Run::Command(CommandId::Lists(id))
    }
    &[
    spec(r(L::Lindex), "lindex", 3, G::List, "1.0.0", (1, 1, 1),
        &[F::READONLY],
        "Returns the element at an index of a list."),
    spec(r(L::Linsert), "linsert", 5, G::List, "2.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Inserts an element before or after another element of a list."),
    spec(r(L::Llen), "llen", 2, G::List, "1.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns the length of a list."),
    spec(r(L::Lmove), "lmove", 5, G::List, "6.2.0", (1, 2, 1),
        &[F::WRITE, F::DENYOOM],
        "Pops an element from one end of a list and pushes it onto an end of another."),
    spec(r(L::Lmpop), "lmpop", -4, G::List, "7.0.0", (0, 0, 0),
        &[F::WRITE, F::MOVABLEKEYS],
        "Pops elements from the first non-empty list of several."),
    spec(r(L::Lpop), "lpop", -2, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Removes and returns elements from the head of a list.").with_rule(ArgRule::AtMost(3)),
    spec(r(L::Lpos), "lpos", -3, G::List, "6.0.6", (1, 1, 1),
        &[F::READONLY],
        "Returns the indexes of the elements of a list equal to a value."),
    spec(r(L::Lpush), "lpush", -3, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Prepends elements to a list, creating it if needed."),
    spec(r(L::Lpushx), "lpushx", -3, G::List, "2.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Prepends elements to a list only if it exists."),
    spec(r(L::Lrange), "lrange", 4, G::List, "1.0.0", (1, 1, 1),
        &[F::READONLY],
        "Returns a range of the elements of a list."),
    spec(r(L::Lrem), "lrem", 4, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE],
        "Removes elements equal to a value from a list."),
    spec(r(L::Lset), "lset", 4, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Replaces the element at an index of a list."),
    spec(r(L::Ltrim), "ltrim", 4, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE],
        "Keeps only a range of the elements of a list."),
    spec(r(L::Rpop), "rpop", -2, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Removes and returns elements from the tail of a list.").with_rule(ArgRule::AtMost(3)),
    spec(r(L::Rpoplpush), "rpoplpush", 3, G::List, "1.2.0", (1, 2, 1),
        &[F::WRITE, F::DENYOOM],
        "Pops the last element of a list and pushes it onto the head of another."),
    spec(r(L::Rpush), "rpush", -3, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Appends elements to a list, creating it if needed."),
    spec(r(L::Rpushx), "rpushx", -3, G::List, "2.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Appends elements to a list only if it exists."),
    ]
};

#[cfg(test)]
mod tests {
    use super::super::{lookup, write_command_info};
    use crate::{Protocol, Reply};

    /// Goal: `COMMAND INFO` of a list command as Redis 7.0 starts it (name, arity, flags
    /// in Redis's order with `movablekeys` last, key triple).
    #[test]
    fn command_info_prefix() {
        let table: &[(&str, &[u8])] = &[
            (
                "lpush",
                b"*10\r\n$5\r\nlpush\r\n:-3\r\n*3\r\n+write\r\n+denyoom\r\n+fast\r\n\
                :1\r\n:1\r\n:1\r\n",
            ),
            (
                "lmove",
                b"*10\r\n$5\r\nlmove\r\n:5\r\n*2\r\n+write\r\n+denyoom\r\n\
                :1\r\n:2\r\n:1\r\n",
            ),
            (
                "lmpop",
                b"*10\r\n$5\r\nlmpop\r\n:-4\r\n*2\r\n+write\r\n+movablekeys\r\n\
                :0\r\n:0\r\n:0\r\n",
            ),
        ];
        for (name, prefix) in table {
            let mut out = Vec::new();
            write_command_info(
                &mut Reply::new(&mut out, Protocol::Resp2),
                lookup(name.as_bytes()),
                &|_| Vec::new(),
            );
            assert!(out.starts_with(prefix), "{name}: {}", String::from_utf8_lossy(&out));
        }
    }
}
