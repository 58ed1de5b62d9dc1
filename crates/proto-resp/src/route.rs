//! Routing a parsed command through the table ([`crate::COMMANDS`]): the command name, the
//! subcommand of a container, the arity and the argument rule, all checked here, once,
//! before any handler runs (as Redis's `processCommand` does), with Redis's error texts.
//!
//! ```text
//!   Command --lookup--> CommandSpec --Run::Command(id)-----------check arity--> Route::Command
//!                                  \--Run::Subcommands--argv[1]--check arity--> Route::Subcommand
//!                                                     (none: bare form, or the arity error)
//! ```

use std::fmt;

use crate::{
    commands::{lookup, ArgRule, CommandId, CommandSpec, Run, SubcommandId, SubcommandSpec},
    error::{unknown_command, unknown_subcommand, wrong_arity},
    Command,
};

/// The handler a command line runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Route {
    Command(CommandId),
    Subcommand(SubcommandId),
}

/// A command line the table accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Routed {
    /// The top-level command (the container, for a subcommand).
    pub spec: &'static CommandSpec,
    pub route: Route,
}

/// Why the table refused a command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteError {
    UnknownCommand,
    /// A container whose first argument names none of its subcommands.
    UnknownSubcommand {
        container: &'static CommandSpec,
    },
    Arity(ArityError),
}

impl RouteError {
    /// The error reply Redis sends (without `-` and CRLF), quoting `command` where it does.
    pub fn message(&self, command: &Command<'_>) -> Vec<u8> {
        match self {
            RouteError::UnknownCommand => {
                unknown_command(command.name().unwrap_or_default(), command.args().skip(1))
            }
            RouteError::UnknownSubcommand { container } => {
                unknown_subcommand(container.name.as_bytes(), command.arg(1).unwrap_or_default())
            }
            RouteError::Arity(arity) => arity.message().into_bytes(),
        }
    }
}

/// An argument count the command does not accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArityError {
    /// The full name (`get`, `config|set`).
    pub name: &'static str,
}

impl ArityError {
    /// `ERR wrong number of arguments for '<name>' command`.
    pub fn message(self) -> String {
        wrong_arity(self.name)
    }
}

impl fmt::Display for ArityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ArityError {}

impl From<ArityError> for RouteError {
    fn from(error: ArityError) -> RouteError {
        RouteError::Arity(error)
    }
}

/// Finds what `command` runs, or the error to reply with. An empty command has no name:
/// [`RouteError::UnknownCommand`] (callers skip empty commands before routing).
///
/// ```
/// use proto_resp::{parse_command, route, Limits, Route, SubcommandId};
///
/// let (command, _) = parse_command(b"*2\r\n$6\r\nCONFIG\r\n$9\r\nresetstat\r\n", &Limits::default()).unwrap();
/// let routed = route(&command).unwrap();
/// assert_eq!(routed.route, Route::Subcommand(SubcommandId::ConfigResetstat));
/// ```
#[inline]
pub fn route(command: &Command<'_>) -> Result<Routed, RouteError> {
    let spec = command.name().and_then(lookup).ok_or(RouteError::UnknownCommand)?;
    let route = match &spec.run {
        Run::Command(id) => {
            check_arity(spec, command.argc())?;
            Route::Command(*id)
        }
        Run::Subcommands { table, bare } => route_subcommand(spec, table, *bare, command)?,
    };
    Ok(Routed { spec, route })
}

/// A container's subcommand: named by the first argument, or the bare form without one.
fn route_subcommand(
    spec: &'static CommandSpec,
    table: &'static [SubcommandSpec],
    bare: Option<SubcommandId>,
    command: &Command<'_>,
) -> Result<Route, RouteError> {
    let argc = command.argc();
    let Some(name) = command.arg(1) else {
        check_arity(spec, argc)?;
        // A container without a bare form needs a subcommand, as its arity says.
        let bare = bare.ok_or(RouteError::Arity(ArityError { name: spec.name }))?;
        return Ok(Route::Subcommand(bare));
    };
    let sub = table
        .iter()
        .find(|sub| sub.short_name().as_bytes().eq_ignore_ascii_case(name))
        .ok_or(RouteError::UnknownSubcommand { container: spec })?;
    if !arity_ok(sub.arity, sub.rule, argc) {
        return Err(RouteError::Arity(ArityError { name: sub.name }));
    }
    Ok(Route::Subcommand(sub.id))
}

