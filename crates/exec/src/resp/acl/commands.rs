//! The ACL command: SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, GENPASS, DRYRUN,
//! LOAD and SAVE, and the ACL file they and `--aclfile` read and write (one
//! `user <name> <rules...>` line per user, as Redis writes it).

use std::{io::Read, path::Path};

use proto_resp::{compose_command, parse_command, route, Limits, RouteError};

use super::{
    catalog,
    catalog::CATEGORIES,
    check,
    selector::Selector,
    user::{hex, merge_selectors, RulesError},
    User, Users, DEFAULT_USER,
};
use crate::resp::Ctx;

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You \
may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE \
(assuming you have a Redis configuration file set) in order to store users in the Redis \
configuration.";

/// ACL SETUSER name rule...
pub(crate) fn setuser(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(2);
    if name.iter().any(|&b| b == 0 || b.is_ascii_whitespace() || b == 0x0b) {
        return ctx.error("ERR Usernames can't contain spaces or null characters");
    }
    let rules: Vec<&[u8]> = (3..ctx.argc()).map(|at| ctx.arg(at)).collect();
    match ctx.shared.redis.users.set_user(name, &rules) {
        Ok(()) => {
            if let Some(account) = ctx.shared.redis.users.get(name) {
                crate::resp::pubsub::drop_revoked(ctx.shared, &account);
            }
            ctx.reply().ok()
        }
        Err(RulesError::Rule(rule, why)) => {
            ctx.error(format!("ERR Error in ACL SETUSER modifier '{rule}': {why}"));
        }
        Err(RulesError::Unmatched(first)) => {
            ctx.error(format!("ERR Unmatched parenthesis in acl selector starting at '{first}'."));
        }
    }
}

/// ACL GETUSER name: a map of flags, passwords, commands, keys, channels, selectors.
pub(crate) fn getuser(ctx: &mut Ctx<'_>) {
    let Some(account) = ctx.shared.redis.users.get(ctx.arg(2)) else {
        return ctx.reply().null();
    };
    let user = account.user.read().clone();
    let mut reply = ctx.reply();
    reply.map(6);
    reply.bulk(b"flags");
    let flags = user.flags();
    reply.set(flags.len());
    flags.iter().for_each(|flag| reply.bulk(flag.as_bytes()));
    reply.bulk(b"passwords");
    let hashes: Vec<String> = user.password_hashes().collect();
    reply.array(hashes.len());
    hashes.iter().for_each(|hash| reply.bulk(hash.as_bytes()));
    selector_fields(&mut reply, &user.root);
    reply.bulk(b"selectors");
    reply.array(user.selectors.len());
    for selector in &user.selectors {
        reply.map(3);
        selector_fields(&mut reply, selector);
    }
}

/// GETUSER's `commands`, `keys` and `channels` of one selector.
fn selector_fields(reply: &mut proto_resp::Reply<'_>, selector: &Selector) {
    reply.bulk(b"commands");
    reply.bulk(selector.describe_commands().as_bytes());
    reply.bulk(b"keys");
    reply.bulk(selector.describe_keys().as_bytes());
    reply.bulk(b"channels");
    reply.bulk(selector.channel_patterns().as_bytes());
}

/// ACL DELUSER name...: how many were deleted; never `default`.
pub(crate) fn deluser(ctx: &mut Ctx<'_>) {
    let names: Vec<&[u8]> = (2..ctx.argc()).map(|at| ctx.arg(at)).collect();
    if names.contains(&DEFAULT_USER) {
        return ctx.error("ERR The 'default' user cannot be removed");
    }
    let accounts: Vec<_> =
        names.iter().filter_map(|name| ctx.shared.redis.users.get(name)).collect();
    let deleted = ctx.shared.redis.users.delete(&names);
    for account in &accounts {
        crate::resp::pubsub::drop_revoked(ctx.shared, account);
    }
    ctx.reply().integer(deleted as i64);
}

/// ACL LIST: every user as its rules.
pub(crate) fn list(ctx: &mut Ctx<'_>) {
    let lines = acl_lines(&ctx.shared.redis.users);
    let mut reply = ctx.reply();
    reply.array(lines.len());
    lines.iter().for_each(|line| reply.bulk(line.as_bytes()));
}

/// ACL USERS: every user's name.
pub(crate) fn users(ctx: &mut Ctx<'_>) {
    let accounts = ctx.shared.redis.users.all();
    let mut reply = ctx.reply();
    reply.array(accounts.len());
    accounts.iter().for_each(|account| reply.bulk(&account.name));
}

