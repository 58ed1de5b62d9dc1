//! The test harness: a real store on a manual clock, requests parsed from wire bytes as the
//! server parses them, replies compared byte for byte. The command tests live beside each
//! command's code.

use std::sync::Arc;

use proto_memcache::{parse_request, Limits, ParseError};
use store::{Config, ManualClock, Store, WhenFull, MIB};

use super::{execute, refuse_too_large, Session};
use crate::{Counters, Flow, Settings, Shared, Totals};

/// Where every test clock starts: 2023-11-14T22:13:20Z, in Unix milliseconds.
pub(crate) const T0_MS: u64 = 1_700_000_000_000;
/// The store's item size limit in tests: small, so that "too large" needs no huge value.
pub(crate) const ITEM_SIZE_MAX: usize = 4096;

pub(crate) struct Harness {
    pub(crate) shared: Shared,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) session: Session,
    /// Bytes of a rejected data block still to drop, as the server does.
    swallow: usize,
}

impl Harness {
    pub(crate) fn new() -> Harness {
        Harness::with(Settings::default(), WhenFull::Evict, 8 * MIB)
    }

    pub(crate) fn with_settings(settings: Settings) -> Harness {
        let when_full = if settings.evictions { WhenFull::Evict } else { WhenFull::Refuse };
        Harness::with(settings, when_full, 8 * MIB)
    }

    pub(crate) fn with(settings: Settings, when_full: WhenFull, memory_bytes: usize) -> Harness {
        Harness::with_item_size_max(settings, when_full, memory_bytes, ITEM_SIZE_MAX)
    }

    /// A harness whose items may be large enough to be lent (`store::loans`).
    pub(crate) fn lending_sizes() -> Harness {
        Harness::with_item_size_max(Settings::default(), WhenFull::Evict, 8 * MIB, 32 * 1024)
    }

    fn with_item_size_max(
        settings: Settings,
        when_full: WhenFull,
        memory_bytes: usize,
        item_size_max: usize,
    ) -> Harness {
        let clock = Arc::new(ManualClock::new(T0_MS));
        let config = Config {
            memory_bytes,
            item_size_max,
            segment_size_bytes: 64 * 1024,
            when_full,
            clock: clock.clone(),
            ..Config::default()
        };
        let shared = Shared::new(Store::new(config).expect("valid config"), settings, 1);
        let counters = shared.core.counters(0);
        Harness { shared, clock, counters, session: Session::default(), swallow: 0 }
    }

    /// Runs every request in `wire` and returns the replies, with `<close>` where the
    /// connection would close.
    pub(crate) fn run(&mut self, wire: impl AsRef<[u8]>) -> Vec<u8> {
        let wire = wire.as_ref();
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < wire.len() {
            if self.swallow > 0 {
                let n = self.swallow.min(wire.len() - pos);
                (self.swallow, pos) = (self.swallow - n, pos + n);
                continue;
            }
            match parse_request(&wire[pos..], &Limits::default()) {
                Ok((request, used)) => {
                    let flow = execute(
                        self.shared.memcache_view(),
                        &self.counters,
                        &mut self.session,
                        &request,
                        &mut out,
                    );
                    match flow {
                        Flow::Close => {
                            out.extend_from_slice(b"<close>");
                            break;
                        }
                        // The same request again, as the worker does once output drained.
                        Flow::Again => continue,
                        Flow::Continue => pos += used,
                        Flow::Watch(kinds) => {
                            out.extend_from_slice(format!("<watch {kinds}>").as_bytes());
                            pos += used;
                        }
                        Flow::Block | Flow::Postpone => {
                            unreachable!("memcached commands do not block")
                        }
                    }
                }
                Err(ParseError::TooLarge { skip, noreply, key_start, key_len, base64_key }) => {
                    let key = &wire[pos + key_start..][..key_len];
                    let session = &mut self.session;
                    let (view, counters) = (self.shared.memcache_view(), &self.counters);
                    refuse_too_large(view, counters, session, key, base64_key, noreply, &mut out);
                    self.swallow = skip;
                }
                Err(ParseError::Invalid { skip, reply, noreply }) => {
                    if !noreply {
                        reply.compose(&mut out);
                    }
                    self.swallow = skip;
                }
                Err(error) => panic!("transcript stops parsing at {pos}: {error:?}"),
            }
        }
        out
    }

    /// Runs `wire` and asserts the replies.
    #[track_caller]
    pub(crate) fn check(&mut self, wire: impl AsRef<[u8]>, expected: impl AsRef<[u8]>) {
        let wire = wire.as_ref();
        let got = self.run(wire);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected.as_ref()),
            "request: {}",
            String::from_utf8_lossy(wire)
        );
    }

    /// The CAS unique of a database-0 key as stored.
    pub(crate) fn cas(&self, key: &[u8]) -> u64 {
        self.shared.core.store.reader().peek(key).expect("item present").cas()
    }

    pub(crate) fn advance_secs(&self, secs: u64) {
        self.clock.advance_ms(secs * 1000);
    }

    pub(crate) fn totals(&self) -> Totals {
        self.shared.core.totals()
    }
}

// Goal: the harness frames requests as the server does (parse errors answered, rejected
// blocks swallowed, quit closes).
#[test]
fn harness_frames_like_the_server() {
    let mut h = Harness::new();
    h.check("bogus\r\nversion\r\n", format!("ERROR\r\nVERSION {}\r\n", crate::MEMCACHED_VERSION));
    // The block and the two bytes after it are dropped, whatever they are.
    h.check("set k 0 0 1\r\nab\rget k\r\n", "CLIENT_ERROR bad data chunk\r\nEND\r\n");
    h.check("mn\r\nquit\r\nmn\r\n", "MN\r\n<close>");
    assert!(h.totals().total_commands >= 4);
}

/// Runs `command` with lending open, as the worker opens it around a batch: the bytes it
/// lent (`store::loans`), and its output with them placed back, so it reads as if copied.
pub(crate) fn lending(command: impl FnOnce() -> Vec<u8>) -> (usize, Vec<u8>) {
    store::loans::open();
    let out = command();
    let lent = store::loans::lent_bytes();
    let placed = store::loans::settle(|parts| {
        let (mut whole, mut from) = (Vec::new(), 0);
        for &(at, bytes) in parts {
            whole.extend_from_slice(&out[from..at]);
            whole.extend_from_slice(bytes);
            from = at;
        }
        whole.extend_from_slice(&out[from..]);
        whole
    });
    (lent, placed.unwrap_or(out))
}
