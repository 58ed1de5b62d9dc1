//! First-arg rules, Redis 7.0's way to allow a command without subcommands only with one
//! first argument (`+select|0`, `+debug|object`): while the command itself is not
//! allowed, it runs when its first argument equals one of these, ignoring ASCII case.
//! A rule that allows or forbids the command (`+select`, `-@connection`, `+@all`) drops
//! them, as in Redis. They are listed back as given (`+select|Ab`), after the rule that
//! last named the command if it is still listed, else at the end.

use super::{
    catalog::catalog,
    user::{RuleError, SYNTAX, UNKNOWN_COMMAND},
};

/// First args one command may have: the check before each command compares its first
/// argument with each, so a user's rules cannot make that check slow.
pub(crate) const FIRST_ARGS_MAX: usize = 1024;

pub(super) const OF_A_SUBCOMMAND: RuleError = "Allowing first-arg of a subcommand is not supported";
const TOO_MANY: RuleError = "Too many first-args for one command (Spinel allows 1024)";

/// The first args of each command that has some, in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FirstArgs {
    by_command: Vec<(usize, Vec<String>)>,
}

/// The catalog entry and first arg of `+name|arg` (`text` is `name|arg` as given), refused
/// as Redis 7.0 refuses it: an unknown command, a subcommand's first arg, an empty first
/// arg, or an unknown subcommand of a container.
pub(crate) fn parse(text: &str) -> Result<(usize, &str), RuleError> {
    let (command, arg) = text.rsplit_once('|').ok_or(UNKNOWN_COMMAND)?;
    let catalog = catalog();
    let at = catalog.find(&command.to_ascii_lowercase()).ok_or(UNKNOWN_COMMAND)?;
    let entry = &catalog.entries[at];
    if entry.name.contains('|') {
        return Err(OF_A_SUBCOMMAND);
    }
    if arg.is_empty() {
        return Err(SYNTAX);
    }
    if !entry.subcommands.is_empty() {
        return Err(UNKNOWN_COMMAND); // a container: only its subcommands can be named
    }
    Ok((at, arg))
}

impl FirstArgs {
    /// Adds `arg` to `entry`'s first args unless one equal but for case is there.
    pub(crate) fn add(&mut self, entry: usize, arg: &str) -> Result<(), RuleError> {
        let at = match self.by_command.iter().position(|(known, _)| *known == entry) {
            Some(at) => at,
            None => {
                self.by_command.push((entry, Vec::new()));
                self.by_command.len() - 1
            }
        };
        let args = &mut self.by_command[at].1;
        if args.iter().any(|known| known.eq_ignore_ascii_case(arg)) {
            return Ok(());
        }
        if args.len() >= FIRST_ARGS_MAX {
            return Err(TOO_MANY);
        }
        args.push(arg.to_owned());
        Ok(())
    }

    /// Whether `arg` is one of `entry`'s first args: the whole argument, ignoring ASCII
    /// case (Redis compares C strings, so `0\0x` would pass for `0` there; not here).
    pub(crate) fn allows(&self, entry: usize, arg: &[u8]) -> bool {
        self.by_command.iter().any(|(known, args)| {
            *known == entry
                && args.iter().any(|allowed| allowed.as_bytes().eq_ignore_ascii_case(arg))
        })
    }

    pub(crate) fn clear(&mut self) {
        self.by_command.clear();
    }

    /// Drops the first args of every entry in `mask` (a bitmap over the catalog).
    pub(crate) fn forget(&mut self, mask: &[u64]) {
        self.by_command.retain(|(entry, _)| mask[entry / 64] & (1 << (entry % 64)) == 0);
    }

    /// The commands that have first args, in the order they got their first.
    pub(crate) fn commands(&self) -> impl Iterator<Item = usize> + '_ {
        self.by_command.iter().map(|(entry, _)| *entry)
    }

    /// `+name|arg` for each first arg of `entry`.
    pub(crate) fn rules_of(&self, entry: usize) -> impl Iterator<Item = String> + '_ {
        let name = catalog().entries[entry].name;
        let args = self.by_command.iter().filter(move |(known, _)| *known == entry);
        args.flat_map(|(_, args)| args.iter()).map(move |arg| format!("+{name}|{arg}"))
    }
}
