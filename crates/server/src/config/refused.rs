//! memcached flags that Spinel does not honour. They are known to the parser (hidden from
//! `--help`) so that the value of one that takes a value is not mistaken for a stray
//! argument. Those with no meaning in Spinel's design (slab sizing, large pages) are
//! accepted with a start-up warning that names them, so an init script
//! written for memcached starts Spinel unchanged; the rest are refused by name with the
//! reason, not as an unknown option.

use clap::{parser::ValueSource, Arg, ArgAction, ArgMatches, Command};

/// What Spinel does with a memcached flag it does not honour.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Handling {
    /// Starts anyway, with a warning naming the flag.
    Ignore,
    /// Refuses to start.
    Refuse,
}

use Handling::*;

/// One such flag: short, long (memcached's name, when it has one), whether it takes a
/// value, what Spinel does with it and why. `id` names it for clap: the long name, or a
/// made-up one.
struct Refused {
    id: &'static str,
    short: char,
    long: Option<&'static str>,
    takes_value: bool,
    handling: Handling,
    why: &'static str,
}

const fn flag(
    short: char,
    long: &'static str,
    takes_value: bool,
    handling: Handling,
    why: &'static str,
) -> Refused {
    Refused { id: long, short, long: Some(long), takes_value, handling, why }
}

const REFUSED: &[Refused] = &[
    flag('f', "slab-growth-factor", true, Ignore, "Spinel has no slab classes"),
    flag('n', "slab-min-size", true, Ignore, "Spinel has no slab classes"),
    flag('L', "enable-largepages", false, Ignore, "the store maps its memory itself"),
    flag('N', "napi_ids", true, Ignore, "connections are spread by SO_REUSEPORT"),
];

fn name(flag: &Refused) -> String {
    match flag.long {
        Some(long) => format!("-{}/--{long}", flag.short),
        None => format!("-{}", flag.short),
    }
}

fn given<'a>(matches: &'a ArgMatches) -> impl Iterator<Item = &'a Refused> + 'a {
    REFUSED.iter().filter(|flag| matches.value_source(flag.id) == Some(ValueSource::CommandLine))
}

/// Warnings for the ignored memcached flags on the command line.
pub fn warnings(matches: &ArgMatches) -> Vec<String> {
    given(matches)
        .filter(|flag| flag.handling == Ignore)
        .map(|flag| format!("memcached's {} has no effect in Spinel: {}", name(flag), flag.why))
        .collect()
}

/// `command` with the refused flags added, hidden.
pub fn add_to(command: Command) -> Command {
    REFUSED.iter().fold(command, |command, refused| {
        let mut arg = Arg::new(refused.id).short(refused.short).hide(true);
        if let Some(long) = refused.long {
            arg = arg.long(long);
        }
        arg = match refused.takes_value {
            true => arg.action(ArgAction::Set).allow_hyphen_values(true),
            false => arg.action(ArgAction::SetTrue),
        };
        command.arg(arg)
    })
}

/// The error for the first refused flag on the command line, if any.
pub fn check(matches: &ArgMatches) -> Result<(), String> {
    match given(matches).find(|flag| flag.handling == Refuse) {
        Some(flag) => {
            Err(format!("memcached's {} is not supported by Spinel: {}", name(flag), flag.why))
        }
        None => Ok(()),
    }
}

/// The short flags this module handles, for the table-driven test.
#[cfg(test)]
pub fn shorts() -> Vec<char> {
    REFUSED.iter().map(|r| r.short).collect()
}
