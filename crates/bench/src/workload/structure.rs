//! Redis data types a run can exercise instead of strings (`--structure`): which write a
//! set becomes and which read a get becomes (the wire forms are in `client::family`).
//!
//! ```text
//!   string  SET k v            GET k                     (the default; memcache too)
//!   hash    HSET k f v         HGET k f                  null = miss
//!   list    LPUSH k v          RPOP k                    null = miss
//!   set     SADD k f           SISMEMBER k f             :0 = miss
//!   zset    ZADD k n f         ZRANGE k 0 9              empty array = miss
//!   multi   MULTI SET a SET b EXEC    MULTI GET a GET b EXEC (one request, EXEC's array)
//!   stream  XADD k * item f at n value v
//!                              even field: XREADGROUP GROUP bench bench COUNT 10 STREAMS k >
//!                                          then XACK k bench <the IDs it delivered>
//!                              odd field:  XRANGE k - + COUNT 10     (empty/null = miss)
//!   geo     GEOADD k lon lat f field % 4 = 0, 1: GEOSEARCH k FROMLONLAT (f's place)
//!                                          BYRADIUS 5 km ASC COUNT 10
//!                              2: GEODIST k f g m      3: GEOPOS k f   (null = miss)
//! ```
//!
//! A stream's read is a consumer's: XREADGROUP hands over what is new since the group's
//! last read (a miss once the preload is consumed and nothing new came), and the op ends
//! when its XACK is answered (`client::family::FollowUps`). A geo member's place is drawn
//! from its id (`client::geo::place`), so GEOPOS answers are checked.
//!
//! A collection's ids are (key, field) pairs: id / fields is the key, id % fields the field
//! (`f<n>`), so the key space picks the key, `--fields` bounds each collection, and a
//! preload writes every field once.

/// Fields per collection key unless `--fields` says otherwise.
pub const FIELDS_DEFAULT: u64 = 100;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Structure {
    #[default]
    String,
    Hash,
    List,
    Set,
    Zset,
    Multi,
    Stream,
    Geo,
}

impl Structure {
    pub const ALL: [Structure; 8] = [
        Structure::String,
        Structure::Hash,
        Structure::List,
        Structure::Set,
        Structure::Zset,
        Structure::Multi,
        Structure::Stream,
        Structure::Geo,
    ];

    pub fn parse(text: &str) -> Result<Structure, String> {
        Structure::ALL.into_iter().find(|s| s.name() == text).ok_or(format!(
            "--structure {text}: want string, hash, list, set, zset, multi, stream or geo"
        ))
    }

    pub fn name(self) -> &'static str {
        match self {
            Structure::String => "string",
            Structure::Hash => "hash",
            Structure::List => "list",
            Structure::Set => "set",
            Structure::Zset => "zset",
            Structure::Multi => "multi",
            Structure::Stream => "stream",
            Structure::Geo => "geo",
        }
    }

    /// Whether its keys hold collections of fields (so ids are (key, field) pairs).
    pub fn is_collection(self) -> bool {
        !matches!(self, Structure::String | Structure::Multi)
    }
}

/// A structure with its fields per key: what the client needs to compose and parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    pub structure: Structure,
    /// At least 1.
    pub fields: u64,
}

impl Family {
    pub fn ids_per_key(self) -> u64 {
        if self.structure.is_collection() {
            self.fields
        } else {
            1
        }
    }

    /// Keys an op touches at least: 2 in a transaction (MULTI, SET a, SET b, EXEC).
    pub fn keys_per_op(self) -> usize {
        if self.structure == Structure::Multi {
            2
        } else {
            1
        }
    }

    /// The collection key and the field of request id `id`.
    pub fn split(self, id: u64) -> (u64, u64) {
        let per_key = self.ids_per_key();
        (id / per_key, id % per_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Structure::ALL {
            assert_eq!(Structure::parse(s.name()), Ok(s));
        }
        assert!(Structure::parse("bitmap").unwrap_err().contains("want string"));
    }

    /// Goal: a collection's ids split into key and field within bounds; strings and
    /// transactions keep the key space as it is.
    #[test]
    fn ids_split() {
        let hash = Family { structure: Structure::Hash, fields: 100 };
        assert_eq!((hash.split(0), hash.split(199), hash.split(250)), ((0, 0), (1, 99), (2, 50)));
        let multi = Family { structure: Structure::Multi, fields: 100 };
        assert_eq!((multi.split(250), multi.keys_per_op()), ((250, 0), 2));
        assert_eq!(Family { structure: Structure::String, fields: 7 }.ids_per_key(), 1);
    }
}
