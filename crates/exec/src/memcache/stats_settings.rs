//! `stats settings`: memcached 1.6.18's fields in its order (as built with extstore and TLS,
//! as distributions ship it), then Spinel's own.
//!
//! Settings Spinel has are reported as they are; memcached's run-time tuning (`slabs
//! automove`, `lru ...`, `lru_crawler ...`, `stats detail`) as last set; the rest (slab
//! sizing, extstore, TLS, which Spinel does not have) with memcached's defaults.

use proto_memcache::text::response::{compose_stat, compose_stat_u64};

use super::{tune::Tunables, Ctx};
use crate::{shared::SslSettings, Settings};

/// memcached's largest slab chunk (half its 1 MiB page): `slab_chunk_max`.
const SLAB_CHUNK_MAX_BYTES: u64 = 512 * 1024;

fn yes_no(on: bool) -> &'static [u8] {
    if on {
        b"yes"
    } else {
        b"no"
    }
}

/// A C `%.<digits>f` of a double (Rust spells NaN differently).
fn fixed(value: f64, digits: usize) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    format!("{value:.digits$}")
}

pub(super) fn compose(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    let tunables = view.memcache().tunables.lock().clone();
    let s = &view.core().settings;
    let out = &mut *ctx.out;
    let verbosity = view.memcache().verbosity.load(std::sync::atomic::Ordering::Relaxed);
    compose_stat_u64(b"maxbytes", view.core().maxbytes(), out);
    compose_stat_u64(b"maxconns", view.core().max_connections(), out);
    compose_stat_u64(b"tcpport", s.port.into(), out);
    compose_stat_u64(b"udpport", s.udp_port.into(), out);
    compose_stat(b"inter", s.listen.as_bytes(), out);
    compose_stat_u64(b"verbosity", verbosity.into(), out);
    compose_stat_u64(b"oldest", 0, out);
    // The store's, which Redis `CONFIG SET maxmemory-policy` may have changed since `-M`.
    let evictions = view.core().store.when_full() == store::WhenFull::Evict;
    compose_stat(b"evictions", if evictions { b"on" } else { b"off" }, out);
    let socket = s.unix_socket.as_deref().unwrap_or("NULL");
    compose_stat(b"domain_socket", socket.as_bytes(), out);
    compose_stat(b"umask", format!("{:o}", s.unix_mask).as_bytes(), out);
    compose_stat(b"shutdown_command", yes_no(s.shutdown_command), out);
    compose_stat(b"growth_factor", b"1.25", out);
    compose_stat_u64(b"chunk_size", 48, out);
    compose_stat_u64(b"num_threads", s.threads.into(), out);
    compose_stat_u64(b"num_threads_per_udp", s.threads.into(), out);
    compose_stat(b"stat_key_prefix", &[view.memcache().prefix_stats.delimiter()], out);
    compose_stat(b"detail_enabled", yes_no(view.memcache().prefix_stats.enabled()), out);
    compose_stat_u64(b"reqs_per_event", s.reqs_per_event.into(), out);
    compose_stat(b"cas_enabled", yes_no(s.cas_enabled), out);
    compose_stat_u64(b"tcp_backlog", s.backlog.into(), out);
    compose_stat(b"binding_protocol", s.binding_protocol.as_bytes(), out);
    compose_stat(b"auth_enabled_sasl", yes_no(s.auth_sasl), out);
    let auth_file = s.auth_file.as_deref().unwrap_or("no");
    compose_stat(b"auth_enabled_ascii", auth_file.as_bytes(), out);
    compose_stat_u64(b"item_size_max", s.item_size_max, out);
    compose_stat(b"maxconns_fast", yes_no(s.memcached_features.maxconns_fast), out);
    compose_stat_u64(b"hashpower_init", 0, out);
    tuning(s, &tunables, out);
    compose_stat_u64(b"idle_timeout", view.core().idle_timeout_secs(), out);
    compose_stat_u64(b"watcher_logbuf_size", 262_144, out);
    compose_stat_u64(b"worker_logbuf_size", 65_536, out);
    compose_stat_u64(b"read_buf_mem_limit", s.read_buf_mem_limit_bytes, out);
    let track_sizes = view.memcache().track_sizes.load(std::sync::atomic::Ordering::Relaxed);
    compose_stat(b"track_sizes", yes_no(track_sizes), out);
    compose_stat(b"inline_ascii_response", b"no", out);
    absent_features(s.ssl.as_ref(), out);
    let memory_file = s.memory_file.as_deref().unwrap_or("(null)");
    compose_stat(b"memory_file", memory_file.as_bytes(), out);
    spinel(ctx);
}

