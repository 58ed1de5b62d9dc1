//! INFO [section ...]: Redis's field names for what Spinel has; sections it has nothing
//! for are left out.
//!
//! Keyspace line: while only database 0 is in use, `keys` is `Store::len` and `expires`
//! is reported as 0 (counting expiring keys would mean walking the store on every INFO).
//! Once another database has been selected, INFO walks every key once to count keys and
//! expiring keys per database, so it costs time in proportion to the store.

use std::{fmt::Write as _, sync::atomic::Ordering};

use store::Expiry;

use super::{ttl, Ctx};
use crate::{keyspace, Shared, Totals, REDIS_VERSION};

/// Sections in the order INFO prints them.
const SECTIONS: &[&str] =
    &["server", "clients", "memory", "persistence", "stats", "replication", "keyspace"];

pub(super) fn info(ctx: &mut Ctx<'_>) {
    let wanted: Vec<&str> = if ctx.argc() == 1 {
        SECTIONS.to_vec()
    } else {
        let asked: Vec<Vec<u8>> =
            (1..ctx.argc()).map(|i| ctx.arg(i).to_ascii_lowercase()).collect();
        let everything =
            asked.iter().any(|a| matches!(a.as_slice(), b"all" | b"everything" | b"default"));
        SECTIONS
            .iter()
            .copied()
            .filter(|s| everything || asked.iter().any(|a| a == s.as_bytes()))
            .collect()
    };
    let text = render(ctx.shared, &wanted);
    ctx.reply().verbatim(b"txt", text.as_bytes());
}

fn render(shared: &Shared, sections: &[&str]) -> String {
    let totals = shared.totals();
    let mut text = String::with_capacity(1024);
    for (index, section) in sections.iter().enumerate() {
        if index > 0 {
            text.push_str("\r\n");
        }
        let mut title = section.to_string();
        title[..1].make_ascii_uppercase();
        let _ = write!(text, "# {title}\r\n");
        match *section {
            "server" => server(shared, &mut text),
            "clients" => clients(shared, &mut text),
            "memory" => memory(shared, &mut text),
            "persistence" => field(&mut text, "loading", 0),
            "stats" => stats(shared, &totals, &mut text),
            "replication" => {
                field(&mut text, "role", "master");
                field(&mut text, "connected_slaves", 0);
            }
            _ => keyspace_lines(shared, &mut text),
        }
    }
    text
}

fn field(text: &mut String, name: &str, value: impl std::fmt::Display) {
    let _ = write!(text, "{name}:{value}\r\n");
}

fn server(shared: &Shared, text: &mut String) {
    let uptime = shared.uptime_secs();
    field(text, "redis_version", REDIS_VERSION);
    field(text, "redis_mode", "standalone");
    field(text, "spinel_version", env!("CARGO_PKG_VERSION"));
    field(text, "arch_bits", usize::BITS);
    field(text, "process_id", std::process::id());
    field(text, "tcp_port", shared.settings.resp_port);
    field(text, "server_time_usec", ttl::now_ms(shared) * 1000);
    field(text, "uptime_in_seconds", uptime);
    field(text, "uptime_in_days", uptime / 86_400);
    field(text, "io_threads_active", u8::from(shared.settings.threads > 1));
}

fn clients(shared: &Shared, text: &mut String) {
    field(text, "connected_clients", shared.clients.len());
    field(text, "maxclients", shared.settings.max_connections);
}

fn memory(shared: &Shared, text: &mut String) {
    let clients_bytes = shared.conn_buffer_bytes.load(std::sync::atomic::Ordering::Relaxed);
    field(text, "used_memory", shared.store.memory_used_bytes() as u64 + clients_bytes);
    field(text, "mem_clients_normal", clients_bytes);
    field(text, "maxmemory", shared.settings.memory_limit_bytes);
    field(text, "maxmemory_policy", super::config::eviction_policy(shared));
}

