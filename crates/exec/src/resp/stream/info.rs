//! XINFO STREAM [FULL [COUNT n]], XINFO GROUPS and XINFO CONSUMERS.

use proto_resp::{args::parse_i64, error, Reply};
use values::stream::{Group, StreamId, StreamValue};

use super::super::Ctx;
use super::{read, reply_entries, reply_entry};

/// Redis's `addReplySubcommandSyntaxError` for XINFO.
fn subcommand_error(ctx: &Ctx<'_>) -> String {
    format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try XINFO HELP.",
        String::from_utf8_lossy(ctx.arg(1))
    )
}

/// Reads key argument 2 as a stream, with XINFO's error for a missing key.
fn with_stream(
    ctx: &mut Ctx<'_>,
    f: impl FnOnce(&StreamValue, &mut Reply<'_>) -> Result<(), String>,
) {
    let result = read(ctx, 2, |stream, reply| match stream {
        None => Err(error::NO_SUCH_KEY.to_owned()),
        Some(stream) => f(stream, reply),
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(Err(message)) => ctx.error(message),
        Ok(Ok(())) => {}
    }
}

/// What the rax of `nodes` keys would count as its nodes (an estimate: Spinel keeps no
/// radix tree; exact for one key).
fn radix_tree_nodes(nodes: usize) -> usize {
    match nodes {
        0 => 1,
        1 => 2,
        n => 2 * n + 2,
    }
}

/// XINFO STREAM key [FULL [COUNT n]]
pub(super) fn stream(ctx: &mut Ctx<'_>) {
    let optc = ctx.argc() - 3;
    let mut full = None;
    if optc > 0 {
        if (optc != 1 && optc != 3) || !ctx.arg(3).eq_ignore_ascii_case(b"full") {
            return ctx.error(subcommand_error(ctx));
        }
        let mut count = 10;
        if optc == 3 {
            if !ctx.arg(4).eq_ignore_ascii_case(b"count") {
                return ctx.error(subcommand_error(ctx));
            }
            match parse_i64(ctx.arg(5)) {
                Err(_) => return ctx.error(error::NOT_INTEGER),
                Ok(n) if n < 0 => count = 10,
                Ok(n) => count = n as usize,
            }
        }
        full = Some(count);
    }
    with_stream(ctx, |stream, reply| {
        reply.map(if full.is_some() { 9 } else { 10 });
        reply.bulk(b"length");
        reply.integer(stream.len() as i64);
        reply.bulk(b"radix-tree-keys");
        reply.integer(stream.node_count() as i64);
        reply.bulk(b"radix-tree-nodes");
        reply.integer(radix_tree_nodes(stream.node_count()) as i64);
        reply.bulk(b"last-generated-id");
        reply.bulk(stream.last_id.to_string().as_bytes());
        reply.bulk(b"max-deleted-entry-id");
        reply.bulk(stream.max_deleted_id.to_string().as_bytes());
        reply.bulk(b"entries-added");
        reply.integer(stream.entries_added as i64);
        reply.bulk(b"recorded-first-entry-id");
        reply.bulk(stream.first_id().to_string().as_bytes());
        match full {
            None => summary(stream, reply),
            Some(count) => full_info(stream, count, reply),
        }
        Ok(())
    });
}

fn summary(stream: &StreamValue, reply: &mut Reply<'_>) {
    reply.bulk(b"groups");
    reply.integer(stream.groups.len() as i64);
    reply.bulk(b"first-entry");
    match stream.first() {
        Some(entry) => reply_entry(reply, entry),
        None => reply.null(),
    }
    reply.bulk(b"last-entry");
    match stream.last() {
        Some(entry) => reply_entry(reply, entry),
        None => reply.null(),
    }
}

fn full_info(stream: &StreamValue, count: usize, reply: &mut Reply<'_>) {
    let limit = if count == 0 { usize::MAX } else { count };
    reply.bulk(b"entries");
    reply_entries(reply, stream.range(StreamId::MIN, StreamId::MAX).take(limit));
    reply.bulk(b"groups");
    reply.array(stream.groups.len());
    for (name, group) in &stream.groups {
        reply.map(7);
        reply.bulk(b"name");
        reply.bulk(name);
        group_counters(stream, group, reply);
        reply.bulk(b"pel-count");
        reply.integer(group.pel.len() as i64);
        reply.bulk(b"pending");
        let rows: Vec<_> = group.pel.iter().take(limit).collect();
        reply.array(rows.len());
        for (id, pending) in rows {
            reply.array(4);
            reply.bulk(id.to_string().as_bytes());
            reply.bulk(&pending.consumer);
            reply.integer(pending.delivery_time_ms as i64);
            reply.integer(pending.delivery_count as i64);
        }
        full_consumers(group, limit, reply);
    }
}

/// A group's last delivered ID, entries read and lag, with their names.
fn group_counters(stream: &StreamValue, group: &Group, reply: &mut Reply<'_>) {
    reply.bulk(b"last-delivered-id");
    reply.bulk(group.last_id.to_string().as_bytes());
    reply.bulk(b"entries-read");
    match group.entries_read {
        Some(n) => reply.integer(n as i64),
        None => reply.null(),
    }
    reply.bulk(b"lag");
    match stream.lag(group) {
        Some(n) => reply.integer(n as i64),
        None => reply.null(),
    }
}

fn full_consumers(group: &Group, limit: usize, reply: &mut Reply<'_>) {
    reply.bulk(b"consumers");
    reply.array(group.consumers.len());
    for (name, consumer) in &group.consumers {
        reply.map(4);
        reply.bulk(b"name");
        reply.bulk(name);
        reply.bulk(b"seen-time");
        reply.integer(consumer.seen_time_ms as i64);
        reply.bulk(b"pel-count");
        reply.integer(consumer.pel.len() as i64);
        reply.bulk(b"pending");
        let ids: Vec<_> = consumer.pel.iter().take(limit).collect();
        reply.array(ids.len());
        for id in ids {
            let pending = group.pel.get(id);
            reply.array(3);
            reply.bulk(id.to_string().as_bytes());
            reply.integer(pending.map_or(0, |p| p.delivery_time_ms as i64));
            reply.integer(pending.map_or(0, |p| p.delivery_count as i64));
        }
    }
}

/// XINFO GROUPS key
pub(super) fn groups(ctx: &mut Ctx<'_>) {
    with_stream(ctx, |stream, reply| {
        reply.array(stream.groups.len());
        for (name, group) in &stream.groups {
            reply.map(6);
            reply.bulk(b"name");
            reply.bulk(name);
            reply.bulk(b"consumers");
            reply.integer(group.consumers.len() as i64);
            reply.bulk(b"pending");
            reply.integer(group.pel.len() as i64);
            group_counters(stream, group, reply);
        }
        Ok(())
    });
}

/// XINFO CONSUMERS key group
pub(super) fn consumers(ctx: &mut Ctx<'_>) {
    let (key, group_name) = (ctx.arg(2), ctx.arg(3));
    let now_ms = crate::resp::now_unix_ms(ctx.shared) as i64;
    with_stream(ctx, |stream, reply| {
        let Some(group) = stream.groups.get(group_name) else {
            return Err(format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                String::from_utf8_lossy(group_name),
                String::from_utf8_lossy(key)
            ));
        };
        reply.array(group.consumers.len());
        for (name, consumer) in &group.consumers {
            reply.map(3);
            reply.bulk(b"name");
            reply.bulk(name);
            reply.bulk(b"pending");
            reply.integer(consumer.pel.len() as i64);
            reply.bulk(b"idle");
            reply.integer((now_ms - consumer.seen_time_ms as i64).max(0));
        }
        Ok(())
    });
}
