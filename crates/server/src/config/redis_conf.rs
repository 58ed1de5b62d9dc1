//! `--redis-conf FILE`: a redis.conf, as redis-server reads one.
//!
//! Lines are `name arg...` (Redis's quoting: `"..."` with backslash escapes, `'...'`),
//! `#` comments, `include FILE`. A parameter that is one of Spinel's own options (`port`,
//! `bind`, `requirepass`, `maxmemory`, `tls-*` ...) fills that option, under the TOML file
//! and the command line; every other parameter is applied at start as CONFIG SET applies
//! it ([`exec::resp::set_at_start`]), so a value Redis would refuse refuses the start,
//! with the line named. Repeated `save` lines add up, as in Redis. `user` lines declare ACL
//! users (as an ACL file would, but not beside one), `rename-command` lines rename commands.

use super::{
    options::Options,
    values::{Listen, Positive},
};

/// A directive left for CONFIG SET at start: where it was, its name (lower case) and value
/// (its arguments joined by single spaces, as CONFIG SET takes a list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    pub place: String,
    pub name: String,
    pub value: String,
}

/// A redis.conf line kept with its words, as Redis splits them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub place: String,
    pub words: Vec<String>,
}

/// What a redis.conf says, sorted by who applies it.
#[derive(Debug, Default)]
pub struct RedisConf {
    /// Spinel's own options.
    pub options: Options,
    /// What the server applies at start.
    pub lines: Lines,
}

/// The lines of a redis.conf the server applies at start, beyond Spinel's own options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lines {
    /// Parameters for CONFIG SET at start.
    pub directives: Vec<Directive>,
    /// `user <name> <rules...>`, the words after `user`.
    pub users: Vec<Line>,
    /// `rename-command OLD NEW`, in order: (OLD, NEW).
    pub renames: Vec<(String, String)>,
}

/// `include` depth at which a file is taken to include itself.
const MAX_INCLUDE_DEPTH: usize = 16;
/// A redis.conf longer than this is refused (Redis's own are about 100 KiB).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// Reads `path`: the options it sets, the directives left for CONFIG SET, the users it
/// declares and the commands it renames.
pub fn read(path: &str) -> Result<RedisConf, String> {
    let mut lines = Vec::new();
    read_lines(path, 0, &mut lines)?;
    let mut conf = RedisConf::default();
    let mut save: Option<(String, Vec<String>)> = None;
    for (place, words) in lines {
        let name = words[0].to_ascii_lowercase();
        let args = &words[1..];
        let fail = |why: String| format!("{place}: '{}': {why}", words.join(" "));
        match (name.as_str(), args) {
            ("save", _) => {
                // `save ""` clears; each other line adds its points.
                let points = save.get_or_insert_with(|| (place.clone(), Vec::new()));
                match args {
                    [only] if only.is_empty() => points.1.clear(),
                    _ => points.1.extend(args.iter().cloned()),
                }
                continue;
            }
            ("user", [_, ..]) => conf.lines.users.push(Line { place, words: args.to_vec() }),
            ("rename-command", [old, new]) => conf.lines.renames.push((old.clone(), new.clone())),
            ("loadmodule", _) => return Err(fail("Spinel loads no modules".into())),
            ("user" | "rename-command", _) | (_, []) => {
                return Err(fail("Bad directive or wrong number of arguments".into()))
            }
            _ => {
                if !take_option(&mut conf.options, &name, args).map_err(fail)? {
                    conf.lines.directives.push(Directive { place, name, value: args.join(" ") });
                }
            }
        }
    }
    if let Some((place, points)) = save {
        conf.lines.directives.push(Directive {
            place,
            name: "save".into(),
            value: points.join(" "),
        });
    }
    Ok(conf)
}

