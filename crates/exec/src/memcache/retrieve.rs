//! `get`, `gets`, `gat`, `gats`: a `VALUE` line per hit, then `END`.
//!
//! A get reads all its keys through one [`Gets`] (one store reader, no allocation per
//! key). A gat touches each hit with the touch core, which composes the `VALUE` line from
//! the item it touched, so the reply and the new expiry belong to the same item.
//!
//! memcached serves any number of keys and streams the reply. Here a call stops once it has
//! produced the session's reply chunk and returns [`Flow::Again`]; the session remembers
//! the offset of the next key, and the worker runs the request again once the output has
//! drained, so a 20,000-hit get never holds its whole reply (nor hits the output limit).

use proto_memcache::text::{
    response::{compose_end, compose_value, compose_value_head},
    Retrieve, RetrieveKind,
};

use super::{
    detail::{self, Event},
    expiry, visible_cas, Changed, Ctx, Session,
};
use store::Item;

use crate::{
    core::{
        get::{Gets, ReadAhead, BUCKETS_AHEAD},
        touch::{self, Retime, TouchOutcome},
    },
    Flow,
};

// A get's whole path is inlined into `memcache::execute` (here and `get`), a gat's kept out
// of it: left to the compiler, this call stays a call since gat tells its touches, and a
// get costs about 1% more instructions.
#[inline(always)]
pub(super) fn execute(ctx: &mut Ctx<'_>, session: &mut Session, request: &Retrieve<'_>) -> Flow {
    let chunk_end = match session.reply_chunk_bytes {
        0 => usize::MAX,
        chunk => ctx.out.len().saturating_add(chunk),
    };
    let resume_at = match request.kind.touch_exptime() {
        None => get(ctx, session, request, chunk_end),
        Some(exptime) => get_and_touch(ctx, session, request, exptime, chunk_end),
    };
    session.resume_at = resume_at.unwrap_or(0);
    if resume_at.is_some() {
        return Flow::Again;
    }
    compose_end(ctx.out);
    Flow::Continue
}

/// Answers keys from the session's resume offset on until the reply reaches `chunk_end`;
/// returns the offset to resume at, or `None` when every key is answered.
#[inline(always)]
fn get(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &Retrieve<'_>,
    chunk_end: usize,
) -> Option<usize> {
    let returns_cas = request.kind.returns_cas();
    let view = ctx.view;
    let mut gets = Gets::new(&view.core().store);
    // One key, the commonest get: read without splitting the key list.
    // Bytes of values lent rather than copied (they count towards the chunk all the same).
    let mut lent = 0;
    if let Some(key) = request.keys.single().filter(|_| session.resume_at == 0) {
        let found = gets.get(session.key(key));
        let resume_at = answer(ctx, request, key, found, returns_cas, (chunk_end, &mut lent));
        gets.finish(ctx.counters);
        return resume_at;
    }
    let mut resume_at = None;
    // A multiget in a large store reads ahead: each key's buckets and item are on their way
    // before its turn.
    if request.keys.len() > 1 && view.core().store.reads_ahead() {
        resume_at = get_ahead(ctx, session, request, &mut gets, (chunk_end, &mut lent));
    } else {
        for key in request.keys.iter_from(session.resume_at) {
            let found = gets.get(session.key(key));
            resume_at = answer(ctx, request, key, found, returns_cas, (chunk_end, &mut lent));
            if resume_at.is_some() {
                break;
            }
        }
    }
    gets.finish(ctx.counters);
    resume_at
}

/// Keys kept between their announcement and their read, so the key list is split once.
const KEY_RING: usize = 16;
const _: () = assert!(BUCKETS_AHEAD < KEY_RING);

/// [`get`]'s keys read ahead: each announced [`BUCKETS_AHEAD`] keys before its read, and
/// kept in a ring meanwhile.
#[inline(always)]
fn get_ahead(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &Retrieve<'_>,
    gets: &mut Gets<'_>,
    (chunk_end, lent): (usize, &mut usize),
) -> Option<usize> {
    let returns_cas = request.kind.returns_cas();
    let mut ahead = ReadAhead::new();
    let mut later = request.keys.iter_from(session.resume_at);
    let mut ring: [&[u8]; KEY_RING] = [&[]; KEY_RING];
    let (mut read, mut announced) = (0, 0);
    for key in later.by_ref().take(BUCKETS_AHEAD) {
        gets.announce(&mut ahead, session.key(key));
        ring[announced % KEY_RING] = key;
        announced += 1;
    }
    while read < announced {
        let key = ring[read % KEY_RING];
        read += 1;
        if let Some(next) = later.next() {
            gets.announce(&mut ahead, session.key(next));
            ring[announced % KEY_RING] = next;
            announced += 1;
        }
        let found = gets.get_announced(&mut ahead, session.key(key));
        let resume_at = answer(ctx, request, key, found, returns_cas, (chunk_end, &mut *lent));
        if resume_at.is_some() {
            return resume_at;
        }
    }
    None
}

