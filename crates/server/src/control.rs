//! Live reconfiguration, the server's side: what Redis's CONFIG SET asks of it
//! ([`exec::ServerControl`]: the TLS port's files, room for more connections) and what a
//! SIGHUP reload of `--config` puts in force.
//!
//! A reload re-reads the file with the original command line over it and applies, of what
//! changed, every setting that can change while running: the log level, the memory limit
//! (as `cache_memlimit`: shrinking evicts down to it), the connection limit, the idle
//! timeout, `requirepass`, `protected-mode`, and the TLS files and options of both kinds of
//! port (new connections get them). Anything else that changed is named in the log and
//! applies at the next restart. A file that does not parse changes nothing.

use std::sync::{atomic::Ordering, Arc, Mutex, PoisonError};

use exec::Shared;

use crate::{config, config::Config, process, tls};

/// Redis's `tls-*` settings of the Redis TLS port as last put in force.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RespTls {
    port: u16,
    cert_file: String,
    key_file: String,
    ca_cert_file: String,
    auth_clients: String,
    protocols: String,
}

impl RespTls {
    fn from_config(config: &Config) -> RespTls {
        RespTls {
            port: config.tls_port,
            cert_file: config.tls_cert_file.clone().unwrap_or_default(),
            key_file: config.tls_key_file.clone().unwrap_or_default(),
            ca_cert_file: config.tls_ca_cert_file.clone().unwrap_or_default(),
            auth_clients: config.tls_auth_clients.to_ascii_lowercase(),
            protocols: config.tls_protocols.clone().unwrap_or_default(),
        }
    }

    /// The listener's settings these make (the start's checks: files named, a CA when
    /// client certificates are asked for, known protocols).
    fn settings(&self) -> Result<Option<tls::Settings>, String> {
        let given = |text: &str| (!text.is_empty()).then(|| text.to_string());
        let (cert, key, ca, protocols) = (
            given(&self.cert_file),
            given(&self.key_file),
            given(&self.ca_cert_file),
            given(&self.protocols),
        );
        config::resp_tls_settings(config::RespFlags {
            port: self.port,
            cert_file: cert.as_deref(),
            key_file: key.as_deref(),
            ca_cert_file: ca.as_deref(),
            auth_clients: &self.auth_clients,
            protocols: protocols.as_deref(),
        })
    }

    fn set(&mut self, name: &str, value: String) {
        match name {
            "tls-cert-file" => self.cert_file = value,
            "tls-key-file" => self.key_file = value,
            "tls-ca-cert-file" => self.ca_cert_file = value,
            "tls-auth-clients" => self.auth_clients = value.to_ascii_lowercase(),
            "tls-protocols" => self.protocols = value,
            _ => {}
        }
    }

    fn get(&self, name: &str) -> String {
        match name {
            "tls-port" => self.port.to_string(),
            "tls-cert-file" => self.cert_file.clone(),
            "tls-key-file" => self.key_file.clone(),
            "tls-ca-cert-file" => self.ca_cert_file.clone(),
            "tls-auth-clients" => self.auth_clients.clone(),
            "tls-protocols" => self.protocols.clone(),
            _ => String::new(),
        }
    }
}

/// The running server's TLS contexts and the settings they were last built from; clones
/// share them (one is exec's, one the reload's).
#[derive(Clone)]
pub struct Control {
    memcache_tls: Option<Arc<tls::Context>>,
    resp_tls: Option<Arc<tls::Context>>,
    resp_params: Arc<Mutex<RespTls>>,
    /// `--redis-conf`, absolute (CONFIG REWRITE writes it).
    redis_conf: Option<String>,
}

