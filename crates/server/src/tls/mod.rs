//! TLS for the memcached port (`-Z`, `-o ssl_*`) and the Redis TLS port (`--tls-port`,
//! `--tls-*`): rustls with ring, in user space, so no OpenSSL is linked.
//!
//! ```text
//!   Settings (files, client auth, min version) --load--> rustls::ServerConfig
//!   Context: the config in force, behind a lock read once per accepted TLS connection;
//!            `reload` (SIGHUP, memcached `refresh_certs`) builds a new one from the same
//!            files and swaps it in; connections already open keep the one they began with
//!   session.rs: rt::Session over rustls::ServerConnection (the loop's seam, see rt)
//! ```
//!
//! A file that cannot be read or parsed at start stops the server; at a reload it leaves
//! the config in force and the error is reported (memcached `refresh_certs` answers it, in
//! memcached's words: "Error loading the certificate chain: FILE : reason").

mod session;

use std::{
    fs,
    sync::{atomic::AtomicU64, Arc, PoisonError, RwLock},
};

use rustls::{
    pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
    server::WebPkiClientVerifier,
    RootCertStore, ServerConfig,
};

pub use session::TlsSession;

/// Whether and how a client must show a certificate (memcached `ssl_verify_mode`, Redis
/// `tls-auth-clients`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate asked for (memcached 0, Redis `no`).
    None,
    /// Asked for and checked against the CA when given; a client without one is let in
    /// (memcached 1 "request" and 3 "once": rustls never renegotiates, so once is request;
    /// Redis `optional`).
    Optional,
    /// A certificate from the CA is required (memcached 2, Redis `yes`).
    Required,
}

/// The protocol versions accepted (memcached `ssl_min_version`, Redis `tls-protocols`).
/// rustls speaks 1.2 and 1.3 only, so memcached's tlsv1.0 and tlsv1.1 mean 1.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    Tls12AndTls13,
    Tls12Only,
    Tls13Only,
}

/// What a TLS listener is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The server's certificate chain (PEM), leaf first.
    pub cert_path: String,
    /// Its private key (PEM); memcached lets it live in the chain file.
    pub key_path: String,
    /// Certificates of the CAs that sign client certificates (PEM).
    pub ca_path: Option<String>,
    pub client_auth: ClientAuth,
    pub versions: Versions,
}

/// The config in force for one TLS listener, replaced whole by a reload.
pub struct Context {
    /// The files and options the config in force was built from (changed by Redis's
    /// CONFIG SET of `tls-*` and by a configuration reload).
    settings: RwLock<Settings>,
    current: RwLock<Arc<ServerConfig>>,
    /// Failed handshakes (memcached's `ssl_handshake_errors`), counted by the sessions.
    handshake_errors: Arc<AtomicU64>,
}

impl Context {
    /// Loads the files; an error names the file at fault. Failed handshakes are counted
    /// in `handshake_errors`.
    pub fn new(settings: Settings, handshake_errors: Arc<AtomicU64>) -> Result<Context, String> {
        let config = load(&settings)?;
        let settings = RwLock::new(settings);
        Ok(Context { settings, current: RwLock::new(config), handshake_errors })
    }

    /// The config new connections start with.
    pub fn current(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Re-reads the files; on error the config in force stays.
    pub fn reload(&self) -> Result<(), String> {
        self.reconfigure(self.settings())
    }

    pub fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Builds a config from other settings and puts both in force; on error (a file that
    /// cannot be read, no CA for client certificates) the ones in force stay.
    pub fn reconfigure(&self, settings: Settings) -> Result<(), String> {
        let config = load(&settings)?;
        let mut in_force = self.settings.write().unwrap_or_else(PoisonError::into_inner);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = config;
        *in_force = settings;
        Ok(())
    }

    /// A session for a connection just accepted.
    pub fn session(&self) -> Option<Box<dyn rt::Session>> {
        match TlsSession::new(self.current(), Arc::clone(&self.handshake_errors)) {
            Ok(session) => Some(Box::new(session)),
            Err(e) => {
                // rustls refuses only a config it accepted before; keep serving others.
                tracing::error!("TLS session refused: {e}");
                None
            }
        }
    }
}

/// Reloads every context given; the first error (memcached's wording) is returned, and
/// every context that loaded is in force.
pub fn reload_all<'a>(contexts: impl IntoIterator<Item = &'a Context>) -> Result<(), String> {
    let mut first_error = None;
    for context in contexts {
        if let Err(message) = context.reload() {
            first_error.get_or_insert(message);
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn load(settings: &Settings) -> Result<Arc<ServerConfig>, String> {
    let chain = read_chain(&settings.cert_path)?;
    let key = read_key(&settings.key_path)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match settings.versions {
        Versions::Tls12AndTls13 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        Versions::Tls12Only => &[&rustls::version::TLS12],
        Versions::Tls13Only => &[&rustls::version::TLS13],
    };
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions)
        .map_err(|e| format!("TLS versions: {e}"))?;
    let builder = match (settings.client_auth, &settings.ca_path) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (_, None) => return Err("verifying client certificates needs a CA certificate".into()),
        (auth, Some(ca_path)) => {
            let roots = Arc::new(read_roots(ca_path)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            let verifier = match auth {
                ClientAuth::Optional => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            let verifier =
                verifier.build().map_err(|e| format!("client CA cert {ca_path}: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder.with_single_cert(chain, key).map_err(|e| {
        let (cert, key) = (&settings.cert_path, &settings.key_path);
        format!("Error loading the certificate chain: {cert} with the key {key} : {e}")
    })?;
    Ok(Arc::new(config))
}

fn read_chain(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = read(path, "certificate chain")?;
    let chain = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("Error loading the certificate chain: {path} : {e}"))?;
    match chain.is_empty() {
        true => Err(format!("Error loading the certificate chain: {path} : no certificate")),
        false => Ok(chain),
    }
}

fn read_key(path: &str) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = read(path, "private key")?;
    PrivateKeyDer::from_pem_slice(&bytes)
        .map_err(|e| format!("Error loading the private key: {path} : {e}"))
}

fn read_roots(path: &str) -> Result<RootCertStore, String> {
    let bytes = read(path, "client CA cert")?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| format!("Error loading the client CA cert: {path} : {e}"))?;
        roots.add(cert).map_err(|e| format!("Error loading the client CA cert: {path} : {e}"))?;
    }
    Ok(roots)
}

fn read(path: &str, what: &str) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|e| format!("Error loading the {what}: {path} : {e}"))
}
