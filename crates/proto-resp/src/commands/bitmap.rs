//! Bitmaps and HyperLogLog on strings: SETBIT ... BITFIELD_RO, PFADD PFCOUNT PFMERGE.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name.

use super::{spec, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BitmapId {
    Bitcount,
    Bitfield,
    BitfieldRo,
    Bitop,
    Bitpos,
    Getbit,
    Pfadd,
    Pfcount,
    Pfdebug,
    Pfmerge,
    Pfselftest,
    Setbit,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static BITMAP_COMMANDS: &[CommandSpec] = {
    use {BitmapId as B, CommandId::Bitmaps as C, Flags as F, Group as G, Run::Command as R};
    &[
    spec(R(C(B::Bitcount)), "bitcount", -2, G::Bitmap, "2.6.0", (1, 1, 1),
        &[F::READONLY],
        "Counts the set bits of a string, or of a byte or bit range of it."),
    spec(R(C(B::Bitfield)), "bitfield", -2, G::Bitmap, "3.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Reads, writes and increments integers of any width at any bit offset of a string."),
    spec(R(C(B::BitfieldRo)), "bitfield_ro", -2, G::Bitmap, "6.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "BITFIELD limited to GET, for read-only use."),
    spec(R(C(B::Bitop)), "bitop", -4, G::Bitmap, "2.6.0", (2, -1, 1),
        &[F::WRITE, F::DENYOOM],
        "Stores the AND, OR, XOR or NOT of strings in a key."),
    spec(R(C(B::Bitpos)), "bitpos", -3, G::Bitmap, "2.8.7", (1, 1, 1),
        &[F::READONLY],
        "Finds the first set or clear bit of a string, or of a range of it."),
    spec(R(C(B::Getbit)), "getbit", 3, G::Bitmap, "2.2.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns one bit of a string."),
    spec(R(C(B::Pfadd)), "pfadd", -2, G::Hyperloglog, "2.8.9", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Adds elements to a HyperLogLog."),
    spec(R(C(B::Pfcount)), "pfcount", -2, G::Hyperloglog, "2.8.9", (1, -1, 1),
        &[F::READONLY, F::MAY_REPLICATE],
        "Estimates the number of distinct elements added to one or more HyperLogLogs."),
    spec(R(C(B::Pfdebug)), "pfdebug", 3, G::Hyperloglog, "2.8.9", (2, 2, 1),
        &[F::WRITE, F::DENYOOM, F::ADMIN],
        "Shows a HyperLogLog's registers, encoding or opcodes, or makes it dense."),
    spec(R(C(B::Pfmerge)), "pfmerge", -2, G::Hyperloglog, "2.8.9", (1, -1, 1),
        &[F::WRITE, F::DENYOOM],
        "Merges HyperLogLogs into a destination key."),
    spec(R(C(B::Pfselftest)), "pfselftest", 1, G::Hyperloglog, "2.8.9", (0, 0, 0),
        &[F::ADMIN],
        "Checks the HyperLogLog implementation."),
    spec(R(C(B::Setbit)), "setbit", 4, G::Bitmap, "2.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Sets or clears one bit of a string, growing it as needed."),
    ]
};
