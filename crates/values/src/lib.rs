//! Redis values as bytes and structures, with no protocol and no socket: what a command
//! handler (in `exec`) reads and writes, what a snapshot saves and DUMP/RESTORE carry.
//!
//! ```text
//!   varint, entries      the LEB128 lengths and length-prefixed entries encodings share
//!   list, hash, set,     each collection's encoding as the store holds it (read in place,
//!   zset                 edited, validated) and its conversion to/from owned::Value
//!   owned                large collections kept outside the store (the structures; the
//!                        registry that ties them to keys is exec's `owned`)
//!   rdb                  DUMP payloads: the RDB value codec (LZF, CRC-64, packed forms)
//!   stream               streams: entries in nodes by ID, consumer groups, snapshot codec
//!   scan                 the cursors of HSCAN/SSCAN/ZSCAN over collections
//!   int                  Redis's canonical integer text (`string2ll`), as sets compare
//! ```
//!
//! Every decoder here takes untrusted bytes (a RESTORE payload, a snapshot file, an
//! encoding read back from the store) and never panics or over-allocates on them: each
//! has a fuzz target in `fuzz/` and a model-based property test in `tests/`.

#![forbid(unsafe_code)]

pub mod entries;
pub mod hash;
pub mod int;
pub mod list;
pub mod owned;
pub mod rdb;
pub mod scan;
pub mod set;
pub mod stream;
pub mod varint;
pub mod zset;