impl Control {
    pub fn new(
        config: &Config,
        memcache_tls: Option<Arc<tls::Context>>,
        resp_tls: Option<Arc<tls::Context>>,
    ) -> Control {
        let resp_params = Arc::new(Mutex::new(RespTls::from_config(config)));
        // Absolute, as Redis keeps it: the file is found whatever the working directory.
        let redis_conf = config.redis_conf_file.as_ref().map(|path| {
            std::fs::canonicalize(path).map_or_else(|_| path.clone(), |p| p.display().to_string())
        });
        Control { memcache_tls, resp_tls, resp_params, redis_conf }
    }

    /// Puts Redis `tls-*` settings in force: without a TLS port they are only kept (as
    /// Redis keeps them); with one its files are read with them first.
    fn put_resp_tls(&self, wanted: RespTls) -> Result<(), String> {
        let mut params = self.resp_params.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(context), Some(settings)) = (&self.resp_tls, wanted.settings()?) {
            context.reconfigure(settings)?;
        }
        *params = wanted;
        Ok(())
    }
}

impl exec::ServerControl for Control {
    fn end_connection(&self, fd: i32) {
        rt::shutdown_connection(fd);
    }

    fn tls_parameter(&self, name: &str) -> String {
        self.resp_params.lock().unwrap_or_else(PoisonError::into_inner).get(name)
    }

