//! COMMAND INFO and COMMAND DOCS replies, from the command tables and the generated
//! per-command data (`meta.rs`).

use super::{
    all_commands, command_count,
    keyspec::{command_meta, write_key_specs},
    lookup, CommandSpec, Run, FLAG_NAMES,
};
use crate::Reply;

/// A command's ACL categories (`@read` ...) by its full name (`config|get`): the server
/// knows them, this crate does not.
pub type Categories<'a> = &'a dyn Fn(&str) -> Vec<&'static str>;

/// One `COMMAND INFO` entry: name, arity, flags, first key, last key, step, ACL
/// categories, tips, key specs, subcommands (each an entry of the same shape). `None`
/// writes the null Redis sends for an unknown name.
pub fn write_command_info(
    reply: &mut Reply<'_>,
    spec: Option<&CommandSpec>,
    categories: Categories<'_>,
) {
    let Some(spec) = spec else {
        reply.null();
        return;
    };
    let flags: Vec<&str> = FLAG_NAMES
        .iter()
        .filter(|(flag, _)| spec.flags.contains(*flag))
        .map(|(_, name)| *name)
        .collect();
    let keys = (spec.first_key, spec.last_key, spec.step);
    write_entry(reply, spec.name, spec.arity, &flags, keys, categories);
    match &spec.run {
        Run::Command(_) => reply.set(0),
        Run::Subcommands { table, .. } => {
            reply.array(table.len());
            for sub in table.iter() {
                let meta = command_meta(sub.name);
                let flags = meta.map_or(&[][..], |meta| meta.sub_flags);
                let keys = meta.map_or((0, 0, 0), |meta| meta.sub_keys);
                write_entry(reply, sub.name, sub.arity, flags, keys, categories);
                reply.set(0);
            }
        }
    }
}

/// The first nine fields of an entry: all but the subcommands.
fn write_entry(
    reply: &mut Reply<'_>,
    name: &str,
    arity: i32,
    flags: &[&str],
    (first_key, last_key, step): (i32, i32, i32),
    categories: Categories<'_>,
) {
    reply.array(10);
    reply.bulk(name.as_bytes());
    reply.integer(i64::from(arity));
    reply.set(flags.len());
    flags.iter().for_each(|flag| reply.simple(flag.as_bytes()));
    reply.integer(i64::from(first_key));
    reply.integer(i64::from(last_key));
    reply.integer(i64::from(step));
    let categories = categories(name);
    reply.set(categories.len());
    categories.iter().for_each(|category| reply.simple(category.as_bytes()));
    let meta = command_meta(name);
    let tips = meta.map_or(&[][..], |meta| meta.tips);
    reply.set(tips.len());
    tips.iter().for_each(|tip| reply.bulk(tip.as_bytes()));
    write_key_specs(reply, meta.map_or(&[][..], |meta| meta.key_specs));
}

/// `COMMAND INFO` with no names: every command.
pub fn write_command_info_all(reply: &mut Reply<'_>, categories: Categories<'_>) {
    reply.array(command_count());
    for spec in all_commands() {
        write_command_info(reply, Some(spec), categories);
    }
}

/// One `COMMAND DOCS` pair: the name, then a map of `summary`, `since` and `group`.
/// Redis also sends `complexity`, `arguments` and history; we do not have them.
pub fn write_command_docs(reply: &mut Reply<'_>, spec: &CommandSpec) {
    reply.bulk(spec.name.as_bytes());
    reply.map(3);
    reply.bulk(b"summary");
    reply.bulk(spec.summary.as_bytes());
    reply.bulk(b"since");
    reply.bulk(spec.since.as_bytes());
    reply.bulk(b"group");
    reply.bulk(spec.group.name().as_bytes());
}

/// `COMMAND DOCS [name ...]`: a map over the named commands that exist (all commands if
/// `names` is empty); unknown names are left out, as in Redis.
pub fn write_command_docs_for<'n>(
    reply: &mut Reply<'_>,
    names: impl ExactSizeIterator<Item = &'n [u8]>,
) {
    if names.len() == 0 {
        reply.map(command_count());
        all_commands().for_each(|spec| write_command_docs(reply, spec));
        return;
    }
    let found: Vec<&CommandSpec> = names.filter_map(lookup).collect();
    reply.map(found.len());
    found.into_iter().for_each(|spec| write_command_docs(reply, spec));
}