/// ACL WHOAMI.
pub(crate) fn whoami(ctx: &mut Ctx<'_>) {
    let name = ctx.session.account.as_ref().map_or(DEFAULT_USER.to_vec(), |a| a.name.clone());
    ctx.reply().bulk(&name);
}

/// ACL CAT [category]: the categories, or a category's commands.
pub(crate) fn cat(ctx: &mut Ctx<'_>) {
    if ctx.argc() > 3 {
        return wrong_arguments(ctx);
    }
    if ctx.argc() == 2 {
        let mut reply = ctx.reply();
        reply.array(CATEGORIES.len());
        CATEGORIES.iter().for_each(|name| reply.bulk(name.as_bytes()));
        return;
    }
    let given = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    let name = given.to_ascii_lowercase();
    let Some(bit) = super::catalog::category(&name) else {
        // The name as given, cut at 128 bytes, as Redis prints it.
        let shown: String = given.chars().take(128).collect();
        return ctx.error(format!("ERR Unknown category '{shown}'"));
    };
    let catalog = catalog();
    let names: Vec<&str> =
        catalog.run_in_category(bit).map(|at| catalog.entries[at].name).collect();
    let mut reply = ctx.reply();
    reply.array(names.len());
    names.iter().for_each(|name| reply.bulk(name.as_bytes()));
}

/// Redis's error for an ACL subcommand given too many arguments: the name as given.
fn wrong_arguments(ctx: &mut Ctx<'_>) {
    let given = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    ctx.error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{given}'. Try ACL HELP."
    ));
}

/// ACL GENPASS [bits]: random hex, 256 bits unless told.
pub(crate) fn genpass(ctx: &mut Ctx<'_>) {
    let bits = match ctx.argc() {
        2 => 256,
        3 => match std::str::from_utf8(ctx.arg(2)).ok().and_then(|b| b.parse::<usize>().ok()) {
            Some(bits @ 1..=4096) => bits,
            _ => {
                return ctx.error(
                    "ERR ACL GENPASS argument must be the number of bits for the output \
                     password, a positive number up to 4096",
                )
            }
        },
        _ => return wrong_arguments(ctx),
    };
    let mut random = vec![0; bits.div_ceil(8)];
    if let Err(e) = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut random))
    {
        return ctx.error(format!("ERR cannot read random bytes: {e}"));
    }
    let mut text = hex(&random);
    text.truncate(bits.div_ceil(4));
    ctx.reply().bulk(text.as_bytes());
}

/// ACL DRYRUN user command [arg...]: whether the user could run it, without running it.
pub(crate) fn dryrun(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(2);
    let Some(account) = ctx.shared.redis.users.get(name) else {
        let name = String::from_utf8_lossy(name).into_owned();
        return ctx.error(format!("ERR User '{name}' not found"));
    };
    let args: Vec<&[u8]> = (3..ctx.argc()).map(|at| ctx.arg(at)).collect();
    let mut wire = Vec::new();
    compose_command(&args, &mut wire);
    let limits = Limits { bulk_len_max: usize::MAX, ..Limits::default() };
    let Ok((line, _)) = parse_command(&wire, &limits) else {
        return ctx.error("ERR Protocol error in ACL DRYRUN");
    };
    let routed = match route(&line) {
        Ok(routed) => routed,
        Err(RouteError::UnknownCommand | RouteError::UnknownSubcommand { .. }) => {
            let name = String::from_utf8_lossy(args[0]).into_owned();
            return ctx.error(format!("ERR Command '{name}' not found"));
        }
        Err(refused) => return ctx.error(refused.message(&line)),
    };
    match check(&account, &routed, &args) {
        Ok(()) => ctx.reply().ok(),
        Err(denied) => ctx.reply().bulk(denied.dry_run_message().as_bytes()),
    }
}

/// ACL LOAD: the ACL file's users replace every user, or nothing changes.
pub(crate) fn load(ctx: &mut Ctx<'_>) {
    let Some(path) = ctx.shared.redis.aclfile.clone() else { return ctx.error(NO_ACL_FILE) };
    match read_acl_file(&path) {
        Ok(users) => {
            let before = ctx.shared.redis.users.all();
            ctx.shared.redis.users.replace_all(users);
            for account in &before {
                crate::resp::pubsub::drop_revoked(ctx.shared, account);
            }
            ctx.reply().ok();
        }
        Err(why) => ctx.error(format!(
            "ERR {why}. WARNING: ACL errors detected, no change to the previously active ACL \
             rules was performed"
        )),
    }
}