/// Checks `argc` (the name included) against the spec's arity and argument rule, as Redis
/// does before any handler runs.
#[inline]
pub fn check_arity(spec: &'static CommandSpec, argc: usize) -> Result<(), ArityError> {
    if arity_ok(spec.arity, spec.rule, argc) {
        Ok(())
    } else {
        Err(ArityError { name: spec.name })
    }
}

/// Redis's arity convention (positive: exactly; negative: at least), then the rule.
#[inline]
fn arity_ok(arity: i32, rule: ArgRule, argc: usize) -> bool {
    let wanted = arity.unsigned_abs() as usize;
    let count_ok = if arity < 0 { argc >= wanted } else { argc == wanted };
    count_ok && rule.allows(argc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_command, Limits};

    fn route_line(line: &str) -> Result<Route, String> {
        let wire = format!("{line}\r\n");
        let (command, _) = parse_command(wire.as_bytes(), &Limits::default()).expect("parses");
        route(&command)
            .map(|routed| routed.route)
            .map_err(|e| String::from_utf8(e.message(&command)).expect("text"))
    }

    /// Goal: every route and refusal, with Redis's error texts. Method: inline lines.
    #[test]
    fn routes_and_errors() {
        use {CommandId as C, SubcommandId as S};
        let arity = |name: &str| Err(format!("ERR wrong number of arguments for '{name}' command"));
        let table: &[(&str, Result<Route, String>)] = &[
            ("get k", Ok(Route::Command(C::Get))),
            ("GET", arity("get")),
            ("get a b", arity("get")),
            ("ping", Ok(Route::Command(C::Ping))),
            ("ping a", Ok(Route::Command(C::Ping))),
            ("ping a b", arity("ping")),
            ("mset a 1 b 2", Ok(Route::Command(C::Mset))),
            ("mset a 1 b", arity("mset")),
            ("msetnx a", arity("msetnx")),
            ("client", arity("client")),
            ("CLIENT list", Ok(Route::Subcommand(S::ClientList))),
            ("client setname", arity("client|setname")),
            ("client id x", arity("client|id")),
            ("client Foo", Err("ERR unknown subcommand 'Foo'. Try CLIENT HELP.".into())),
            ("command", Ok(Route::Subcommand(S::CommandInfo))),
            ("command count", Ok(Route::Subcommand(S::CommandCount))),
            ("command count x", arity("command|count")),
            ("command info", Ok(Route::Subcommand(S::CommandInfo))),
            ("config", arity("config")),
            ("config get", arity("config|get")),
            ("config set a", arity("config|set")),
            ("config set a b c", arity("config|set")),
            ("config set a b c d", Ok(Route::Subcommand(S::ConfigSet))),
            ("config rewrite", Ok(Route::Subcommand(S::ConfigRewrite))),
            (
                "nosuch a",
                Err("ERR unknown command 'nosuch', with args beginning with: 'a' ".into()),
            ),
        ];
        for (line, want) in table {
            assert_eq!(&route_line(line), want, "{line}");
        }
    }

    /// Goal: subcommand tables are sorted, lowercase, named after their container, and
    /// every container's bare form agrees with its arity.
    #[test]
    fn subcommand_tables() {
        for spec in crate::commands::all_commands() {
            let Run::Subcommands { table, bare } = &spec.run else { continue };
            assert!(table.windows(2).all(|w| w[0].name < w[1].name), "{} sorted", spec.name);
            for sub in *table {
                assert_eq!(sub.name, sub.name.to_ascii_lowercase());
                assert_eq!(sub.name.split_once('|').map(|(c, _)| c), Some(spec.name));
                assert!(sub.arity.abs() >= 2, "{}", sub.name);
            }
            assert_eq!(bare.is_some(), spec.arity == -1, "{}", spec.name);
        }
    }
}
