//! COMMAND INFO and COMMAND DOCS replies, from the command tables and the generated
//! per-command data (`meta.rs`, `docs_data.rs`).

use super::{
    all_commands, command_count,
    docs::{command_docs, Docs},
    keyspec::{command_meta, write_key_specs},
    lookup, CommandSpec, Run, SubcommandSpec, FLAG_NAMES,
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

/// One `COMMAND DOCS` pair: the name, then a map of `summary`, `since`, `group`, the doc
/// flags and `deprecated_since` of a deprecated command, `arguments` (its argument tree,
/// from the generated `docs_data.rs`) and a container's `subcommands`, in Redis's order.
/// Redis's prose (`complexity`, `history`, `replaced_by`) is not sent, and our summaries
/// are our own words.
pub fn write_command_docs(reply: &mut Reply<'_>, spec: &CommandSpec) {
    let docs = command_docs(spec.name);
    let subcommands = match &spec.run {
        Run::Command(_) => None,
        Run::Subcommands { table, .. } => Some(*table),
    };
    reply.bulk(spec.name.as_bytes());
    reply.map(3 + docs.map_or(0, Docs::field_count) + usize::from(subcommands.is_some()));
    reply.bulk(b"summary");
    reply.bulk(spec.summary.as_bytes());
    reply.bulk(b"since");
    reply.bulk(spec.since.as_bytes());
    reply.bulk(b"group");
    reply.bulk(spec.group.name().as_bytes());
    if let Some(docs) = docs {
        docs.write_fields(reply);
    }
    if let Some(table) = subcommands {
        reply.bulk(b"subcommands");
        reply.map(table.len());
        table.iter().for_each(|sub| write_subcommand_docs(reply, spec, sub));
    }
}

/// A subcommand's pair: its full name, then `since`, `group` (its container's) and the
/// fields of [`write_command_docs`] it has. We have no summary of our own for subcommands,
/// so none is sent.
fn write_subcommand_docs(reply: &mut Reply<'_>, container: &CommandSpec, sub: &SubcommandSpec) {
    let docs = command_docs(sub.name);
    reply.bulk(sub.name.as_bytes());
    reply.map(2 + docs.map_or(0, Docs::field_count));
    reply.bulk(b"since");
    reply.bulk(docs.map_or(container.since, |docs| docs.since).as_bytes());
    reply.bulk(b"group");
    reply.bulk(container.group.name().as_bytes());
    if let Some(docs) = docs {
        docs.write_fields(reply);
    }
}

/// What a `COMMAND DOCS` name names: a command, or a subcommand by its full name
/// (`config|get`), as Redis looks them up.
enum Documented {
    Command(&'static CommandSpec),
    Subcommand(&'static CommandSpec, &'static SubcommandSpec),
}

fn documented(name: &[u8]) -> Option<Documented> {
    let Some(bar) = name.iter().position(|&b| b == b'|') else {
        return lookup(name).map(Documented::Command);
    };
    let container = lookup(&name[..bar])?;
    let Run::Subcommands { table, .. } = &container.run else {
        return None;
    };
    let sub = table.iter().find(|sub| sub.name.as_bytes().eq_ignore_ascii_case(name))?;
    Some(Documented::Subcommand(container, sub))
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
    let found: Vec<Documented> = names.filter_map(documented).collect();
    reply.map(found.len());
    for item in found {
        match item {
            Documented::Command(spec) => write_command_docs(reply, spec),
            Documented::Subcommand(container, sub) => write_subcommand_docs(reply, container, sub),
        }
    }
}