/// ACL SAVE: every user to the ACL file (written beside it, then renamed over it).
pub(crate) fn save(ctx: &mut Ctx<'_>) {
    let Some(path) = ctx.shared.redis.aclfile.clone() else { return ctx.error(NO_ACL_FILE) };
    let mut text = acl_lines(&ctx.shared.redis.users).join("\n");
    text.push('\n');
    let temp = path.with_extension("tmp");
    match std::fs::write(&temp, text).and_then(|()| std::fs::rename(&temp, &path)) {
        Ok(()) => ctx.reply().ok(),
        Err(e) => ctx.error(format!("ERR There was an error trying to save the ACLs. Please check the server logs for more information ({e})")),
    }
}

fn acl_lines(users: &Users) -> Vec<String> {
    let line = |account: &super::Account| {
        let name = String::from_utf8_lossy(&account.name).into_owned();
        format!("user {name} {}", account.user.read().describe())
    };
    users.all().iter().map(|account| line(account)).collect()
}

/// Reads an ACL file: `user <name> <rules...>` per line (blank lines skipped). An error
/// names the file and line, as Redis's do.
pub fn read_acl_file(path: &Path) -> Result<Vec<(Vec<u8>, User)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{}': {e}", path.display()))?;
    let mut declared = Vec::new();
    for (at, line) in text.lines().enumerate() {
        let here = format!("{}:{}", path.display(), at + 1);
        match line.split_whitespace().collect::<Vec<&str>>().as_slice() {
            [] => continue,
            ["user", name, rules @ ..] => declared.push((here, *name, rules.to_vec())),
            _ => {
                return Err(format!(
                    "{here} should start with user keyword followed by the username"
                ))
            }
        }
    }
    users_from_lines(declared)
}

/// Users from `user <name> <rules...>` lines, each with its place (`file:line`), as an ACL
/// file or a redis.conf declares them: a name declared twice or a rule refused is an error
/// naming the line.
pub fn users_from_lines<'a>(
    lines: impl IntoIterator<Item = (String, &'a str, Vec<&'a str>)>,
) -> Result<Vec<(Vec<u8>, User)>, String> {
    let mut users: Vec<(Vec<u8>, User)> = Vec::new();
    for (here, name, rules) in lines {
        if users.iter().any(|(existing, _)| existing == name.as_bytes()) {
            return Err(format!("{here}: Duplicate user '{name}' found"));
        }
        let rules: Vec<&[u8]> = rules.iter().map(|rule| rule.as_bytes()).collect();
        let rules = merge_selectors(&rules)
            .map_err(|_| format!("{here}: Unmatched parenthesis in selector definition"))?;
        let mut user = User::new();
        for rule in &rules {
            user.apply(rule).map_err(|why| {
                let rule = String::from_utf8_lossy(rule);
                format!("{here}: Error in applying operation '{rule}': {why}")
            })?;
        }
        users.push((name.as_bytes().to_vec(), user));
    }
    Ok(users)
}

/// ACL LOG [count | RESET]: the newest entries (10 by default), or an empty log.
pub(crate) fn log(ctx: &mut Ctx<'_>) {
    if ctx.argc() > 3 {
        return wrong_arguments(ctx);
    }
    let mut count = 10usize;
    if ctx.argc() == 3 {
        let arg = ctx.arg(2);
        if arg.eq_ignore_ascii_case(b"reset") {
            ctx.shared.redis.acl_log.reset();
            return ctx.reply().ok();
        }
        match std::str::from_utf8(arg).ok().and_then(|t| t.parse::<i64>().ok()) {
            Some(n) => count = n.max(0) as usize,
            None => return ctx.error(proto_resp::error::NOT_INTEGER),
        }
    }
    let now_ms = crate::resp::now_unix_ms(ctx.shared);
    let entries = ctx.shared.redis.acl_log.newest(count, now_ms);
    let mut reply = ctx.reply();
    reply.array(entries.len());
    for entry in entries {
        reply.map(7);
        reply.bulk(b"count");
        reply.integer(entry.count as i64);
        reply.bulk(b"reason");
        reply.bulk(entry.reason.as_bytes());
        reply.bulk(b"context");
        reply.bulk(entry.context.as_bytes());
        reply.bulk(b"object");
        reply.bulk(&entry.object);
        reply.bulk(b"username");
        reply.bulk(&entry.username);
        reply.bulk(b"age-seconds");
        reply.double(entry.age_secs);
        reply.bulk(b"client-info");
        reply.bulk(entry.client_info.as_bytes());
    }
}