/// The lines of `path` and of the files it includes, each with its place (`file:line`)
/// and its words.
fn read_lines(
    path: &str,
    depth: usize,
    out: &mut Vec<(String, Vec<String>)>,
) -> Result<(), String> {
    if depth > MAX_INCLUDE_DEPTH {
        return Err(format!("redis.conf {path}: includes nested deeper than {MAX_INCLUDE_DEPTH}"));
    }
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return Err(format!("redis.conf {path}: larger than {MAX_FILE_BYTES} bytes"));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read redis.conf {path}: {e}"))?;
    for (index, line) in text.lines().enumerate() {
        let place = format!("{path}:{}", index + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words = split_args(line).ok_or_else(|| format!("{place}: unbalanced quotes"))?;
        match words.first().map(|w| w.to_ascii_lowercase()).as_deref() {
            Some("include") if words.len() == 2 => read_lines(&words[1], depth + 1, out)?,
            Some(_) => out.push((place, words)),
            None => {}
        }
    }
    Ok(())
}

/// Sets the Spinel option `name` stands for; `false` when it is not one.
fn take_option(options: &mut Options, name: &str, args: &[String]) -> Result<bool, String> {
    let one = || -> Result<&String, String> {
        match args {
            [value] => Ok(value),
            _ => Err("wrong number of arguments".into()),
        }
    };
    let number = |what: &str| -> Result<u64, String> {
        one()?.parse::<u64>().map_err(|_| format!("{what} must be a number"))
    };
    match name {
        "port" => options.resp_port = Some(number("port")?.try_into().map_err(|_| "bad port")?),
        "bind" => options.listen = Some(bind_addresses(args)?),
        "requirepass" => options.requirepass = Some(one()?.clone()),
        "aclfile" => options.aclfile = Some(one()?.clone()),
        "dir" => options.dir = Some(one()?.clone()),
        "dbfilename" => options.dbfilename = Some(one()?.clone()),
        "protected-mode" => options.protected_mode = Some(one()?.to_ascii_lowercase()),
        "cluster-enabled" => options.cluster_enabled = Some(one()?.to_ascii_lowercase()),
        "cluster-config-file" => options.cluster_config_file = Some(one()?.clone()),
        "tls-port" => {
            options.tls_port = Some(number("tls-port")?.try_into().map_err(|_| "bad port")?)
        }
        "tls-cert-file" => options.tls_cert_file = Some(one()?.clone()),
        "tls-key-file" => options.tls_key_file = Some(one()?.clone()),
        "tls-ca-cert-file" => options.tls_ca_cert_file = Some(one()?.clone()),
        "tls-auth-clients" => options.tls_auth_clients = Some(one()?.to_ascii_lowercase()),
        "tls-protocols" => options.tls_protocols = Some(args.join(" ")),
        "maxclients" => options.conn_limit = Some(positive(number("maxclients")?)?),
        "tcp-backlog" => options.listen_backlog = Some(positive(number("tcp-backlog")?)?),
        "timeout" => options.idle_timeout = Some(number("timeout")?),
        "io-threads" => options.threads = Some(positive(number("io-threads")?)?),
        "pidfile" => options.pidfile = Some(one()?.clone()),
        "daemonize" => options.daemon = one()?.eq_ignore_ascii_case("yes"),
        "maxmemory" => match memory_mib(one()?)? {
            // 0 is Redis's "no limit": Spinel's store always has one (-m).
            0 => return Ok(true),
            mib => options.memory_limit = Some(positive(mib)?),
        },
        _ => return Ok(false),
    }
    Ok(true)
}

fn positive(n: u64) -> Result<Positive, String> {
    n.to_string().parse::<Positive>()
}

/// `bind`'s addresses; `-` marks one Redis may skip when absent, `*` is every IPv4 address.
fn bind_addresses(args: &[String]) -> Result<Listen, String> {
    let addrs: Vec<&str> = args
        .iter()
        .map(|a| a.trim_start_matches('-'))
        .map(|a| match a {
            "*" => "0.0.0.0",
            "::*" => "::",
            other => other,
        })
        .collect();
    addrs.join(",").parse()
}

/// `maxmemory` in MiB, rounded up (Spinel's `-m` unit).
fn memory_mib(text: &str) -> Result<u64, String> {
    let lower = text.to_ascii_lowercase();
    let digits_end = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(digits_end);
    let scale: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1 << 10,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return Err("maxmemory must be a memory value".into()),
    };
    let bytes = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or("maxmemory must be a memory value")?;
    Ok(bytes.div_ceil(1 << 20))
}

/// Redis's `sdssplitargs`: words split on blanks; a quote opens anywhere in a word
/// (`>"a b"` is `>a b`), `"..."` takes `\n \r \t \b \a \\ \"` and `\xHH`, `'...'` takes
/// `\'`; a closing quote must end the word. `None` when unbalanced.
pub fn split_args(line: &str) -> Option<Vec<String>> {
    let bytes = line.as_bytes();
    let (mut words, mut at) = (Vec::new(), 0);
    loop {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if at == bytes.len() {
            return Some(words);
        }
        let mut word = Vec::new();
        at = split_word(bytes, at, &mut word)?;
        words.push(String::from_utf8_lossy(&word).into_owned());
    }
}

