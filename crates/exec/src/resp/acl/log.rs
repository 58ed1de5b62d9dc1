//! ACL LOG: the security events Redis 7.0 records, newest first: commands, keys and
//! channels a user was denied (on either port), and failed logins (AUTH, HELLO AUTH,
//! memcached SASL and text logins).
//!
//! As Redis: an event like one of the ten newest (same reason, context, object and user)
//! within 60 s bumps that entry's count, refreshes its time and client, and moves it to
//! the front; the log keeps `acllog-max-len` entries (128 by default; 0 keeps none).
//! Failed passwords are never logged: an auth entry names the user tried, not the secret.
//! An object or user name is kept up to [`FIELD_BYTES_MAX`] bytes.

use std::{collections::VecDeque, sync::atomic::AtomicUsize, sync::atomic::Ordering::Relaxed};

use parking_lot::Mutex;

use super::Denied;

/// Entries a new event is compared with (Redis's `ACL_LOG_GROUPING_MAX_TIME_DELTA` scan).
const GROUP_SCAN: usize = 10;
/// How close in time a repeat must be to join an entry.
const GROUP_WINDOW_MS: u64 = 60_000;
/// `acllog-max-len`'s default.
pub const MAX_LEN_DEFAULT: usize = 128;
/// The most bytes of an object (a key, a channel) or a user name an entry keeps: a user
/// denied a 500 MB key name must not make the log hold 128 of them (Redis keeps them whole;
/// names this long never occur in practice).
pub const FIELD_BYTES_MAX: usize = 4096;

/// What was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

/// Where the refused command ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    TopLevel,
    Multi,
    Lua,
}

#[derive(Debug)]
struct Entry {
    count: u64,
    reason: Reason,
    context: Context,
    object: Vec<u8>,
    username: Vec<u8>,
    at_ms: u64,
    client_info: String,
}

/// The log, shared by every worker.
#[derive(Debug)]
pub struct AclLog {
    entries: Mutex<VecDeque<Entry>>,
    max_len: AtomicUsize,
}

impl Default for AclLog {
    fn default() -> Self {
        AclLog { entries: Mutex::new(VecDeque::new()), max_len: AtomicUsize::new(MAX_LEN_DEFAULT) }
    }
}

/// One event to record.
pub struct Event<'a> {
    pub reason: Reason,
    pub context: Context,
    pub object: &'a [u8],
    pub username: &'a [u8],
    pub at_ms: u64,
}

impl Event<'_> {
    /// The event of a denial.
    pub(crate) fn denied<'a>(
        denied: &'a Denied,
        context: Context,
        user: &'a [u8],
        now: u64,
    ) -> Event<'a> {
        let (reason, object) = match denied {
            Denied::Command(name) => (Reason::Command, name.as_bytes()),
            Denied::Key(key) => (Reason::Key, key.as_slice()),
            Denied::Channel(channel) => (Reason::Channel, channel.as_slice()),
        };
        Event { reason, context, object, username: user, at_ms: now }
    }
}

impl AclLog {
    pub fn max_len(&self) -> usize {
        self.max_len.load(Relaxed)
    }

    /// `acllog-max-len`: the oldest entries past it go with the next event, as in Redis.
    pub fn set_max_len(&self, max_len: usize) {
        self.max_len.store(max_len, Relaxed);
    }

    /// Records `event`; `client_info` (the client's CLIENT LIST line) is asked for only
    /// when the log keeps anything.
    pub fn note(&self, event: Event<'_>, client_info: impl FnOnce() -> String) {
        let max_len = self.max_len();
        if max_len == 0 {
            self.entries.lock().clear();
            return;
        }
        let client_info = client_info();
        let object = &event.object[..event.object.len().min(FIELD_BYTES_MAX)];
        let username = &event.username[..event.username.len().min(FIELD_BYTES_MAX)];
        let mut entries = self.entries.lock();
        let same = entries.iter().take(GROUP_SCAN).position(|entry| {
            entry.reason == event.reason
                && entry.context == event.context
                && entry.object == object
                && entry.username == username
                && event.at_ms.saturating_sub(entry.at_ms) <= GROUP_WINDOW_MS
        });
        if let Some(at) = same {
            let mut entry = entries.remove(at).expect("found above");
            entry.count += 1;
            entry.at_ms = event.at_ms;
            entry.client_info = client_info;
            entries.push_front(entry);
            entries.truncate(max_len);
            return;
        }
        entries.push_front(Entry {
            count: 1,
            reason: event.reason,
            context: event.context,
            object: object.to_vec(),
            username: username.to_vec(),
            at_ms: event.at_ms,
            client_info,
        });
        entries.truncate(max_len);
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }

    /// The newest `count` entries, each as its fields for ACL LOG's reply.
    pub fn newest(&self, count: usize, now_ms: u64) -> Vec<Shown> {
        let entries = self.entries.lock();
        entries
            .iter()
            .take(count)
            .map(|entry| Shown {
                count: entry.count,
                reason: match entry.reason {
                    Reason::Command => "command",
                    Reason::Key => "key",
                    Reason::Channel => "channel",
                    Reason::Auth => "auth",
                },
                context: match entry.context {
                    Context::TopLevel => "toplevel",
                    Context::Multi => "multi",
                    Context::Lua => "lua",
                },
                object: entry.object.clone(),
                username: entry.username.clone(),
                age_secs: now_ms.saturating_sub(entry.at_ms) as f64 / 1000.0,
                client_info: entry.client_info.clone(),
            })
            .collect()
    }
}

/// An entry as ACL LOG shows it.
pub struct Shown {
    pub count: u64,
    pub reason: &'static str,
    pub context: &'static str,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    pub age_secs: f64,
    pub client_info: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event<'a>(object: &'a [u8], at_ms: u64) -> Event<'a> {
        Event { reason: Reason::Key, context: Context::TopLevel, object, username: b"u", at_ms }
    }

    /// Goal: repeats within 60 s group (count, newest first), later ones do not, and the
    /// log keeps at most its length. Method: a sequence of events at chosen times.
    #[test]
    fn groups_repeats_and_keeps_its_length() {
        let log = AclLog::default();
        log.note(event(b"a", 0), String::new);
        log.note(event(b"b", 1_000), String::new);
        log.note(event(b"a", 2_000), String::new);
        let shown = log.newest(10, 2_000);
        assert_eq!(
            shown.iter().map(|s| (s.object.clone(), s.count)).collect::<Vec<_>>(),
            vec![(b"a".to_vec(), 2), (b"b".to_vec(), 1)]
        );
        log.note(event(b"a", 70_000), String::new);
        assert_eq!(log.newest(10, 70_000)[0].count, 1, "past the window: a new entry");
        log.set_max_len(2);
        assert_eq!(log.newest(10, 70_000).len(), 3, "trimmed by the next event, not at once");
        log.note(event(b"d", 70_000), String::new);
        assert_eq!(log.newest(10, 70_000).len(), 2);
        let huge = vec![b'k'; FIELD_BYTES_MAX * 3];
        log.note(event(&huge, 70_000), String::new);
        assert_eq!(log.newest(1, 70_000)[0].object.len(), FIELD_BYTES_MAX, "a long key is cut");
        log.set_max_len(0);
        log.note(event(b"c", 70_000), || unreachable!("nothing kept: no client line asked"));
        assert!(log.newest(10, 70_000).is_empty());
    }
}
