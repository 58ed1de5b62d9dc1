//! The geohash arithmetic against values redis-server 7.0.15 returned for the same input
//! (GEOADD scores, GEOPOS, GEOHASH and GEODIST texts, the coordinate error).

use super::*;

/// Goal: GEOADD's scores are Redis's, edges included (the top edge maps one cell past the
/// last, as in Redis, so 180,85.05112878 scores above 2^52). Method: known answers.
#[test]
fn scores_are_redis_scores() {
    assert_eq!(encode(13.361389, 38.115556), Some(3479099956230698));
    assert_eq!(encode(15.087269, 37.502669), Some(3479447370796909));
    assert_eq!(encode(180.0, 85.05112878), Some(13510798882111488));
    assert_eq!(encode(-180.0, -85.05112878), Some(0));
    assert_eq!(encode(180.000001, 0.0), None);
    assert_eq!(encode(0.0, -85.06), None);
    assert_eq!(encode(f64::NAN, 0.0), None);
    assert_eq!(encode(f64::INFINITY, 0.0), None);
}

/// Goal: positions print as Redis prints them. Method: known answers, clamped edges.
#[test]
fn positions_and_their_text() {
    let [lon, lat] = decode(3479099956230698.0);
    assert_eq!(human_text(lon), "13.36138933897018433");
    assert_eq!(human_text(lat), "38.11555639549629859");
    let [lon, lat] = decode(13510798882111488.0);
    assert_eq!(
        (human_text(lon).as_str(), human_text(lat).as_str()),
        ("180", "85.0511287799999991")
    );
    let [lon, lat] = decode(0.0);
    assert_eq!(human_text(lon), "-179.99999731779098511");
    assert_eq!(human_text(lat), "-85.05112751263942528");
    assert_eq!(human_text(-0.0), "0");
    assert_eq!(human_text(-0.000000000000000001), "0");
    assert_eq!(human_text(2.5), "2.5");
    // Scores GEOADD never writes still decode to a point within the limits.
    for score in [-1.0, -1e300, 1e300, 9.3e18, 2f64.powi(64)] {
        let [lon, lat] = decode(score);
        assert!(in_limits(lon, lat), "{score}");
    }
}

/// Goal: GEOHASH's standard geohashes. Method: known answers.
#[test]
fn standard_geohashes() {
    let text = |score: f64| String::from_utf8(standard_geohash(decode(score)).to_vec()).unwrap();
    assert_eq!(text(3479099956230698.0), "sqc8b49rny0");
    assert_eq!(text(3479447370796909.0), "sqdtr74hyu0");
    assert_eq!(text(13510798882111488.0), "bp05b5048p0");
}

/// Goal: distances and their four-decimal text are Redis's. Method: Palermo-Catania in
/// every unit, as GEODIST answered them.
#[test]
fn distances() {
    let [a, b] = [decode(3479099956230698.0), decode(3479447370796909.0)];
    let meters = distance(a[0], a[1], b[0], b[1]);
    assert_eq!(distance_text(meters), "166274.1516");
    assert_eq!(distance_text(meters / 1000.0), "166.2742");
    assert_eq!(distance_text(meters / 1609.34), "103.3182");
    assert_eq!(distance_text(meters / 0.3048), "545518.8700");
    assert_eq!(distance_text(0.0), "0.0000");
    assert_eq!(distance_text(0.00004), "0.0000");
    assert_eq!(distance_text(0.00005), "0.0000");
    assert_eq!(distance_text(1.23456), "1.2346");
    assert_eq!(distance_text(-2.5), "-2.5000");
    // The same longitude: the meridian distance.
    assert_eq!(distance(10.0, 0.0, 10.0, 1.0), EARTH_RADIUS_METERS * DEG_TO_RAD);
}

/// Goal: the coordinate error is byte for byte Redis's `%f`, huge values included.
#[test]
fn invalid_pair_text() {
    assert_eq!(
        invalid_pair(200.0, 100.0),
        "ERR invalid longitude,latitude pair 200.000000,100.000000"
    );
    assert_eq!(
        invalid_pair(f64::INFINITY, 0.0),
        "ERR invalid longitude,latitude pair inf,0.000000"
    );
    assert!(invalid_pair(1e300, 0.0).starts_with("ERR invalid longitude,latitude pair 1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160.000000,"));
}

/// Goal: neighbours wrap around and step back as Redis's `geohash_move_x/y` do, and a
/// search's cells never include "no cell" where the area needs one. Method: a cell in
/// the middle at step 2 and its moves; the full-globe search at step 1.
#[test]
fn neighbours_and_cells() {
    let cell = encode_in(LONG_RANGE, LAT_RANGE, 0.0, 0.0, 2).unwrap();
    let east = move_x(cell, 1);
    assert_eq!(move_x(east, -1), cell);
    let north = move_y(cell, 1);
    assert_eq!(move_y(north, -1), cell);
    // Four cells per axis: four moves east come back.
    assert_eq!((0..4).fold(cell, |c, _| move_x(c, 1)), cell);
    let everything = Search {
        center: [0.0, 0.0],
        shape: Shape::Radius { radius: f64::INFINITY },
        conversion: 1.0,
    };
    let cells = everything.cells();
    assert!(cells.iter().all(|c| c.step == 1));
    let within = everything.distance_if_within([179.0, 80.0]);
    assert!(within.is_some());
}

/// Goal: the step estimate is bounded for every radius (no endless loop, a step in
/// 1..=26). Method: extremes.
#[test]
fn step_estimate_is_bounded() {
    for radius in [0.0, f64::MIN_POSITIVE, 5e-324, 1.0, 1e7, 1e300, f64::INFINITY] {
        for lat in [0.0, 70.0, -85.0] {
            let step = estimate_step(radius, lat);
            assert!((1..=26).contains(&step), "{radius} {lat}");
        }
    }
    assert_eq!(estimate_step(0.0, 0.0), 26);
}

/// Goal: C's double-to-`uint64_t` conversion for the scores other commands may write.
#[test]
fn score_bits_as_c() {
    assert_eq!(score_bits(3.0), 3);
    assert_eq!(score_bits(-1.0), u64::MAX);
    assert_eq!(score_bits(f64::NEG_INFINITY), 1 << 63);
    assert_eq!(score_bits(2f64.powi(63)), 1 << 63);
    assert_eq!(score_bits(2f64.powi(64)), 0);
    assert_eq!(score_bits(f64::INFINITY), 0);
}
