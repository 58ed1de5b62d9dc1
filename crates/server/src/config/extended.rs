//! memcached's `-o key=value,key2` suboptions: the ones with a meaning in Spinel
//! (`idle_timeout`, `read_buf_mem_limit`, `-Z`'s `ssl_*`) apply, the ones that mean nothing
//! here are accepted with a start-up warning so an existing command line starts, and any
//! other is refused.

use std::{fmt, str::FromStr};

use serde::{Serialize, Serializer};

/// memcached `-o` suboptions that have no meaning in Spinel: accepted with a warning, so an
/// existing command line starts. `idle_timeout` and `read_buf_mem_limit` are not here: they
/// have a meaning.
const IGNORED_SUBOPTIONS: &[&str] = &[
    "maxconns_fast",
    "no_maxconns_fast",
    "hashpower",
    "tail_repair_time",
    "lru_crawler",
    "no_lru_crawler",
    "lru_crawler_sleep",
    "lru_crawler_tocrawl",
    "lru_maintainer",
    "no_lru_maintainer",
    "lru_segmented",
    "no_lru_segmented",
    "hot_lru_pct",
    "warm_lru_pct",
    "hot_max_factor",
    "warm_max_factor",
    "temporary_ttl",
    "watcher_logbuf_size",
    "worker_logbuf_size",
    "track_sizes",
    "no_hashexpand",
    "modern",
    "no_modern",
    "slab_reassign",
    "no_slab_reassign",
    "slab_automove",
    "no_slab_automove",
    "slab_automove_ratio",
    "slab_automove_window",
    "slab_chunk_max",
    "slab_sizes",
    "inline_ascii_response",
    "no_inline_ascii_response",
    "resp_obj_mem_limit",
    "drop_privileges",
    "no_drop_privileges",
    "meta_response_old",
    "lru_pct_hot",
    "ssl_keyformat",
    "ssl_ciphers",
    "ssl_wbuf_size",
    "ssl_session_cache",
    "ssl_kernel_tls",
    "ext_path",
    "ext_page_size",
    "ext_wbuf_size",
    "ext_threads",
    "ext_io_depth",
    "ext_item_size",
    "ext_item_age",
    "ext_low_ttl",
    "ext_recache_rate",
    "ext_compact_under",
    "ext_drop_under",
    "ext_max_sleep",
    "ext_max_frag",
    "ext_drop_unread",
    "slab_automove_freeratio",
    "no_slab_automove_freeratio",
];

/// One `-o` argument: its suboptions in order, each with its value ("" when it has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extended(pub Vec<(String, String)>);

/// What one suboption does here.
pub enum Effect {
    IdleTimeout(u64),
    /// One of `-Z`'s settings (`ssl_chain_cert`, ...), checked by `tls.rs`.
    Ssl,
    /// Megabytes, as memcached reads it.
    ReadBufMemLimit(u64),
    Ignored,
}

/// Classifies a suboption; an unknown one is an error naming it.
pub fn effect(key: &str, value: &str) -> Result<Effect, String> {
    if key == "idle_timeout" {
        let secs =
            value.parse().map_err(|_| format!("invalid value for -o idle_timeout: '{value}'"))?;
        Ok(Effect::IdleTimeout(secs))
    } else if key == "read_buf_mem_limit" {
        let mb = value
            .parse()
            .map_err(|_| format!("could not parse argument to read_buf_mem_limit: '{value}'"))?;
        Ok(Effect::ReadBufMemLimit(mb))
    } else if super::tls::SSL_SUBOPTIONS.contains(&key) {
        super::tls::check_suboption(key, value)?;
        Ok(Effect::Ssl)
    } else if IGNORED_SUBOPTIONS.contains(&key) || key.starts_with("ext_") {
        Ok(Effect::Ignored)
    } else {
        Err(format!("unknown -o option '{key}' (not a memcached option either)"))
    }
}

impl FromStr for Extended {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let mut items = Vec::new();
        for item in text.split(',').filter(|s| !s.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            effect(key, value)?;
            items.push((key.to_string(), value.to_string()));
        }
        Ok(Extended(items))
    }
}

impl fmt::Display for Extended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (key, value)) in self.0.iter().enumerate() {
            let comma = if i == 0 { "" } else { "," };
            match value.as_str() {
                "" => write!(f, "{comma}{key}")?,
                _ => write!(f, "{comma}{key}={value}")?,
            }
        }
        Ok(())
    }
}

impl Serialize for Extended {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