/// A key's part of the reply (a hit's `VALUE` line and data, the data maybe lent and counted
/// in `lent`); the offset to resume at when the reply has reached `chunk_end`.
#[inline(always)]
fn answer(
    ctx: &mut Ctx<'_>,
    request: &Retrieve<'_>,
    key: &[u8],
    found: Option<Item<'_>>,
    returns_cas: bool,
    (chunk_end, lent): (usize, &mut usize),
) -> Option<usize> {
    let view = ctx.view;
    detail::record(&view.memcache().prefix_stats, key, Event::Get { hit: found.is_some() });
    let item = found?;
    let cas = returns_cas.then(|| visible_cas(view.core(), item.cas()));
    *lent += compose_hit(key, &item, cas, ctx.out);
    (ctx.out.len() + *lent / LENT_CHUNK_SHARE >= chunk_end).then(|| request.keys.offset_after(key))
}

/// Lent bytes count for this share of their size towards a multiget's reply chunk: they
/// are not copied, and a call's loans leave in one vectored send, so eight 64 KiB chunks
/// of 10 KB values (eight handler calls and sends, the key line parsed again each time)
/// become one. What the kernel does not take of them is copied into the output, so a
/// client that does not read holds at most this many chunks' worth.
const LENT_CHUNK_SHARE: usize = 8;

/// Appends a hit's `VALUE` line and data; a large value is lent instead when the worker
/// lends (sent from item memory, see `store::loans`). Returns the bytes lent.
#[inline(always)]
fn compose_hit(key: &[u8], item: &Item<'_>, cas: Option<u64>, out: &mut Vec<u8>) -> usize {
    let value = item.value();
    if value.len() < store::loans::VALUE_BYTES_MIN {
        compose_value(key, item.flags(), value, cas, out);
        return 0;
    }
    compose_value_head(key, item.flags(), value.len(), cas, out);
    let lent = item.lend_value(out.len());
    if !lent {
        out.extend_from_slice(value);
    }
    out.extend_from_slice(b"\r\n");
    if lent {
        value.len()
    } else {
        0
    }
}

