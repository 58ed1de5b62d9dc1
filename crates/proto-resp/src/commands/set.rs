//! Sets: SADD ... SSCAN and the STORE forms.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name.

#[allow(unused_imports)]
use super::{spec, ArgRule, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetId {}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static SET_COMMANDS: &[CommandSpec] = &[];
