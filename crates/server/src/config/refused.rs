//! memcached flags that Spinel does not honour. They are known to the parser (hidden from
//! `--help`) so that each is refused by name with the reason, not as an unknown option, and
//! so that the value of one that takes a value is not mistaken for a stray argument.

use clap::{parser::ValueSource, Arg, ArgAction, ArgMatches, Command};

/// One refused flag: short, long (memcached's name, when it has one), whether it takes a
/// value, and why it is refused. `id` names it for clap: the long name, or a made-up one.
struct Refused {
    id: &'static str,
    short: char,
    long: Option<&'static str>,
    takes_value: bool,
    why: &'static str,
}

const fn flag(short: char, long: &'static str, takes_value: bool, why: &'static str) -> Refused {
    Refused { id: long, short, long: Some(long), takes_value, why }
}

const REFUSED: &[Refused] = &[
    flag('s', "unix-socket", true, "Unix sockets are not served; use -l and -p"),
    flag('a', "unix-mask", true, "Unix sockets are not served; use -l and -p"),
    flag('d', "daemon", false, "run Spinel under a service manager instead"),
    flag('r', "enable-coredumps", false, "set the core size limit with ulimit -c instead"),
    flag('k', "lock-memory", false, "locking memory is not supported"),
    flag('i', "license", false, "see the LICENSE file"),
    flag('P', "pidfile", true, "it only serves -d, which is not supported"),
    flag('f', "slab-growth-factor", true, "Spinel has no slab classes"),
    flag('n', "slab-min-size", true, "Spinel has no slab classes"),
    flag('L', "enable-largepages", false, "large pages are not supported"),
    Refused {
        id: "prefix-delimiter",
        short: 'D',
        long: None,
        takes_value: true,
        why: "per-prefix statistics are not kept",
    },
    flag('S', "enable-sasl", false, "SASL authentication is not supported"),
    flag('X', "disable-dumping", false, "not supported"),
    flag('W', "disable-watch", false, "not supported"),
    flag('Y', "auth-file", true, "authentication is not supported"),
    flag('e', "memory-file", true, "a restartable cache is not supported"),
    flag('Z', "enable-ssl", false, "TLS is not supported"),
    flag('N', "napi_ids", true, "not supported"),
];

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
    for refused in REFUSED {
        if matches.value_source(refused.id) == Some(ValueSource::CommandLine) {
            let name = match refused.long {
                Some(long) => format!("-{}/--{long}", refused.short),
                None => format!("-{}", refused.short),
            };
            return Err(format!("memcached's {name} is not supported by Spinel: {}", refused.why));
        }
    }
    Ok(())
}

/// The refused short flags, for the table-driven test.
#[cfg(test)]
pub fn shorts() -> Vec<char> {
    REFUSED.iter().map(|r| r.short).collect()
}
