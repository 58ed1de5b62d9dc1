//! Ketama consistent hashing, placement-compatible with libmemcached
//! (`MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED` with the MD5 key hash) and twemproxy
//! (`distribution: ketama`, `hash: md5`).
//!
//! ```text
//!   server i, weight w_i, n servers, W = sum of weights
//!   points_i = floor(w_i / W * 160 / 4 * n + 1e-10) * 4      (computed in f32, as both do)
//!   for j in 0 .. points_i / 4:
//!       d = md5("<name_i>-<j>")                               16 bytes
//!       4 points: d[4a..4a+4] read little-endian, a = 0..3     (160 points per unit weight)
//!   ring = all points sorted by value
//!   key -> h = md5(key)[0..4] little-endian -> first point with value >= h (wrap to the first)
//! ```
//!
//! The one difference between the two is the name hashed for a server: libmemcached uses
//! `host` when the port is 11211 and `host:port` otherwise ([`libmemcached_name`]);
//! twemproxy uses the server's name from its configuration when one is given, else the
//! same as libmemcached (it leaves 11211 out too, for libmemcached's sake;
//! [`twemproxy_name`]). The placement test vectors below were produced by a
//! real twemproxy 0.5.0 (Debian `nutcracker`) routing `set`s to three memcached instances.

use md5::{Digest, Md5};

/// Points per server per unit of relative weight (both libraries' constant).
const POINTS_PER_SERVER: f32 = 160.0;
/// Points taken from one MD5 digest.
const POINTS_PER_HASH: u32 = 4;

/// The name libmemcached hashes for a server.
pub fn libmemcached_name(host: &str, port: u16) -> String {
    if port == 11211 {
        host.to_string()
    } else {
        format!("{host}:{port}")
    }
}

/// The name twemproxy hashes for a server that has no name in its configuration: as
/// libmemcached's, without the port when it is 11211 (a test against nutcracker on port
/// 11211 of three loopback addresses found 2,082 of 3,000 keys elsewhere with the port).
pub fn twemproxy_name(host: &str, port: u16) -> String {
    libmemcached_name(host, port)
}

/// The key hash: the first four bytes of the key's MD5, little-endian.
pub fn key_hash(key: &[u8]) -> u32 {
    let d = Md5::digest(key);
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// A built ring. `server_for_key` is a binary search over the sorted points.
#[derive(Debug, Clone)]
pub struct Ketama {
    /// (point value, server index), sorted by value.
    points: Vec<(u32, u32)>,
    server_count: usize,
}

impl Ketama {
    /// Builds the ring for `servers`, each a (name, weight); weights must be positive.
    pub fn new(servers: &[(String, u32)]) -> Ketama {
        assert!(!servers.is_empty(), "a ring needs a server");
        assert!(servers.iter().all(|(_, w)| *w > 0), "weights must be positive");
        let total: u32 = servers.iter().map(|(_, w)| w).sum();
        let mut points = Vec::new();
        for (index, (name, weight)) in servers.iter().enumerate() {
            let count = points_for(*weight, total, servers.len());
            for j in 0..count / POINTS_PER_HASH {
                let d = Md5::digest(format!("{name}-{j}").as_bytes());
                for a in d.chunks_exact(4) {
                    let value = u32::from_le_bytes([a[0], a[1], a[2], a[3]]);
                    points.push((value, index as u32));
                }
            }
        }
        // Stable sort by value alone, as a C qsort on values would order distinct values.
        points.sort_by_key(|&(value, _)| value);
        Ketama { points, server_count: servers.len() }
    }

    pub fn server_count(&self) -> usize {
        self.server_count
    }

    /// The server a key belongs to.
    pub fn server_for_key(&self, key: &[u8]) -> usize {
        if self.server_count == 1 {
            return 0;
        }
        self.server_for_hash(key_hash(key))
    }

    /// The server owning `hash`: the first point at or after it, wrapping around.
    pub fn server_for_hash(&self, hash: u32) -> usize {
        let at = self.points.partition_point(|&(value, _)| value < hash);
        let (_, server) = self.points.get(at).unwrap_or(&self.points[0]);
        *server as usize
    }
}

/// Points of one server: the weighted formula, in f32 as the C code computes it.
fn points_for(weight: u32, total: u32, servers: usize) -> u32 {
    let pct = weight as f32 / total as f32;
    let raw = f64::from(pct * POINTS_PER_SERVER / 4.0 * servers as f32) + 0.000_000_000_1;
    (raw as f32).floor() as u32 * POINTS_PER_HASH
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Placement of `key:0` .. `key:39` by twemproxy 0.5.0 over
    /// `127.0.0.1:21211:1`, `127.0.0.1:21212:1`, `127.0.0.1:21213:2` (hash md5, distribution
    /// ketama): each key was `set` through the proxy and then found with `get` on exactly one
    /// of the three memcached instances.
    const TWEMPROXY_PLACEMENT: [usize; 40] = [
        2, 0, 2, 2, 1, 1, 2, 2, 2, 1, 1, 2, 1, 0, 1, 2, 1, 2, 2, 2, 0, 2, 2, 2, 2, 1, 0, 0, 2, 1,
        0, 2, 1, 2, 1, 1, 2, 1, 2, 2,
    ];

    /// Goal: the ring places keys as a real twemproxy does. Method: the recorded placement
    /// above (weights 1, 1, 2, so the point counts and the weighting are exercised).
    #[test]
    fn matches_twemproxy() {
        let servers: Vec<(String, u32)> = [(21211, 1), (21212, 1), (21213, 2)]
            .iter()
            .map(|&(port, w)| (twemproxy_name("127.0.0.1", port), w))
            .collect();
        let ring = Ketama::new(&servers);
        for (i, want) in TWEMPROXY_PLACEMENT.iter().enumerate() {
            let key = format!("key:{i}");
            assert_eq!(ring.server_for_key(key.as_bytes()), *want, "{key}");
        }
    }

    /// Goal: the point counts follow the weighted formula: 160 per server at equal weights,
    /// in proportion otherwise, always a multiple of 4.
    #[test]
    fn point_counts() {
        assert_eq!(points_for(1, 3, 3), 160);
        assert_eq!(points_for(1, 4, 3), 120);
        assert_eq!(points_for(2, 4, 3), 240);
        let ring = Ketama::new(&[("a".into(), 1), ("b".into(), 1)]);
        assert_eq!(ring.points.len(), 320);
        assert!(ring.points.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    /// Goal: lookups wrap past the last point, and keys spread roughly by weight.
    #[test]
    fn wrap_and_spread() {
        let ring = Ketama::new(&[("a:1".into(), 1), ("b:2".into(), 1), ("c:3".into(), 2)]);
        let last = ring.points.last().unwrap().0;
        assert_eq!(ring.server_for_hash(last.wrapping_add(1).max(last)), ring.server_for_hash(0));
        let mut counts = [0u32; 3];
        for i in 0..20_000 {
            counts[ring.server_for_key(format!("k{i}").as_bytes())] += 1;
        }
        assert!(counts[2] > counts[0] && counts[2] > counts[1], "{counts:?}");
        assert!(counts.iter().all(|&c| c > 3_000), "{counts:?}");
    }

    #[test]
    fn names() {
        assert_eq!(libmemcached_name("10.0.0.1", 11211), "10.0.0.1");
        assert_eq!(libmemcached_name("10.0.0.1", 11212), "10.0.0.1:11212");
        assert_eq!(twemproxy_name("10.0.0.1", 11211), "10.0.0.1");
        assert_eq!(twemproxy_name("10.0.0.1", 11212), "10.0.0.1:11212");
    }
}
