//! The value types of the options: each parses its text the same way whether it comes from
//! the command line (clap calls `FromStr`) or from the TOML file (serde goes through
//! [`text`]), so a value accepted in one place is accepted in the other.

use std::{fmt, net::IpAddr, str::FromStr};

use rt::IoChoice;
use serde::{Serialize, Serializer};

/// memcached's bounds on `-I`.
pub const ITEM_SIZE_MIN_BYTES: u64 = 1024;
pub const ITEM_SIZE_MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// A count that must be at least 1 (`-c 0` or `-t 0` would make a server that serves no one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Positive(pub u64);

impl FromStr for Positive {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text.parse::<u64>() {
            Ok(0) => Err("must be at least 1".into()),
            Ok(n) => Ok(Positive(n)),
            Err(_) => Err("expected a positive integer".into()),
        }
    }
}

impl Serialize for Positive {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

/// memcached's `-p` and `-U`: a port, `0` for none (that transport is off) or `-1` for one
/// the kernel picks (memcached's ephemeral port; `MEMCACHED_PORT_FILENAME` tells which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McPort {
    Off,
    Ephemeral,
    Port(u16),
}

impl McPort {
    /// The port to bind (0: the kernel picks), or None when off.
    pub fn bind_port(self) -> Option<u16> {
        match self {
            McPort::Off => None,
            McPort::Ephemeral => Some(0),
            McPort::Port(port) => Some(port),
        }
    }

    pub fn is_on(self) -> bool {
        self != McPort::Off
    }

    /// As memcached's `stats settings` and the command line write it.
    pub fn number(self) -> i32 {
        match self {
            McPort::Off => 0,
            McPort::Ephemeral => -1,
            McPort::Port(port) => i32::from(port),
        }
    }
}

impl FromStr for McPort {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text.parse::<i32>() {
            Ok(-1) => Ok(McPort::Ephemeral),
            Ok(0) => Ok(McPort::Off),
            Ok(port) => u16::try_from(port)
                .map(McPort::Port)
                .map_err(|_| format!("{text} is not in -1..=65535 (-1: any free port, 0: off)")),
            Err(_) => Err(format!("'{text}' is not a port number")),
        }
    }
}

impl fmt::Display for McPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

impl Serialize for McPort {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(self.number())
    }
}

/// `-l`: addresses, comma-separated; the text is kept for `stats settings` and the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    pub addrs: Vec<IpAddr>,
    pub text: String,
}

impl FromStr for Listen {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let mut addrs = Vec::new();
        for part in text.split(',').map(str::trim) {
            let host = part.strip_prefix('[').and_then(|p| p.strip_suffix(']')).unwrap_or(part);
            let addr = match host {
                "localhost" => IpAddr::from([127, 0, 0, 1]),
                _ => host.parse().map_err(|_| format!("'{part}' is not an IP address"))?,
            };
            if !addrs.contains(&addr) {
                addrs.push(addr);
            }
        }
        Ok(Listen { addrs, text: text.to_string() })
    }
}

/// `-I`: memcached's syntax, bytes or a number with a `k`/`m` suffix, within memcached's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemSize(pub u64);

impl FromStr for ItemSize {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let lower = text.to_ascii_lowercase();
        let (digits, unit) = match lower.as_bytes().last() {
            Some(b'k') => (&lower[..lower.len() - 1], 1024),
            Some(b'm') => (&lower[..lower.len() - 1], 1024 * 1024),
            _ => (&lower[..], 1),
        };
        let bytes =
            digits.parse::<u64>().map_err(|_| "expected bytes, or a size like 512k or 2m")?;
        let bytes = bytes.checked_mul(unit).ok_or("too large")?;
        if !(ITEM_SIZE_MIN_BYTES..=ITEM_SIZE_MAX_BYTES).contains(&bytes) {
            return Err(format!("must be between {ITEM_SIZE_MIN_BYTES} bytes and 1024m"));
        }
        Ok(ItemSize(bytes))
    }
}

impl fmt::Display for ItemSize {
    /// The shortest form that `from_str` reads back: `1m`, `2k`, or bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            n if n % (1 << 20) == 0 => write!(f, "{}m", n >> 20),
            n if n % (1 << 10) == 0 => write!(f, "{}k", n >> 10),
            n => write!(f, "{n}"),
        }
    }
}