    fn set_tls_parameters(&self, values: &[(&'static str, Vec<u8>)]) -> Result<(), String> {
        let mut wanted = self.resp_params.lock().unwrap_or_else(PoisonError::into_inner).clone();
        for (name, value) in values {
            wanted.set(name, String::from_utf8_lossy(value).into_owned());
        }
        self.put_resp_tls(wanted).map_err(|reason| {
            tracing::error!("CONFIG SET: cannot update the TLS configuration: {reason}");
            reason
        })
    }

    fn allow_connections(&self, count: u64) -> Result<(), u64> {
        process::allow_connections(count)
    }

    fn config_file(&self) -> Option<String> {
        self.redis_conf.clone()
    }
}

/// The file keys a reload applies while running (see the module's comment).
const LIVE_KEYS: &[&str] = &[
    "verbose",
    "memory-limit",
    "conn-limit",
    "idle-timeout",
    "noevict-dbs",
    "noevict-prefixes",
    "requirepass",
    "protected-mode",
    "extended",
    "tls-cert-file",
    "tls-key-file",
    "tls-ca-cert-file",
    "tls-auth-clients",
    "tls-protocols",
];

/// SIGHUP: applies what changed between the configuration in force (`current`, updated
/// here to what is in force after it) and the file read again.
pub fn reload(shared: &Shared, control: &Control, current: &mut Config) {
    let reloaded = match config::reload(current) {
        Ok(reloaded) => reloaded,
        Err(message) => {
            tracing::error!("reload refused, the running configuration stays: {message}");
            return;
        }
    };
    let changed = config::changed_keys(current, &reloaded);
    for key in changed.iter().filter(|key| !LIVE_KEYS.contains(&key.as_str())) {
        tracing::warn!("reload: `{key}` changed; it applies at the next restart");
    }
    let mut applied = reloaded;
    shared.memcache.verbosity.store(applied.verbosity, Ordering::Relaxed);
    apply_limits(shared, current, &mut applied);
    apply_auth(shared, current, &applied);
    apply_tls(control, current, &mut applied);
    // What could not be applied stays as it was, so the next reload names it again.
    keep_unapplied(&mut applied, current);
    *current = applied;
    tracing::info!("configuration reloaded");
}

/// The memory and connection limits and the idle timeout; a limit refused keeps the one in
/// force (and `after` says so).
fn apply_limits(shared: &Shared, before: &Config, after: &mut Config) {
    let mib = after.memory_limit_mib;
    if mib != before.memory_limit_mib {
        match shared.core.set_maxbytes(mib << 20) {
            Ok(()) => tracing::info!("reload: memory limit {mib} MiB"),
            Err(e) => {
                tracing::error!("reload: memory limit {mib} MiB refused: {e}");
                after.memory_limit_mib = before.memory_limit_mib;
            }
        }
    }
    let conns = after.conn_limit;
    if conns != before.conn_limit {
        match process::allow_connections(conns) {
            Ok(()) => shared.core.set_max_connections(conns),
            Err(most) => {
                tracing::error!("reload: connection limit {conns} refused: room for {most}");
                after.conn_limit = before.conn_limit;
            }
        }
    }
    if after.idle_timeout_secs != before.idle_timeout_secs {
        shared.core.set_idle_timeout_secs(after.idle_timeout_secs);
    }
    if (after.noevict_dbs, &after.noevict_prefixes)
        != (before.noevict_dbs, &before.noevict_prefixes)
    {
        crate::apply_noevict_marks(shared, after);
    }
}

fn apply_auth(shared: &Shared, before: &Config, after: &Config) {
    if after.requirepass != before.requirepass {
        let password = after.requirepass.as_deref().unwrap_or_default();
        exec::resp::auth::set_password(shared, password.as_bytes());
    }
    if after.protected_mode != before.protected_mode {
        exec::resp::auth::set_protected_mode(shared, after.protected_mode);
    }
}

/// Both kinds of TLS port; settings refused keep the ones in force (and `after` says so).
fn apply_tls(control: &Control, before: &Config, after: &mut Config) {
    if let (Some(context), Some(settings)) = (&control.memcache_tls, &after.memcache_tls) {
        if before.memcache_tls.as_ref() != Some(settings) {
            match context.reconfigure(settings.clone()) {
                Ok(()) => tracing::info!("reload: memcached TLS settings in force"),
                Err(e) => {
                    tracing::error!("reload: memcached TLS settings refused: {e}");
                    after.memcache_tls.clone_from(&before.memcache_tls);
                    after.ssl_suboptions.clone_from(&before.ssl_suboptions);
                }
            }
        }
    }
    let (was, wanted) = (RespTls::from_config(before), RespTls::from_config(after));
    if wanted != was && wanted.port == was.port {
        match control.put_resp_tls(wanted) {
            Ok(()) => tracing::info!("reload: Redis TLS settings in force"),
            Err(e) => {
                tracing::error!("reload: Redis TLS settings refused: {e}");
                after.tls_cert_file.clone_from(&before.tls_cert_file);
                after.tls_key_file.clone_from(&before.tls_key_file);
                after.tls_ca_cert_file.clone_from(&before.tls_ca_cert_file);
                after.tls_auth_clients.clone_from(&before.tls_auth_clients);
                after.tls_protocols.clone_from(&before.tls_protocols);
                after.resp_tls.clone_from(&before.resp_tls);
            }
        }
    }
}

/// Settings a reload cannot change keep their running values in the configuration kept.
fn keep_unapplied(applied: &mut Config, running: &Config) {
    let args = applied.args.clone();
    let mut kept = running.clone();
    kept.args = args;
    kept.verbosity = applied.verbosity;
    kept.memory_limit_mib = applied.memory_limit_mib;
    kept.conn_limit = applied.conn_limit;
    kept.idle_timeout_secs = applied.idle_timeout_secs;
    kept.noevict_dbs = applied.noevict_dbs;
    kept.noevict_prefixes = applied.noevict_prefixes.clone();
    kept.requirepass = applied.requirepass.clone();
    kept.protected_mode = applied.protected_mode;
    kept.memcache_tls = applied.memcache_tls.clone();
    kept.ssl_suboptions = applied.ssl_suboptions.clone();
    kept.tls_cert_file = applied.tls_cert_file.clone();
    kept.tls_key_file = applied.tls_key_file.clone();
    kept.tls_ca_cert_file = applied.tls_ca_cert_file.clone();
    kept.tls_auth_clients = applied.tls_auth_clients.clone();
    kept.tls_protocols = applied.tls_protocols.clone();
    kept.resp_tls = applied.resp_tls.clone();
    *applied = kept;
}
