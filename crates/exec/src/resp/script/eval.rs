//! EVAL, EVALSHA, their `_RO` forms, and SCRIPT LOAD/EXISTS/FLUSH (KILL and HELP live in
//! `mod.rs`).
//!
//! Every script EVAL or SCRIPT LOAD sees is compiled once into a Lua function and cached
//! under the SHA1 of its body, as Redis 7.0 does (EVALSHA finds it). The cache is bounded:
//! past [`CACHE_SCRIPTS_MAX`] scripts or [`CACHE_BYTES_MAX`] bytes of bodies, scripts
//! that only EVAL added are dropped (SCRIPT LOAD's stay, as a client that loaded one
//! expects EVALSHA to find it; EVALSHA's NOSCRIPT fallback covers the rest).
//!
//! A body may open with a shebang, `#!lua flags=no-writes,allow-oom,...` (Redis 7): with
//! `no-writes` it runs read-only; without it, EVAL_RO refuses the script.

use std::sync::atomic::Ordering::Relaxed;

use mlua::Function;

use super::{
    call::{invoke, Invocation},
    numkeys,
    vm::{Script, Vm},
    Access, Kind,
};
use crate::resp::{Ctx, Exclusive};

/// Most scripts the cache keeps.
const CACHE_SCRIPTS_MAX: usize = 100_000;
/// Most bytes of script bodies the cache keeps.
const CACHE_BYTES_MAX: usize = 256 << 20;

pub(super) const HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

/// Where EVAL's script comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    /// EVAL: the body.
    Body,
    /// EVALSHA: a cached script's SHA1.
    Sha,
}

/// The flags of a script's shebang.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ScriptFlags {
    pub no_writes: bool,
    pub no_cluster: bool,
    pub allow_cross_slot: bool,
}

/// Parses a shebang (`#!lua` and its flags), if the body has one.
pub(super) fn shebang(body: &[u8]) -> Result<Option<(ScriptFlags, usize)>, String> {
    if !body.starts_with(b"#!") {
        return Ok(None);
    }
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = String::from_utf8_lossy(&body[2..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if engine != "lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags::default();
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            match flag {
                "no-writes" => flags.no_writes = true,
                "no-cluster" => flags.no_cluster = true,
                "allow-cross-slot-keys" => flags.allow_cross_slot = true,
                "allow-oom" | "allow-stale" => {}
                other => return Err(format!("ERR Unexpected flag in script shebang: {other}")),
            }
        }
    }
    Ok(Some((flags, end)))
}

/// Compiles `body` (a shebang line becomes an empty line, so line numbers hold).
fn compile(vm: &Vm, body: &[u8]) -> Result<Script, String> {
    let (flags, code) = match shebang(body)? {
        Some((flags, end)) => (Some(flags), &body[end..]),
        None => (None, body),
    };
    let function = super::vm::compile_text(&vm.eval_lua, code, "@user_script").map_err(|e| {
        format!("ERR Error compiling script (new function): {}", syntax_message(&e))
    })?;
    Ok(Script { function, body_len: body.len(), flags, loaded: false })
}

