//! TEMPORARY: a minimal RDB writer for the replication payload until snapshot::rdb lands.

use std::io::Write;

use store::{Expiry, ValueKind};

use crate::Shared;

fn put_len(out: &mut Vec<u8>, len: u64) {
    if len < 64 {
        out.push(len as u8);
    } else if len < 16384 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

fn put_str(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

pub(crate) fn write_rdb(shared: &Shared, out: &mut impl Write, replid: &str, offset: u64) -> std::io::Result<()> {
    let mut buf = b"REDIS0010".to_vec();
    for (k, v) in [("redis-ver", "7.0.15".to_string()), ("repl-id", replid.to_string()), ("repl-offset", offset.to_string())] {
        buf.push(0xFA);
        put_str(&mut buf, k.as_bytes());
        put_str(&mut buf, v.as_bytes());
    }
    let mut by_db: Vec<Vec<u8>> = vec![Vec::new(); 16];
    let mut cursor = 0;
    loop {
        cursor = shared.core.store.scan_items(cursor, 512, |item| {
            let Some((db, key)) = crate::keyspace::decode(item.key()) else { return };
            let value = if item.value_kind() == ValueKind::String {
                values::rdb::Value::String(item.value().to_vec())
            } else {
                match crate::resp::cluster::value_of(shared, &item) { Some(v) => v, None => return }
            };
            let payload = values::rdb::dump(&value);
            let out = &mut by_db[db as usize];
            if let Expiry::AtMs(at) = item.expiry() {
                out.push(0xFC);
                out.extend_from_slice(&at.to_le_bytes());
            }
            out.push(payload[0]);
            put_str(out, key);
            out.extend_from_slice(&payload[1..payload.len() - 10]);
        });
        if cursor == 0 { break; }
    }
    for (db, body) in by_db.iter().enumerate() {
        if body.is_empty() { continue; }
        buf.push(0xFE);
        put_len(&mut buf, db as u64);
        buf.extend_from_slice(body);
    }
    buf.push(0xFF);
    let crc = values::rdb::crc64(&buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    out.write_all(&buf)
}

/// The full copy into the (flushed) store: the RDB loader of `snapshot`.
pub(crate) fn load_rdb_file(shared: &Shared, path: &std::path::Path) -> Result<(), String> {
    crate::snapshot::load_rdb_file(shared, path).map(|_| ())
}
