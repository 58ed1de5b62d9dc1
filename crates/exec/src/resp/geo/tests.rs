//! Wire transcripts of the GEO commands, as redis-server 7.0.15 answered them.

use crate::resp::testkit::Harness;

const PAIR: &str = "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania";

/// Goal: the basics in RESP2: scores, positions, hashes, distances, searches with every
/// WITH option, and a missing key or member. Method: wire table.
#[test]
fn resp2_transcript() {
    let mut h = Harness::new();
    h.check(&[
        (PAIR, ":2\r\n"),
        ("ZSCORE Sicily Palermo", "$16\r\n3479099956230698\r\n"),
        ("GEOPOS Sicily Palermo nope", "*2\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n*-1\r\n"),
        ("GEOHASH Sicily Palermo nope", "*2\r\n$11\r\nsqc8b49rny0\r\n$-1\r\n"),
        ("GEODIST Sicily Palermo Catania km", "$8\r\n166.2742\r\n"),
        ("GEODIST Sicily Palermo nope", "$-1\r\n"),
        ("GEODIST nokey a b", "$-1\r\n"),
        ("GEOPOS nokey a", "*1\r\n*-1\r\n"),
        ("GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH ASC", "*2\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n*2\r\n$20\r\n15.08726745843887329\r\n$20\r\n37.50266842333162032\r\n*4\r\n$7\r\nPalermo\r\n$8\r\n190.4424\r\n:3479099956230698\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n"),
        ("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km DESC COUNT 1", "*1\r\n$7\r\nPalermo\r\n"),
        ("GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 100 km STOREDIST", ":1\r\n"),
        ("ZRANGE dst 0 -1 WITHSCORES", "*2\r\n$7\r\nPalermo\r\n$1\r\n0\r\n"),
        ("GEOSEARCHSTORE dst nokey FROMMEMBER Palermo BYRADIUS 100 km", ":0\r\n"),
        ("EXISTS dst", ":0\r\n"),
    ]);
}

/// Goal: RESP3 sends coordinates as doubles and a missing member as `_`. Method: wire table.
#[test]
fn resp3_transcript() {
    let mut h = Harness::new();
    h.check3(&[
        (PAIR, ":2\r\n"),
        (
            "GEOPOS Sicily Palermo nope",
            "*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n",
        ),
        ("GEOHASH Sicily nope", "*1\r\n_\r\n"),
        ("GEODIST Sicily Palermo nope", "_\r\n"),
    ]);
}

/// Goal: the errors, in Redis's order of checks and with its texts. Method: wire table.
#[test]
fn errors_in_redis_order() {
    let mut h = Harness::new();
    h.check(&[
        ("SET s v", "+OK\r\n"),
        ("GEOADD k 200 100 m", "-ERR invalid longitude,latitude pair 200.000000,100.000000\r\n"),
        ("GEOADD k nx xx 1 1 m", "-ERR syntax error\r\n"),
        ("GEOADD k 1 1 m 2", "-ERR syntax error\r\n"),
        ("GEOADD k x 1 m", "-ERR value is not a valid float\r\n"),
        ("GEOADD k nan 1 m", "-ERR value is not a valid float\r\n"),
        ("GEOADD s 1 1 m", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("GEORADIUS s x 1 1 km", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("GEODIST k a b parsecs", "-ERR unsupported unit provided. please use M, KM, FT, MI\r\n"),
        ("GEODIST k a b km extra", "-ERR syntax error\r\n"),
        ("GEORADIUS k 1 1 -1 km", "-ERR radius cannot be negative\r\n"),
        ("GEORADIUS k 1 1 x km", "-ERR need numeric radius\r\n"),
        ("GEORADIUS k 1 1 1 km COUNT 0", "-ERR COUNT must be > 0\r\n"),
        ("GEORADIUS k 1 1 1 km ANY", "-ERR the ANY argument requires COUNT argument\r\n"),
        ("GEORADIUS k 1 1 1 km WITHDIST STORE d", "-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options\r\n"),
        ("GEORADIUS_RO k 1 1 1 km STORE d", "-ERR syntax error\r\n"),
        ("GEOSEARCH k BYRADIUS 1 km ASC ASC", "-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH\r\n"),
        ("geosearch k FROMLONLAT 1 1 ASC ASC", "-ERR exactly one of BYRADIUS and BYBOX can be specified for geosearch\r\n"),
        ("GEOSEARCH k FROMLONLAT 1 1 BYBOX -1 1 km", "-ERR height or width cannot be negative\r\n"),
        ("GEORADIUSBYMEMBER nokey m x km", "*0\r\n"),
    ]);
}