/// From `slab_reassign` to `temporary_ttl`.
fn tuning(s: &Settings, t: &Tunables, out: &mut Vec<u8>) {
    compose_stat(b"slab_reassign", yes_no(s.memcached_features.slab_reassign), out);
    compose_stat_u64(b"slab_automove", t.slab_automove.into(), out);
    compose_stat(b"slab_automove_ratio", fixed(t.slab_automove_ratio, 2).as_bytes(), out);
    compose_stat_u64(b"slab_automove_window", 30, out);
    compose_stat_u64(b"slab_chunk_max", SLAB_CHUNK_MAX_BYTES, out);
    compose_stat(b"lru_crawler", yes_no(t.lru_crawler), out);
    compose_stat_u64(b"lru_crawler_sleep", t.lru_crawler_sleep_us.into(), out);
    compose_stat_u64(b"lru_crawler_tocrawl", t.lru_crawler_tocrawl.into(), out);
    compose_stat_u64(b"tail_repair_time", 0, out);
    compose_stat(b"flush_enabled", yes_no(s.flush_enabled), out);
    compose_stat(b"dump_enabled", yes_no(s.dump_enabled), out);
    compose_stat(b"hash_algorithm", b"xxh3", out);
    compose_stat(b"lru_maintainer_thread", yes_no(s.memcached_features.lru_maintainer), out);
    compose_stat(b"lru_segmented", yes_no(t.lru_segmented), out);
    compose_stat_u64(b"hot_lru_pct", t.hot_lru_pct.into(), out);
    compose_stat_u64(b"warm_lru_pct", t.warm_lru_pct.into(), out);
    compose_stat(b"hot_max_factor", fixed(t.hot_max_factor, 2).as_bytes(), out);
    compose_stat(b"warm_max_factor", fixed(t.warm_max_factor, 2).as_bytes(), out);
    compose_stat(b"temp_lru", yes_no(t.temp_lru), out);
    compose_stat_u64(b"temporary_ttl", t.temporary_ttl_secs.unsigned_abs(), out);
}

/// extstore, off, and TLS: memcached's defaults unless `-Z` is on.
fn absent_features(ssl: Option<&SslSettings>, out: &mut Vec<u8>) {
    let fields: &[(&[u8], &[u8])] = &[
        (b"ext_item_size", b"512"),
        (b"ext_item_age", b"4294967295"),
        (b"ext_low_ttl", b"0"),
        (b"ext_recache_rate", b"2000"),
        (b"ext_wbuf_size", b"4194304"),
        (b"ext_compact_under", b"0"),
        (b"ext_drop_under", b"0"),
        (b"ext_max_sleep", b"1000000"),
        (b"ext_max_frag", b"0.80"),
        (b"slab_automove_freeratio", b"0.010"),
        (b"ext_drop_unread", b"no"),
    ];
    for (name, value) in fields {
        compose_stat(name, value, out);
    }
    match ssl {
        Some(ssl) => tls_settings(ssl, out),
        None => no_tls_settings(out),
    }
    compose_stat(b"num_napi_ids", b"(null)", out);
}

/// `-Z`'s lines as memcached prints them (what Spinel does not configure at its defaults).
fn tls_settings(ssl: &SslSettings, out: &mut Vec<u8>) {
    compose_stat(b"ssl_enabled", b"yes", out);
    compose_stat(b"ssl_chain_cert", ssl.chain_cert.as_bytes(), out);
    compose_stat(b"ssl_key", ssl.key.as_bytes(), out);
    compose_stat_u64(b"ssl_verify_mode", ssl.verify_mode.into(), out);
    compose_stat(b"ssl_keyformat", b"1", out);
    compose_stat(b"ssl_ciphers", b"NULL", out);
    compose_stat(b"ssl_ca_cert", ssl.ca_cert.as_deref().unwrap_or("NULL").as_bytes(), out);
    compose_stat(b"ssl_wbuf_size", b"16384", out);
    compose_stat(b"ssl_session_cache", b"no", out);
    compose_stat(b"ssl_kernel_tls", b"no", out);
    compose_stat(b"ssl_min_version", ssl.min_version.as_bytes(), out);
}

fn no_tls_settings(out: &mut Vec<u8>) {
    let fields: &[(&[u8], &[u8])] = &[
        (b"ssl_enabled", b"no"),
        (b"ssl_chain_cert", b"(null)"),
        (b"ssl_key", b"(null)"),
        (b"ssl_verify_mode", b"0"),
        (b"ssl_keyformat", b"1"),
        (b"ssl_ciphers", b"NULL"),
        (b"ssl_ca_cert", b"NULL"),
        (b"ssl_wbuf_size", b"16384"),
        (b"ssl_session_cache", b"no"),
        (b"ssl_kernel_tls", b"no"),
        (b"ssl_min_version", b"tlsv1.2"),
    ];
    for (name, value) in fields {
        compose_stat(name, value, out);
    }
}

/// Spinel's own settings, after memcached's.
fn spinel(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    let s = &view.core().settings;
    let out = &mut *ctx.out;
    compose_stat_u64(b"resp_port", s.resp_port.into(), out);
    if !s.skipped_default_ports.is_empty() {
        compose_stat(b"skipped_default_ports", s.skipped_default_ports.as_bytes(), out);
    }
    compose_stat(b"io_backend", s.io_backend.as_bytes(), out);
    compose_stat_u64(b"busy_poll_us", s.busy_poll_us, out);
    compose_stat(b"pin_threads", yes_no(s.pin), out);
    compose_stat_u64(b"segment_size", view.core().store.config().segment_size_bytes as u64, out);
}