/// The Lua message of a load error, without `mlua`'s decoration.
pub(super) fn syntax_message(error: &mlua::Error) -> String {
    match error {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// Finds or compiles (and caches) the script of `body`, by `sha`.
fn cached<'v>(vm: &'v mut Vm, ctx: &Ctx<'_>, sha: &str, body: &[u8]) -> Result<&'v Script, String> {
    if !vm.scripts.contains_key(sha) {
        let script = compile(vm, body)?;
        make_room(vm, ctx, body.len());
        vm.scripts.insert(sha.to_owned(), script);
        note_cache(vm, ctx);
    }
    Ok(&vm.scripts[sha])
}

/// Drops scripts EVAL added (not SCRIPT LOAD's) until one of `len` bytes fits.
fn make_room(vm: &mut Vm, ctx: &Ctx<'_>, len: usize) {
    let bytes = ctx.shared.redis.scripts.cached_script_bytes.load(Relaxed) as usize;
    if vm.scripts.len() < CACHE_SCRIPTS_MAX && bytes + len <= CACHE_BYTES_MAX {
        return;
    }
    vm.scripts.retain(|_, script| script.loaded);
}

fn note_cache(vm: &Vm, ctx: &Ctx<'_>) {
    let engine = &ctx.shared.redis.scripts;
    engine.cached_scripts.store(vm.scripts.len() as u64, Relaxed);
    let bytes: usize = vm.scripts.values().map(|s| s.body_len).sum();
    engine.cached_script_bytes.store(bytes as u64, Relaxed);
}

/// EVAL, EVAL_RO, EVALSHA, EVALSHA_RO.
pub(super) fn eval(ctx: &mut Ctx<'_>, source: Source, access: Access) {
    let Some(numkeys) = numkeys(ctx, proto_resp::error::NOT_INTEGER) else { return };
    let script_arg = ctx.arg(1);
    let sha = match source {
        Source::Body => super::sha1_hex(script_arg),
        Source::Sha => String::from_utf8_lossy(script_arg).to_ascii_lowercase(),
    };
    let cmd = ctx.cmd;
    let keys: Vec<&[u8]> = (3..3 + numkeys).filter_map(|at| cmd.arg(at)).collect();
    let args: Vec<&[u8]> = (3 + numkeys..cmd.argc()).filter_map(|at| cmd.arg(at)).collect();
    // The gate first, then the Lua states' mutex (see the lock order in `mod.rs`).
    run_exclusive(ctx, |ctx| {
        let shared = ctx.shared;
        shared.redis.scripts.with_vm(|vm| run_cached(ctx, vm, source, access, &sha, keys, args))
    });
}

fn run_cached(
    ctx: &mut Ctx<'_>,
    vm: &mut Vm,
    source: Source,
    access: Access,
    sha: &str,
    keys: Vec<&[u8]>,
    args: Vec<&[u8]>,
) {
    let script_arg = ctx.arg(1);
    {
        let script = match source {
            Source::Body => match cached(vm, ctx, sha, script_arg) {
                Ok(script) => script,
                Err(message) => return ctx.error(message),
            },
            Source::Sha => match vm.scripts.get(sha) {
                Some(script) => script,
                None => return ctx.error("NOSCRIPT No matching script. Please use EVAL."),
            },
        };
        let no_writes = script.flags.is_some_and(|f| f.no_writes);
        if access == Access::ReadOnly && script.flags.is_some() && !no_writes {
            return ctx.error("ERR Can not execute a script with write flag using *_ro command.");
        }
        if ctx.shared.redis.cluster.get().is_some() && script.flags.is_some_and(|f| f.no_cluster) {
            return ctx.error(crate::resp::cluster::NO_CLUSTER_SCRIPT);
        }
        // An EVAL without a shebang may touch keys of several slots, as before Redis 7.
        let cross_slot = script.flags.is_none_or(|f| f.allow_cross_slot);
        crate::resp::cluster::allow_cross_slot(ctx.session, cross_slot);
        let access = if no_writes { Access::ReadOnly } else { access };
        let function: Function = script.function.clone();
        let call = Invocation { function, name: sha, keys, args, access, kind: Kind::Eval };
        invoke(ctx, &vm.eval_lua, &vm.eval, call);
    }
}

/// Runs `f` with the gate held: taken here, or already held by EXEC. A script that
/// `f` left suspended (busy, yielded to its loop) keeps the gate until it ends.
pub(super) fn run_exclusive(ctx: &mut Ctx<'_>, f: impl FnOnce(&mut Ctx<'_>)) {
    let (shared, counters) = (ctx.shared, ctx.counters);
    if ctx.exclusive == Exclusive::Held || shared.core.gate.held_here() {
        return f(ctx);
    }
    let worker = shared.core.worker_of(counters);
    let held = shared.core.gate.hold_guarded(worker);
    f(ctx);
    if let Some(suspended) = ctx.session.script.as_mut() {
        suspended.hold = Some(held.keep());
    }
}

/// SCRIPT LOAD.
pub(super) fn load(ctx: &mut Ctx<'_>) {
    let body = ctx.arg(2);
    let sha = super::sha1_hex(body);
    let engine = &ctx.shared.redis.scripts;
    let outcome = engine.with_vm(|vm| {
        let result = cached(vm, ctx, &sha, body).map(|_| ());
        if let Some(script) = vm.scripts.get_mut(&sha) {
            script.loaded = true;
        }
        result
    });
    match outcome {
        Ok(()) => ctx.reply().bulk(sha.as_bytes()),
        Err(message) => ctx.error(message),
    }
}

/// SCRIPT EXISTS.
pub(super) fn exists(ctx: &mut Ctx<'_>) {
    let shas: Vec<String> = (2..ctx.argc())
        .map(|at| String::from_utf8_lossy(ctx.arg(at)).to_ascii_lowercase())
        .collect();
    let found: Vec<bool> = ctx
        .shared
        .redis
        .scripts
        .with_vm(|vm| shas.iter().map(|s| vm.scripts.contains_key(s)).collect());
    let mut reply = ctx.reply();
    reply.array(found.len());
    for hit in found {
        reply.integer(i64::from(hit));
    }
}

/// SCRIPT FLUSH [ASYNC|SYNC]: both drop the cache at once (it is small).
pub(super) fn flush(ctx: &mut Ctx<'_>) {
    if ctx.argc() > 3 || (ctx.argc() == 3 && !is_flush_mode(ctx.arg(2))) {
        return ctx.error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    let fresh = ctx.shared.redis.scripts.with_vm(|vm| {
        let fresh = vm.fresh_eval();
        note_cache(vm, ctx);
        fresh
    });
    match fresh {
        Ok(()) => ctx.reply().ok(),
        Err(e) => ctx.error(format!("ERR {e}")),
    }
}

pub(super) fn is_flush_mode(arg: &[u8]) -> bool {
    arg.eq_ignore_ascii_case(b"sync") || arg.eq_ignore_ascii_case(b"async")
}