/// One word of [`split_args`] starting at `at` into `word`; where it ends.
fn split_word(bytes: &[u8], mut at: usize, word: &mut Vec<u8>) -> Option<usize> {
    let mut quote: Option<u8> = None;
    loop {
        match (quote, bytes.get(at)) {
            (Some(_), None) => return None,
            (None, None) => return Some(at),
            (None, Some(b)) if b.is_ascii_whitespace() => return Some(at),
            (None, Some(&b)) if b == b'"' || b == b'\'' => {
                quote = Some(b);
                at += 1;
            }
            (Some(q), Some(b)) if *b == q => {
                at += 1;
                if bytes.get(at).is_some_and(|b| !b.is_ascii_whitespace()) {
                    return None;
                }
                return Some(at);
            }
            (Some(b'"'), Some(b'\\')) if at + 1 < bytes.len() => at += escape(&bytes[at..], word),
            (Some(b'\''), Some(b'\\')) if bytes.get(at + 1) == Some(&b'\'') => {
                word.push(b'\'');
                at += 2;
            }
            (_, Some(b)) => {
                word.push(*b);
                at += 1;
            }
        }
    }
}

/// One backslash escape inside double quotes at the start of `rest`; the bytes it took.
fn escape(rest: &[u8], word: &mut Vec<u8>) -> usize {
    let hex = |b: u8| (b as char).to_digit(16);
    if rest[1] == b'x' && rest.len() >= 4 {
        if let (Some(high), Some(low)) = (hex(rest[2]), hex(rest[3])) {
            word.push((high * 16 + low) as u8);
            return 4;
        }
    }
    word.push(match rest[1] {
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'b' => 8,
        b'a' => 7,
        other => other,
    });
    2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: Redis's quoting rules.
    #[test]
    fn splits_as_redis() {
        let words = |line| split_args(line).map(|w| w.join("|"));
        assert_eq!(words("save 900 1"), Some("save|900|1".into()));
        assert_eq!(words("requirepass \"a b\\x41\\n\""), Some("requirepass|a bA\n".into()));
        assert_eq!(words("x 'it\\'s'"), Some("x|it's".into()));
        assert_eq!(words("save \"\""), Some("save|".into()));
        assert_eq!(words("x \"open"), None);
        assert_eq!(words("x \"a\"b"), None);
        assert_eq!(words("user a on >\"p w\" ~*"), Some("user|a|on|>p w|~*".into()));
    }

    /// Goal: Spinel's own options are taken from the file, the rest left for CONFIG SET,
    /// `save` lines add up, includes are followed and bounded.
    #[test]
    fn options_and_directives() {
        let dir = std::env::temp_dir().join(format!("spinel-redis-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let included = dir.join("more.conf");
        std::fs::write(&included, "hz 20\n").unwrap();
        let main = dir.join("redis.conf");
        let text = format!(
            "# comment\nport 7000\nbind 127.0.0.1 -::1\nmaxmemory 100mb\nsave 900 1\n\
             save 300 10\nhash-max-listpack-entries 64\ninclude {}\ndaemonize no\n",
            included.display()
        );
        std::fs::write(&main, text).unwrap();
        let conf = read(main.to_str().unwrap()).unwrap();
        let (options, rest) = (conf.options, conf.lines.directives);
        assert_eq!(options.resp_port, Some(7000));
        assert_eq!(options.listen.map(|l| l.addrs.len()), Some(2));
        assert_eq!(options.memory_limit, Some(positive(100).unwrap()));
        assert!(!options.daemon);
        let names: Vec<(&str, &str)> =
            rest.iter().map(|d| (d.name.as_str(), d.value.as_str())).collect();
        assert_eq!(
            names,
            [("hash-max-listpack-entries", "64"), ("hz", "20"), ("save", "900 1 300 10")]
        );
        std::fs::write(&included, format!("include {}\n", included.display())).unwrap();
        assert!(read(main.to_str().unwrap()).unwrap_err().contains("nested deeper"));
        std::fs::write(&main, "maxmemory lots\n").unwrap();
        assert!(read(main.to_str().unwrap()).unwrap_err().contains(":1: 'maxmemory lots'"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
