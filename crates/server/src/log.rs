//! Logging: `tracing` events written to stderr, one line per event with a UTC timestamp, as
//! text or JSON (`--log-format`).
//!
//! The level follows memcached's verbosity and is read live from `MemcacheState::verbosity`, so the
//! `verbosity` command changes it on a running server:
//!
//! | verbosity | memcached                      | level shown      |
//! |-----------|--------------------------------|------------------|
//! | 0         | errors at start-up             | warn and error   |
//! | 1 (`-v`)  | errors and warnings            | info             |
//! | 2 (`-vv`) | also client commands           | debug            |
//! | 3 (`-vvv`)| also internal state            | trace            |
//!
//! An event whose level is off is dropped before its message is formatted; the request
//! path logs nothing (connections open and close at debug).

use std::sync::{atomic::Ordering, Arc};

use exec::Shared;

use crate::config::LogFormat;
use tracing::{level_filters::LevelFilter, Level, Metadata};
use tracing_subscriber::{
    filter::DynFilterFn, layer::SubscriberExt, util::SubscriberInitExt, Layer as _,
};

/// The most detailed level shown at `verbosity`.
pub fn level_for(verbosity: u32) -> Level {
    match verbosity {
        0 => Level::WARN,
        1 => Level::INFO,
        2 => Level::DEBUG,
        _ => Level::TRACE,
    }
}

/// Installs the process's subscriber. The filter reads `shared.verbosity` on every event
/// that reaches it, which are start-up, signal and connection events only.
pub fn init(shared: Arc<Shared>, format: LogFormat) {
    let filter = DynFilterFn::new(move |metadata: &Metadata<'_>, _| {
        let verbosity = shared.memcache.verbosity.load(Ordering::Relaxed);
        *metadata.level() <= level_for(verbosity)
    })
    .with_max_level_hint(LevelFilter::TRACE);
    let base = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false);
    let registry = tracing_subscriber::registry();
    // `try_init`: a second call (tests) keeps the first subscriber.
    let _ = match format {
        LogFormat::Text => registry.with(base.with_filter(filter)).try_init(),
        LogFormat::Json => registry.with(base.json().with_filter(filter)).try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_maps_to_memcacheds_levels() {
        assert_eq!(level_for(0), Level::WARN);
        assert_eq!(level_for(1), Level::INFO);
        assert_eq!(level_for(2), Level::DEBUG);
        assert_eq!(level_for(3), Level::TRACE);
        assert_eq!(level_for(9), Level::TRACE);
    }
}
