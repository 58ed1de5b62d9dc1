//! The TLS settings: memcached's `-Z` with its `-o ssl_*` suboptions, and Redis's
//! `--tls-port` with `--tls-cert-file`, `--tls-key-file`, `--tls-ca-cert-file` and
//! `--tls-auth-clients`, checked here into [`crate::tls::Settings`].

use crate::tls::{ClientAuth, Settings, Versions};

/// The `-o` suboptions that configure `-Z` (the other `ssl_*` ones are ignored with a
/// warning: ciphers, key format, buffer sizes, session cache and kernel TLS).
pub const SSL_SUBOPTIONS: &[&str] =
    &["ssl_chain_cert", "ssl_key", "ssl_ca_cert", "ssl_verify_mode", "ssl_min_version"];

/// Checks one `-Z` suboption's value.
pub fn check_suboption(key: &str, value: &str) -> Result<(), String> {
    match key {
        "ssl_verify_mode" => verify_mode(value).map(drop),
        "ssl_min_version" => min_version(value).map(drop),
        _ if value.is_empty() => Err(format!("-o {key}: a file name is needed")),
        _ => Ok(()),
    }
}

/// memcached's `ssl_verify_mode`: 0 none, 1 request, 2 require, 3 once.
fn verify_mode(value: &str) -> Result<ClientAuth, String> {
    match value {
        "0" => Ok(ClientAuth::None),
        "1" | "3" => Ok(ClientAuth::Optional),
        "2" => Ok(ClientAuth::Required),
        _ => Err(format!("-o ssl_verify_mode: '{value}' is not 0, 1, 2 or 3")),
    }
}

/// memcached's `ssl_min_version`: 0-3 (memcached takes only these), or tlsv1.0-tlsv1.3 as
/// its help names them; rustls has nothing below 1.2.
fn min_version(value: &str) -> Result<Versions, String> {
    match value {
        "0" | "1" | "2" | "tlsv1.0" | "tlsv1.1" | "tlsv1.2" => Ok(Versions::Tls12AndTls13),
        "3" | "tlsv1.3" => Ok(Versions::Tls13Only),
        _ => Err(format!("-o ssl_min_version: '{value}' is not tlsv1.0-tlsv1.3 (0-3)")),
    }
}

/// `-Z`'s settings from the `ssl_*` suboptions (the last of each wins), if `-Z` was given.
pub fn memcache(
    enabled: bool,
    suboptions: &[(String, String)],
) -> Result<Option<Settings>, String> {
    let last = |key: &str| suboptions.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    if !enabled {
        return Ok(None);
    }
    let cert_path = last("ssl_chain_cert")
        .ok_or("-Z: no certificate; give -o ssl_chain_cert=FILE (and ssl_key=FILE)")?;
    Ok(Some(Settings {
        cert_path: cert_path.to_string(),
        key_path: last("ssl_key").unwrap_or(cert_path).to_string(),
        ca_path: last("ssl_ca_cert").map(str::to_string),
        client_auth: verify_mode(last("ssl_verify_mode").unwrap_or("0"))?,
        versions: min_version(last("ssl_min_version").unwrap_or("tlsv1.2"))?,
    }))
}

/// Redis's TLS flags as given.
pub struct RespFlags<'a> {
    pub port: u16,
    pub cert_file: Option<&'a str>,
    pub key_file: Option<&'a str>,
    pub ca_cert_file: Option<&'a str>,
    pub auth_clients: &'a str,
    /// `tls-protocols`: space-separated, as Redis reads it (None: TLSv1.2 and TLSv1.3).
    pub protocols: Option<&'a str>,
}

/// Redis's `tls-protocols`: the versions named, case-insensitive; the ones rustls lacks
/// (TLSv1, TLSv1.1) are refused, since Spinel could not honour them.
fn protocols(list: &str) -> Result<Versions, String> {
    let (mut tls12, mut tls13) = (false, false);
    for name in list.split_whitespace() {
        match name.to_ascii_lowercase().as_str() {
            "tlsv1.2" => tls12 = true,
            "tlsv1.3" => tls13 = true,
            _ => return Err(format!("--tls-protocols: '{name}' is not TLSv1.2 or TLSv1.3")),
        }
    }
    match (tls12, tls13) {
        (true, true) => Ok(Versions::Tls12AndTls13),
        (true, false) => Ok(Versions::Tls12Only),
        (false, true) => Ok(Versions::Tls13Only),
        (false, false) => Err("--tls-protocols: no protocol named".into()),
    }
}

/// The TLS RESP port's settings, if it has one.
pub fn resp(flags: RespFlags<'_>) -> Result<Option<Settings>, String> {
    if flags.port == 0 {
        return Ok(None);
    }
    let client_auth = match flags.auth_clients.to_ascii_lowercase().as_str() {
        "yes" => ClientAuth::Required,
        "optional" => ClientAuth::Optional,
        "no" => ClientAuth::None,
        _ => return Err("--tls-auth-clients: argument must be 'yes', 'optional' or 'no'".into()),
    };
    if client_auth != ClientAuth::None && flags.ca_cert_file.is_none() {
        return Err("--tls-port: --tls-ca-cert-file must be given when --tls-auth-clients \
                    is yes or optional"
            .into());
    }
    let need = |file: Option<&str>, flag: &str| {
        file.map(str::to_string).ok_or_else(|| format!("--tls-port: {flag} must be given"))
    };
    Ok(Some(Settings {
        cert_path: need(flags.cert_file, "--tls-cert-file")?,
        key_path: need(flags.key_file, "--tls-key-file")?,
        ca_path: flags.ca_cert_file.map(str::to_string),
        client_auth,
        versions: match flags.protocols {
            Some(list) => protocols(list)?,
            None => Versions::Tls12AndTls13,
        },
    }))
}