/// As [`get`], touching each hit. memcached counts a gat as touches, not gets
/// (`cmd_touch`, `touch_hits`). The keys it touched are kept for the Redis clients that
/// track them and for the replicas ([`Changed::Keys`]), while there are any.
#[inline(never)]
fn get_and_touch(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &Retrieve<'_>,
    exptime: i64,
    chunk_end: usize,
) -> Option<usize> {
    let returns_cas = matches!(request.kind, RetrieveKind::Gats { .. });
    let retime = Retime::To(expiry(exptime, ctx.now_ms()));
    let view = ctx.view;
    session.touched.clear();
    for key in request.keys.iter_from(session.resume_at) {
        let outcome = touch::get_and_touch(
            &view.core().store,
            session.key(key),
            retime,
            ctx.out,
            |item, out| {
                let cas = returns_cas.then(|| visible_cas(view.core(), item.cas()));
                compose_value(key, item.flags(), item.value(), cas, out);
            },
        );
        // A refused rewrite leaves the key out of the reply: count it as missed.
        let counted = match outcome {
            TouchOutcome::Refused(_) => TouchOutcome::NotFound,
            outcome => outcome,
        };
        touch::count(ctx.counters, counted);
        let hit = counted == TouchOutcome::Touched;
        // Kept for the tracking clients and for the replicas (the touch moved its TTL).
        if hit && (view.redis().tracking_any() || view.core().repl.journaling()) {
            ctx.changed = Changed::Keys;
            session.touched.push(request.keys.offset_after(key) - key.len());
        }
        detail::record(&view.memcache().prefix_stats, key, Event::Get { hit });
        if ctx.out.len() >= chunk_end {
            return Some(request.keys.offset_after(key));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::{memcache::tests::Harness, Settings};

    // Goal: get/gets answer hits in request order, skip misses, end with END; gets adds CAS.
    #[test]
    fn get_and_gets() {
        let mut h = Harness::new();
        h.check("get a\r\n", "END\r\n");
        h.check("set a 5 0 2\r\nhi\r\nset c 0 0 0\r\n\r\n", "STORED\r\nSTORED\r\n");
        h.check(
            "get a b c a\r\n",
            "VALUE a 5 2\r\nhi\r\nVALUE c 0 0\r\n\r\nVALUE a 5 2\r\nhi\r\nEND\r\n",
        );
        let cas = h.cas(b"a");
        h.check("gets a b\r\n", format!("VALUE a 5 2 {cas}\r\nhi\r\nEND\r\n"));
        let totals = h.totals();
        assert_eq!((totals.cmd_get, totals.get_hits, totals.get_misses), (7, 4, 3));
    }

    // Goal: a multiget answered in chunks (the session's reply chunk reached after each
    // few hits, the request run again) sends the same bytes and counts as one command with
    // every key read once.
    #[test]
    fn chunked_multiget_is_the_same_reply() {
        let mut h = Harness::new();
        let mut wire = String::new();
        for i in 0..50 {
            wire.push_str(&format!("set k{i} {i} 0 3\r\nv{i:02}\r\n"));
        }
        h.run(wire);
        let keys: String = (0..60).map(|i| format!(" k{i}")).collect();
        let requests = [format!("get{keys}\r\n"), format!("gat 0{keys}\r\n")];
        let whole: Vec<_> = requests.iter().map(|request| h.run(request)).collect();
        let before = h.totals();
        h.session.set_reply_chunk(40);
        for (request, whole) in requests.iter().zip(&whole) {
            assert_eq!(&h.run(request), whole);
        }
        let after = h.totals();
        assert_eq!(after.cmd_get - before.cmd_get, 60);
        assert_eq!(after.cmd_touch - before.cmd_touch, 60);
        assert_eq!(after.total_commands - before.total_commands, 2);
    }

    // Goal: in a store large enough for reads to look ahead, a multiget answers as the
    // same keys read one by one (hits, misses, repeats, an escaped NUL-led key), whole or
    // in chunks, and counts every key.
    #[test]
    fn multiget_reading_ahead_is_single_gets_in_a_row() {
        use store::{WhenFull, MIB};
        let mut h = Harness::with(Settings::default(), WhenFull::Evict, 16 * MIB);
        let value = "v".repeat(1000);
        for i in 0..5_000 {
            h.run(format!("set k{i} {i} 0 1000\r\n{value}\r\n"));
        }
        h.run(format!("set \0n 7 0 1000\r\n{value}\r\n"));
        assert!(h.shared.core.store.reads_ahead(), "the store is too small to read ahead");
        let keys: Vec<String> = (0..70)
            .map(|i| match i % 7 {
                0 => format!("missing{i}"),
                1 => "\0n".to_string(),
                2 => "k3".to_string(),
                _ => format!("k{}", i * 71),
            })
            .collect();
        let one_by_one: Vec<u8> = keys
            .iter()
            .flat_map(|key| {
                let reply = h.run(format!("get {key}\r\n"));
                reply[..reply.len() - b"END\r\n".len()].to_vec()
            })
            .chain(b"END\r\n".iter().copied())
            .collect();
        let before = h.totals();
        let request = format!("get {}\r\n", keys.join(" "));
        assert_eq!(h.run(&request), one_by_one);
        h.session.set_reply_chunk(3000);
        assert_eq!(h.run(&request), one_by_one);
        let after = h.totals();
        assert_eq!(after.cmd_get - before.cmd_get, 140);
        assert_eq!(after.get_misses - before.get_misses, 20);
    }

    // Goal: with -C, CAS values read 0 (memcached's `settings.use_cas` off).
    #[test]
    fn gets_without_cas() {
        let mut h = Harness::with_settings(Settings { cas_enabled: false, ..Settings::default() });
        h.check(
            "set a 0 0 1\r\nx\r\ngets a\r\ngats 0 a\r\n",
            "STORED\r\nVALUE a 0 1 0\r\nx\r\nEND\r\nVALUE a 0 1 0\r\nx\r\nEND\r\n",
        );
    }

    // Goal: gat/gats return the item and set its TTL, keep its CAS, and count as touches.
    #[test]
    fn gat_and_gats() {
        let mut h = Harness::new();
        h.check("set a 1 100 1\r\nx\r\n", "STORED\r\n");
        let cas = h.cas(b"a");
        h.check("gat 10 a missing\r\n", "VALUE a 1 1\r\nx\r\nEND\r\n");
        h.check("gats 0 a\r\n", format!("VALUE a 1 1 {cas}\r\nx\r\nEND\r\n"));
        h.check("gat 10 a\r\n", "VALUE a 1 1\r\nx\r\nEND\r\n");
        h.advance_secs(9);
        h.check("get a\r\n", "VALUE a 1 1\r\nx\r\nEND\r\n");
        h.advance_secs(1);
        h.check("get a\r\n", "END\r\n");
        // A negative exptime returns the item one last time.
        h.check(
            "set b 0 0 1\r\ny\r\ngat -1 b\r\nget b\r\n",
            "STORED\r\nVALUE b 0 1\r\ny\r\nEND\r\nEND\r\n",
        );
        let totals = h.totals();
        assert_eq!((totals.cmd_touch, totals.touch_hits, totals.touch_misses), (5, 4, 1));
        assert_eq!(totals.cmd_get, 3);
    }

    // Goal: keys reach the store in database 0's namespace: plain keys as they are, keys
    // starting with a NUL byte escaped, and either way read back as sent.
    #[test]
    fn keys_go_through_the_keyspace() {
        let mut h = Harness::new();
        h.check("set \0k 0 0 1\r\nx\r\nget \0k\r\n", "STORED\r\nVALUE \0k 0 1\r\nx\r\nEND\r\n");
        let reader = h.shared.core.store.reader();
        assert!(reader.peek(b"\0k").is_none());
        assert!(reader.peek(b"\0\0\0k").is_some());
    }
}
