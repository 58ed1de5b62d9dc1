//! `me <key> [b]`: memcached's human-readable item metadata.
//!
//! `ME <key> exp=<ttl or -1> la=<secs> cas=<cas> fetch=<yes|no> cls=<class> size=<bytes>`.
//! `la` is the seconds since the item's last access as memcached counts one (its write or
//! its second read); `size` and `cls` are the size and slab class memcached would give it
//! (`crawler::item_size_class`). Not memcached: a `b` key is echoed as sent rather than
//! re-encoded.

use std::io::Write;

use proto_memcache::{compose_meta_debug, meta::MetaDebug};

use crate::{
    keyspace,
    memcache::{crawler::item_size_class, last_access_secs, ttl_secs, Ctx, Session},
};

pub(in crate::memcache) fn execute(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &MetaDebug<'_>,
) {
    let key = session.meta_key(request.key, request.base64_key);
    let view = ctx.view;
    let reader = view.core().store.reader();
    let Some(item) = reader.peek(key) else {
        ctx.out.extend_from_slice(b"EN\r\n");
        return;
    };
    let now_ms = ctx.now_ms();
    let key_len = keyspace::decode(item.key()).map_or(0, |(_, key)| key.len());
    let (size, class) = item_size_class(view.core(), key_len, &item);
    let mut info = Vec::with_capacity(96);
    let _ = write!(
        info,
        "exp={} la={} cas={} fetch={} cls={class} size={size}",
        ttl_secs(item.expiry(), now_ms),
        last_access_secs(&item, now_ms),
        ctx.visible_cas(item.cas()),
        if item.accessed_before() { "yes" } else { "no" },
    );
    compose_meta_debug(request.key, &info, ctx.out);
}

#[cfg(test)]
mod tests {
    use crate::memcache::tests::Harness;

    // Goal: me answers EN on a miss and memcached's key=value line on a hit: `la` counts
    // from the write and from the second read, `size` is memcached's (48-byte header, key
    // and NUL, value and CRLF, client flags if any, CAS).
    #[test]
    fn meta_debug() {
        let mut h = Harness::new();
        h.check("me k\r\n", "EN\r\n");
        h.check("set k 0 0 2\r\nhi\r\n", "STORED\r\n");
        let cas = h.cas(b"k");
        h.check("me k\r\n", format!("ME k exp=-1 la=0 cas={cas} fetch=no cls=1 size=62\r\n"));
        h.advance_secs(3);
        h.check("get k\r\nset key 5 30 1\r\nx\r\n", "VALUE k 0 2\r\nhi\r\nEND\r\nSTORED\r\n");
        h.check("me k\r\n", format!("ME k exp=-1 la=3 cas={cas} fetch=yes cls=1 size=62\r\n"));
        h.run("get k\r\n");
        h.check("me k\r\n", format!("ME k exp=-1 la=0 cas={cas} fetch=yes cls=1 size=62\r\n"));
        let cas = h.cas(b"key");
        h.check(
            "me a2V5 b\r\n",
            format!("ME a2V5 exp=30 la=0 cas={cas} fetch=no cls=1 size=67\r\n"),
        );
    }
}
