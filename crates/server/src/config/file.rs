//! The TOML file (`--config`), `--print-config`, and `--generate`.

use std::fmt::Write as _;

use clap_complete::Shell;

use super::{effective_options, options::Generate, Config, Options};

/// Reads the options of the file at `path`.
pub fn read(path: &str) -> Result<Options, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read config file {path}: {e}"))?;
    parse_text(&text).map_err(|e| match e.starts_with("line ") {
        true => format!("config file {path} {e}"),
        false => format!("config file {path}: {e}"),
    })
}

/// Parses a file's text; an error names the line (`line N: ...`) and the key.
pub fn parse_text(text: &str) -> Result<Options, String> {
    toml::from_str(text).map_err(|e| describe_error(text, &e))
}

/// `line N: message`, with serde's "unknown field ..., expected one of <every key>" cut to
/// the key at fault, and the key named when a value is refused.
fn describe_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().replace('\n', "; ");
    let Some(span) = error.span() else {
        return message;
    };
    let line_number = text[..span.start].matches('\n').count() + 1;
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let key = rest.split(", expected").next().unwrap_or(rest);
        return format!("line {line_number}: unknown key {key}");
    }
    let line = text.lines().nth(line_number - 1).unwrap_or_default();
    match line.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() && !key.contains('[') => {
            format!("line {line_number}: {}: {message}", key.trim())
        }
        _ => format!("line {line_number}: {message}"),
    }
}

/// `--print-config`: the effective configuration as a file that `--config` reads back.
pub fn render(config: &Config) -> String {
    let body = toml::to_string(&effective_options(config))
        .unwrap_or_else(|e| format!("# cannot render the configuration: {e}\n"));
    let mut defaults = String::new();
    for (key, port, given) in [
        ("port", config.port.number(), !config.port_is_default),
        ("resp-port", i32::from(config.resp_port), !config.resp_port_is_default),
    ] {
        if !given {
            let _ = writeln!(defaults, "# {key} = {port} (default, not named: skipped if in use)");
        }
    }
    format!("# spinel {}: effective configuration\n{body}{defaults}", super::version_text())
}

/// The keys whose effective values differ between two configurations (file key names).
pub fn changed_keys(before: &Config, after: &Config) -> Vec<String> {
    let table =
        |config: &Config| toml::Table::try_from(effective_options(config)).unwrap_or_default();
    let (before, after) = (table(before), table(after));
    let mut keys: Vec<String> = before.keys().chain(after.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    keys.retain(|key| before.get(key) != after.get(key));
    keys
}

/// `--generate`: the man page, or a shell's completion script.
pub fn generate(what: Generate, mut command: clap::Command) -> String {
    let mut out = Vec::new();
    let shell = match what {
        Generate::Man => {
            // Writing to a Vec cannot fail.
            let _ = clap_mangen::Man::new(command).render(&mut out);
            return String::from_utf8_lossy(&out).into_owned();
        }
        Generate::Bash => Shell::Bash,
        Generate::Zsh => Shell::Zsh,
        Generate::Fish => Shell::Fish,
    };
    clap_complete::generate(shell, &mut command, "spinel", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}
