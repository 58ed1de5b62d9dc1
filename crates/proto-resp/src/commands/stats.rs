//! Slots of per-command statistics: one per command, then one per subcommand, as Redis
//! keeps `client|id` apart from `client|list` (INFO commandstats, LATENCY HISTOGRAM).

use super::{all_commands, command_count, Run, SubcommandSpec};
use crate::Route;

/// Every subcommand of every container.
pub fn all_subcommands() -> impl Iterator<Item = &'static SubcommandSpec> {
    all_commands().flat_map(|spec| match &spec.run {
        Run::Subcommands { table, .. } => table.iter(),
        Run::Command(_) => [].iter(),
    })
}

/// Slots of per-command statistics (calls, latency): one per command, then one per
/// subcommand id, as Redis keeps `client|id` apart from `client|list`.
pub fn stat_slots() -> usize {
    command_count() + SUBCOMMAND_SLOTS
}

/// Subcommand ids are small, dense and below this (a test checks it).
const SUBCOMMAND_SLOTS: usize = 256;

/// The statistics slot of a call of command `index` ([`index_of`]) routed to `route`: its
/// subcommand's when it has one.
#[inline]
pub fn stat_slot(index: usize, route: Route) -> usize {
    match route {
        Route::Subcommand(id) => first_subcommand_slot() + id as usize,
        Route::Command(_) => index,
    }
}

fn first_subcommand_slot() -> usize {
    static FIRST: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *FIRST.get_or_init(command_count)
}

/// The name statistics slot `slot` is shown under (`get`, `client|id`); `None` for a slot
/// no command or subcommand has.
pub fn stat_name(slot: usize) -> Option<&'static str> {
    match slot.checked_sub(first_subcommand_slot()) {
        None => all_commands().nth(slot).map(|spec| spec.name),
        Some(id) => all_subcommands().find(|sub| sub.id as usize == id).map(|sub| sub.name),
    }
}
