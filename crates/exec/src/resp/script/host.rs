//! The commands a script runs through `redis.call`, `redis.pcall` and
//! `redis.acl_check_cmd`, answered for `luacall` (which reads their arguments off the Lua
//! stack and pushes the replies onto it).
//!
//! A command from a script is routed as a client's would be, then checked against the
//! script rules Redis applies (no `noscript` command, no write from a read-only script),
//! then executed with [`crate::resp::execute_routed`] (the gate is already held, and the
//! user's ACL rules still apply) into a scratch buffer in the protocol the script chose
//! (`redis.setresp`). `luacall` converts that reply to Lua in place, under the state's
//! memory limit (a reply that does not fit raises a memory error in the script). The
//! command is built from the arguments as they are (`Command::from_joined`), with no RESP
//! in between.

use std::sync::atomic::Ordering::Relaxed;

use luacall::{Answer, Args, Entry};
use proto_resp::{commands::Flags, route, ArgStorage, Command, Protocol, RouteError, Run};

use super::{
    call::{resp3, Caller},
    convert,
    vm::State,
    Access,
};
use crate::resp::Session;

/// Answers the running script's calls (one slice of its run) for its caller.
pub(super) struct ScriptHost<'h, 'c> {
    caller: &'h mut Caller<'c>,
    state: &'h State,
    access: Access,
    /// The command's argument spans, reused.
    storage: ArgStorage,
    /// The command's reply.
    out: Vec<u8>,
    /// An error text of Spinel's own (a refused command).
    text: Vec<u8>,
}

impl<'h, 'c> ScriptHost<'h, 'c> {
    pub(super) fn new(caller: &'h mut Caller<'c>, state: &'h State, access: Access) -> Self {
        let (storage, out, text) = Default::default();
        ScriptHost { caller, state, access, storage, out, text }
    }

    fn refused(&mut self, message: &[u8]) -> Answer<'_> {
        self.text.clear();
        self.text.extend_from_slice(message);
        Answer::Error(&self.text)
    }
}

impl luacall::Host for ScriptHost<'_, '_> {
    fn call(&mut self, entry: Entry, args: &Args) -> Answer<'_> {
        if args.is_empty() {
            return self
                .refused(b"ERR Please specify at least one argument for this redis lib call");
        }
        if !args.well_typed() {
            return self
                .refused(b"ERR Lua redis lib command arguments must be strings or integers");
        }
        let (input, ends) = args.joined();
        let command = Command::from_joined(input, ends, std::mem::take(&mut self.storage));
        // A panic in a command must not take the worker down: it becomes the call's error,
        // and the Lua states are made anew after the script (`Engine::with_vm`).
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match entry {
            Entry::AclCheck => acl_check(self.caller.session, &command),
            Entry::Call | Entry::Pcall => self.run_command(&command),
        }));
        self.storage = command.into_storage();
        match ran {
            Ok(Ran::Reply) => Answer::Reply(&self.out),
            Ok(Ran::Allowed(allowed)) => Answer::Bool(allowed),
            Ok(Ran::Refused(message)) => self.refused(message.as_bytes()),
            Err(_) => {
                self.caller.shared.redis.scripts.discard_vm.store(true, Relaxed);
                self.refused(b"ERR internal error (the script engine was reset)")
            }
        }
    }

    fn number(&self, n: f64, out: &mut Vec<u8>) {
        out.extend_from_slice(&convert::number_arg(n));
    }
}

/// What a call came to.
enum Ran {
    /// The command's reply is in `out`.
    Reply,
    /// `acl_check_cmd`'s answer.
    Allowed(bool),
    /// Refused, with this error text.
    Refused(String),
}

fn refusal(text: &str) -> Ran {
    Ran::Refused(text.to_owned())
}

impl ScriptHost<'_, '_> {
    /// Routes, checks and runs one command line from a script; its reply goes to `out`.
    fn run_command(&mut self, command: &Command<'_>) -> Ran {
        let routed = match route(command) {
            Ok(routed) => routed,
            Err(RouteError::UnknownCommand) => {
                return refusal("ERR Unknown Redis command called from script")
            }
            Err(RouteError::Arity(_)) => {
                return refusal("ERR Wrong number of args calling Redis command from script")
            }
            Err(other) => {
                return Ran::Refused(String::from_utf8_lossy(&other.message(command)).into())
            }
        };
        let spec = routed.spec;
        let container_refused = matches!(spec.run, Run::Subcommands { .. })
            && matches!(spec.name, "script" | "function" | "client" | "config" | "acl");
        // A subcommand flagged `noscript` of a container that is not (CLUSTER RESET).
        let sub_refused = matches!(routed.route, proto_resp::Route::Subcommand(_))
            && proto_resp::commands::command_meta(crate::resp::full_name(&routed))
                .is_some_and(|meta| meta.sub_flags.contains(&"noscript"));
        if spec.flags.contains(Flags::NOSCRIPT) || container_refused || sub_refused {
            return refusal("ERR This Redis command is not allowed from script");
        }
        // A read-only script may not propagate either (PUBLISH, PFCOUNT), as in Redis: so
        // it can run during CLIENT PAUSE WRITE.
        if self.access == Access::ReadOnly
            && (spec.flags.contains(Flags::WRITE) || spec.flags.contains(Flags::MAY_REPLICATE))
        {
            return refusal("ERR Write commands are not allowed from read-only scripts.");
        }
        let caller = &mut *self.caller;
        if spec.flags.contains(Flags::WRITE) {
            caller.shared.redis.scripts.running.wrote.store(true, Relaxed);
        }
        let protocol = if resp3(self.state) { Protocol::Resp3 } else { Protocol::Resp2 };
        let saved = std::mem::replace(&mut caller.session.protocol, protocol);
        self.out.clear();
        let (shared, counters) = (caller.shared, caller.counters);
        let out = &mut self.out;
        let _ = crate::resp::execute_routed(shared, counters, caller.session, command, routed, out);
        caller.session.protocol = saved;
        Ran::Reply
    }
}

/// `redis.acl_check_cmd(command, ...)`: whether the script's user may run that command
/// line (its command, subcommand and keys), as Redis 7 answers it.
fn acl_check(session: &Session, command: &Command<'_>) -> Ran {
    let Ok(routed) = route(command) else {
        return refusal("ERR Invalid command passed to redis.acl_check_cmd()");
    };
    let Some(account) = &session.account else { return Ran::Allowed(true) };
    let line: Vec<&[u8]> = command.args().collect();
    Ran::Allowed(crate::resp::acl::check(account, &routed, &line).is_ok())
}