/// `-B`: memcached's binding protocol: auto (by each connection's first byte), ascii
/// (text and meta) or binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol(pub String);

impl FromStr for Protocol {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "auto" | "ascii" | "binary" | "auto-negotiate" => Ok(Protocol(text.to_string())),
            _ => Err("expected auto, ascii or binary".into()),
        }
    }
}

/// `--io`: the I/O back end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io(pub IoChoice);

impl FromStr for Io {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "auto" => Ok(Io(IoChoice::Auto)),
            "uring" | "io_uring" => Ok(Io(IoChoice::Uring)),
            "epoll" => Ok(Io(IoChoice::Epoll)),
            _ => Err("expected auto, uring or epoll".into()),
        }
    }
}

impl fmt::Display for Io {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            IoChoice::Auto => "auto",
            IoChoice::Uring => "uring",
            IoChoice::Epoll => "epoll",
        })
    }
}

/// `-a`: the socket file's permission bits, in octal as memcached takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnixMask(pub u32);

impl FromStr for UnixMask {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match u32::from_str_radix(text, 8) {
            Ok(mask) if mask <= 0o777 => Ok(UnixMask(mask)),
            _ => Err("expected octal permission bits, such as 700".into()),
        }
    }
}

impl Serialize for UnixMask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:o}", self.0))
    }
}

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Plain lines for a terminal or journald.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

impl FromStr for LogFormat {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        <LogFormat as clap::ValueEnum>::from_str(text, false)
            .map_err(|_| "expected text or json".to_string())
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        })
    }
}

/// Serializes through `Display`, as a TOML string that `FromStr` reads back.
macro_rules! serialize_as_text {
    ($($ty:ty),*) => {$(
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}
serialize_as_text!(ItemSize, Io, LogFormat);

impl Serialize for Listen {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl Serialize for Protocol {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// What the file gives for a value: TOML's scalars are read as the text a flag would carry,
/// so `port = 11211` and `port = "11211"` (as the hand-written reader accepted) both work.
pub mod text {
    use std::{fmt::Display, str::FromStr};

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        Text(String),
        Integer(i64),
        Boolean(bool),
    }

    impl Scalar {
        fn into_text(self) -> String {
            match self {
                Scalar::Text(s) => s,
                Scalar::Integer(n) => n.to_string(),
                Scalar::Boolean(b) => b.to_string(),
            }
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(Scalar),
        Many(Vec<Scalar>),
    }

    fn scalar<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Scalar::deserialize(d)
            .map(Scalar::into_text)
            .map_err(|_| D::Error::custom("expected a string, an integer or a boolean"))
    }

    /// An optional value, parsed by the type's `FromStr` as on the command line.
    pub fn option<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr,
        T::Err: Display,
    {
        let text = scalar(d)?;
        text.parse().map(Some).map_err(D::Error::custom)
    }

    /// A plain value (the `-v` level).
    pub fn value<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr,
        T::Err: Display,
    {
        scalar(d)?.parse().map_err(D::Error::custom)
    }

    /// A switch: TOML booleans, or the words the hand-written reader took.
    pub fn switch<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        match scalar(d)?.as_str() {
            "true" | "yes" | "on" | "1" => Ok(true),
            "false" | "no" | "off" | "0" => Ok(false),
            _ => Err(D::Error::custom("expected true or false")),
        }
    }

    /// A repeatable option (`-o`): one string or a list of them.
    pub fn list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr,
        T::Err: Display,
    {
        let items = match OneOrMany::deserialize(d) {
            Ok(OneOrMany::One(one)) => vec![one],
            Ok(OneOrMany::Many(many)) => many,
            Err(_) => return Err(D::Error::custom("expected a string or a list of strings")),
        };
        items.into_iter().map(|s| s.into_text().parse().map_err(D::Error::custom)).collect()
    }

    /// A repeatable option written back as one comma-separated string, as memcached's -o
    /// takes it.
    pub fn joined<S: Serializer, T: Display>(items: &[T], s: S) -> Result<S::Ok, S::Error> {
        let texts: Vec<String> = items.iter().map(T::to_string).collect();
        s.serialize_str(&texts.join(","))
    }
}
