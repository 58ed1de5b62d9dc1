//! The geospatial commands: GEOADD ... GEOSEARCHSTORE.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name. GEORADIUS and
//! GEORADIUSBYMEMBER are writes marked `movablekeys`: their STORE and STOREDIST
//! destinations come among the options (keyword key specs, see `meta.rs`).

use super::{spec, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GeoId {
    Geoadd,
    Geodist,
    Geohash,
    Geopos,
    Georadius,
    GeoradiusRo,
    Georadiusbymember,
    GeoradiusbymemberRo,
    Geosearch,
    Geosearchstore,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static GEO_COMMANDS: &[CommandSpec] = {
    use {CommandId::Geo as C, Flags as F, GeoId as E, Group as G, Run::Command as R};
    &[
    spec(R(C(E::Geoadd)), "geoadd", -5, G::Geo, "3.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Adds members with their longitude and latitude to a geospatial index (a sorted set)."),
    spec(R(C(E::Geodist)), "geodist", -4, G::Geo, "3.2.0", (1, 1, 1),
        &[F::READONLY],
        "The distance between two members of a geospatial index."),
    spec(R(C(E::Geohash)), "geohash", -2, G::Geo, "3.2.0", (1, 1, 1),
        &[F::READONLY],
        "Members' positions as standard geohash strings."),
    spec(R(C(E::Geopos)), "geopos", -2, G::Geo, "3.2.0", (1, 1, 1),
        &[F::READONLY],
        "Members' longitudes and latitudes."),
    spec(R(C(E::Georadius)), "georadius", -6, G::Geo, "3.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::MOVABLEKEYS],
        "Members within a radius of a point; may store the result."),
    spec(R(C(E::GeoradiusRo)), "georadius_ro", -6, G::Geo, "3.2.10", (1, 1, 1),
        &[F::READONLY],
        "Members within a radius of a point."),
    spec(R(C(E::Georadiusbymember)), "georadiusbymember", -5, G::Geo, "3.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::MOVABLEKEYS],
        "Members within a radius of a member; may store the result."),
    spec(R(C(E::GeoradiusbymemberRo)), "georadiusbymember_ro", -5, G::Geo, "3.2.10", (1, 1, 1),
        &[F::READONLY],
        "Members within a radius of a member."),
    spec(R(C(E::Geosearch)), "geosearch", -7, G::Geo, "6.2.0", (1, 1, 1),
        &[F::READONLY],
        "Members inside a circle or a box around a point or a member."),
    spec(R(C(E::Geosearchstore)), "geosearchstore", -8, G::Geo, "6.2.0", (1, 2, 1),
        &[F::WRITE, F::DENYOOM],
        "Stores the members inside a circle or a box around a point or a member."),
    ]
};
