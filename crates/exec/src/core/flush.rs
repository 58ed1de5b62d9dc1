//! Flushes: memcached `flush_all [delay]`, Redis FLUSHALL and FLUSHDB (of a database 0
//! that holds every key).

use crate::{
    counters::{bump, Counters},
    Core,
};

/// Whether `-F` (`Settings::flush_enabled` false) refuses the flush.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Switch {
    /// memcached `flush_all`.
    Honour,
    /// Redis FLUSHALL and FLUSHDB, which `-F` has never refused (memcached's switch).
    Ignore,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlushOutcome {
    Flushed,
    /// Refused by `-F`.
    Disabled,
}

/// Makes every item stored before now + `delay_ms` invisible from then on (each dialect
/// turns its own time into the delay); counts `cmd_flush`, refused or not, as memcached
/// does.
pub(crate) fn flush_all(
    core: &Core,
    counters: &Counters,
    delay_ms: u64,
    switch: Switch,
) -> FlushOutcome {
    bump(&counters.cmd_flush, 1);
    if switch == Switch::Honour && !core.settings.flush_enabled {
        return FlushOutcome::Disabled;
    }
    // A save's picture under way is abandoned, the save ordered before the flush.
    core.picture.abandon(crate::snapshot::Abandon::Flush("a flush"));
    core.store.flush_all(delay_ms);
    FlushOutcome::Flushed
}

/// A flush that empties nothing but still replaces a pending delayed one (memcached's
/// `flush_all` at a time before the server started); counted and refused as any flush.
pub(crate) fn flush_nothing(core: &Core, counters: &Counters, switch: Switch) -> FlushOutcome {
    bump(&counters.cmd_flush, 1);
    if switch == Switch::Honour && !core.settings.flush_enabled {
        return FlushOutcome::Disabled;
    }
    core.store.cancel_delayed_flush();
    FlushOutcome::Flushed
}

/// memcached's `flush_all <past Unix time>` without CAS (`-C`): flushes the items last
/// accessed (written, or read a second time) at or before that second, and replaces a
/// pending delayed flush. With CAS memcached flushes every item older than the command
/// instead (its CAS bound covers them all), which is [`flush_all`] now.
pub(crate) fn flush_accessed_through(
    core: &Core,
    counters: &Counters,
    unix_secs: u64,
    switch: Switch,
) -> FlushOutcome {
    bump(&counters.cmd_flush, 1);
    if switch == Switch::Honour && !core.settings.flush_enabled {
        return FlushOutcome::Disabled;
    }
    core.picture.abandon(crate::snapshot::Abandon::Flush("a flush"));
    core.store.cancel_delayed_flush();
    core.store.flush_accessed_through(unix_secs);
    FlushOutcome::Flushed
}
