//! `me <key> [b]`: memcached's human-readable item metadata.
//!
//! `ME <key> exp=<ttl or -1> la=<secs> cas=<cas> fetch=<yes|no> cls=<class> size=<bytes>`.
//! Not memcached: `la` is 0 (no access times are kept), `cls` is 1 (the store has no slab
//! classes) and `size` counts key and value bytes, without an item header; a `b` key is
//! echoed as sent rather than re-encoded.

use std::io::Write;

use proto_memcache::{compose_meta_debug, meta::MetaDebug};

use crate::memcache::{ttl_secs, Ctx, Session};

pub(in crate::memcache) fn execute(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &MetaDebug<'_>,
) {
    let key = session.meta_key(request.key, request.base64_key);
    let shared = ctx.shared;
    let reader = shared.store.reader();
    let Some(item) = reader.peek(key) else {
        ctx.out.extend_from_slice(b"EN\r\n");
        return;
    };
    let mut info = Vec::with_capacity(96);
    let _ = write!(
        info,
        "exp={} la=0 cas={} fetch={} cls=1 size={}",
        ttl_secs(item.expiry(), ctx.now_ms()),
        ctx.visible_cas(item.cas()),
        if item.accessed_before() { "yes" } else { "no" },
        item.key().len() + item.value().len(),
    );
    compose_meta_debug(request.key, &info, ctx.out);
}

#[cfg(test)]
mod tests {
    use crate::memcache::tests::Harness;

    // Goal: me answers EN on a miss and memcached's key=value line on a hit.
    #[test]
    fn meta_debug() {
        let mut h = Harness::new();
        h.check("me k\r\n", "EN\r\n");
        h.check("set k 0 0 2\r\nhi\r\n", "STORED\r\n");
        let cas = h.cas(b"k");
        h.check("me k\r\n", format!("ME k exp=-1 la=0 cas={cas} fetch=no cls=1 size=3\r\n"));
        h.check("get k\r\nset key 0 30 1\r\nx\r\n", "VALUE k 0 2\r\nhi\r\nEND\r\nSTORED\r\n");
        h.check("me k\r\n", format!("ME k exp=-1 la=0 cas={cas} fetch=yes cls=1 size=3\r\n"));
        let cas = h.cas(b"key");
        h.check(
            "me a2V5 b\r\n",
            format!("ME a2V5 exp=30 la=0 cas={cas} fetch=no cls=1 size=4\r\n"),
        );
    }
}