fn stats(shared: &Shared, totals: &Totals, text: &mut String) {
    let store = shared.store.stats();
    field(text, "total_connections_received", totals.total_connections);
    field(text, "total_commands_processed", totals.total_commands);
    field(text, "total_net_input_bytes", totals.bytes_read);
    field(text, "total_net_output_bytes", totals.bytes_written);
    field(text, "rejected_connections", totals.rejected_connections);
    field(text, "expired_keys", store.expired_reclaimed);
    field(text, "evicted_keys", store.evictions);
    field(text, "keyspace_hits", totals.get_hits);
    field(text, "keyspace_misses", totals.get_misses);
    field(text, "total_error_replies", totals.protocol_errors);
}

fn keyspace_lines(shared: &Shared, text: &mut String) {
    let mut counts = [(0u64, 0u64); keyspace::DATABASES as usize];
    if shared.nonzero_db_selected.load(Ordering::SeqCst) {
        count_by_walk(shared, &mut counts);
    } else {
        counts[0].0 = shared.store.len() as u64;
    }
    for (db, (keys, expires)) in counts.iter().enumerate() {
        if *keys > 0 {
            let _ = write!(text, "db{db}:keys={keys},expires={expires},avg_ttl=0\r\n");
        }
    }
}

/// (keys, keys with an expiry) per database, from one walk over the store.
fn count_by_walk(shared: &Shared, counts: &mut [(u64, u64)]) {
    let reader = shared.store.reader();
    let mut cursor = 0;
    loop {
        cursor = shared.store.scan(cursor, 1024, |stored| {
            let Some((db, _)) = keyspace::decode(stored) else {
                return;
            };
            let expires = reader.peek(stored).is_some_and(|item| item.expiry() != Expiry::Never);
            let entry = &mut counts[db as usize];
            entry.0 += 1;
            entry.1 += u64::from(expires);
        });
        if cursor == 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::Harness;

    /// Goal: INFO's sections and Redis field names; section selection; RESP3 verbatim.
    #[test]
    fn info_sections() {
        let mut h = Harness::new();
        h.check(&[("SET a 1", "+OK\r\n"), ("GET a", "$1\r\n1\r\n"), ("GET b", "$-1\r\n")]);
        let all = h.run("INFO");
        for name in [
            "# Server\r\nredis_version:7.2.0\r\n",
            "\r\nprocess_id:",
            "\r\ntcp_port:6379\r\n",
            "\r\nuptime_in_seconds:",
            "\r\n\r\n# Clients\r\nconnected_clients:0\r\n",
            "\r\nused_memory:",
            "\r\nmaxmemory:67108864\r\n",
            "\r\ntotal_connections_received:0\r\n",
            "\r\ntotal_commands_processed:4\r\n",
            "\r\nkeyspace_hits:1\r\nkeyspace_misses:1\r\n",
            "\r\nexpired_keys:0\r\n",
            "\r\nevicted_keys:0\r\n",
            "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n",
        ] {
            assert!(all.contains(name), "{name:?} missing from {all}");
        }
        let keyspace = h.run("INFO keyspace");
        assert_eq!(keyspace, "$44\r\n# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n\r\n");
        let two = h.run("INFO CLIENTS Server");
        assert!(two.contains("# Server\r\n") && two.contains("# Clients\r\n"));
        assert!(!two.contains("# Stats"));
        assert_eq!(h.run("INFO nosuch"), "$0\r\n\r\n");
        assert!(h.run("INFO everything").contains("# Keyspace"));
        h.session.protocol = proto_resp::Protocol::Resp3;
        assert_eq!(
            h.run("INFO keyspace"),
            "=48\r\ntxt:# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n\r\n"
        );
    }

    /// Goal: once another database is in use, the keyspace section counts per database,
    /// expiring keys included.
    #[test]
    fn info_keyspace_per_database() {
        let mut h = Harness::new();
        h.check(&[
            ("SET a 1 EX 100", "+OK\r\n"),
            ("SELECT 2", "+OK\r\n"),
            ("MSET x 1 y 2", "+OK\r\n"),
            ("EXPIRE y 50", ":1\r\n"),
        ]);
        let text = h.run("INFO keyspace");
        assert!(text.ends_with(
            "# Keyspace\r\ndb0:keys=1,expires=1,avg_ttl=0\r\ndb2:keys=2,expires=1,avg_ttl=0\r\n\r\n"
        ));
    }
}
