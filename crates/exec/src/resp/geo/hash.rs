//! The geohash arithmetic behind the GEO commands, computed as Redis 7.0 computes it
//! (`geohash.c`, `geohash_helper.c`), so that scores, positions, distances and the areas
//! searched are the same doubles, bit for bit.
//!
//! A point is stored as a sorted-set score: its 26-bit latitude and longitude cells
//! interleaved into 52 bits (latitude in the even bits), over Redis's ranges: longitude
//! -180..180 and latitude -85.05112878..85.05112878 (Web Mercator's, not the geohash
//! standard's -90..90; GEOHASH re-encodes over the standard ranges). A search estimates
//! the cell size from the radius, takes the cell of the center and its eight neighbours
//! (dropping those the area cannot reach), and reads each as a score range.

use std::f64::consts::PI;

/// Bits per coordinate at full precision: 52 bits of score in all.
pub(crate) const STEP_MAX: u8 = 26;
pub(crate) const LONG_MIN: f64 = -180.0;
pub(crate) const LONG_MAX: f64 = 180.0;
pub(crate) const LAT_MIN: f64 = -85.05112878;
pub(crate) const LAT_MAX: f64 = 85.05112878;
/// Redis's Earth radius (the WGS-84 quadratic mean), in meters.
pub(crate) const EARTH_RADIUS_METERS: f64 = 6372797.560856;
/// Half the Mercator world's width, in meters: the step estimate doubles up to it.
const MERCATOR_MAX: f64 = 20037726.37;
const DEG_TO_RAD: f64 = PI / 180.0;

/// A cell: its interleaved bits at `step` bits per coordinate. `step` 0 and bits 0 is
/// "no cell" (a neighbour dropped from a search).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cell {
    pub bits: u64,
    pub step: u8,
}

impl Cell {
    const NONE: Cell = Cell { bits: 0, step: 0 };

    fn is_none(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The cell as a 52-bit score: the smallest score inside it.
    pub(crate) fn align52(self) -> u64 {
        self.bits << (52 - u32::from(self.step) * 2)
    }

    /// The scores inside the cell: from `min` included to `max` excluded.
    pub(crate) fn score_range(self) -> (f64, f64) {
        let next = Cell { bits: self.bits.wrapping_add(1), step: self.step };
        (self.align52() as f64, next.align52() as f64)
    }
}

/// A range of one coordinate.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Range {
    min: f64,
    max: f64,
}

const LONG_RANGE: Range = Range { min: LONG_MIN, max: LONG_MAX };
const LAT_RANGE: Range = Range { min: LAT_MIN, max: LAT_MAX };

/// The area a cell covers.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Area {
    longitude: Range,
    latitude: Range,
}

/// Whether (longitude, latitude) is a point Redis can store.
pub(crate) fn in_limits(longitude: f64, latitude: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&longitude) && (LAT_MIN..=LAT_MAX).contains(&latitude)
}

/// Spreads the low 32 bits of `x` to the even bits and those of `y` to the odd bits.
fn interleave(x: u32, y: u32) -> u64 {
    fn spread(v: u32) -> u64 {
        let mut v = u64::from(v);
        v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF;
        v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v << 2)) & 0x3333_3333_3333_3333;
        (v | (v << 1)) & 0x5555_5555_5555_5555
    }
    spread(x) | (spread(y) << 1)
}

/// The inverse of [`interleave`]: the even bits in the low half, the odd in the high.
fn deinterleave(bits: u64) -> u64 {
    fn gather(v: u64) -> u64 {
        let mut v = v & 0x5555_5555_5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
        v = (v | (v >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
        v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
        v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
        (v | (v >> 16)) & 0x0000_0000_FFFF_FFFF
    }
    gather(bits) | (gather(bits >> 1) << 32)
}

/// The cell of a point at `step` bits per coordinate over the given ranges; `None` outside
/// Redis's limits or the ranges (or for a step outside 1..=32).
fn encode_in(long: Range, lat: Range, longitude: f64, latitude: f64, step: u8) -> Option<Cell> {
    if !(1..=32).contains(&step) || !in_limits(longitude, latitude) {
        return None;
    }
    if !(lat.min..=lat.max).contains(&latitude) || !(long.min..=long.max).contains(&longitude) {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat.min) / (lat.max - lat.min) * scale;
    let long_offset = (longitude - long.min) / (long.max - long.min) * scale;
    // Offsets lie in 0..=2^step (the top edge maps to 2^step, one past the last cell, as
    // in Redis), so the conversion to u32 truncates as C's does.
    let bits = interleave(lat_offset as u32, long_offset as u32);
    Some(Cell { bits, step })
}

/// The 52-bit score GEOADD stores for a point within the limits.
pub(crate) fn encode(longitude: f64, latitude: f64) -> Option<u64> {
    encode_in(LONG_RANGE, LAT_RANGE, longitude, latitude, STEP_MAX).map(Cell::align52)
}

/// The area a cell covers over the given ranges (`None` for "no cell").
fn decode_in(long: Range, lat: Range, cell: Cell) -> Option<Area> {
    if cell.is_none() {
        return None;
    }
    let separated = deinterleave(cell.bits);
    let (lat_cell, long_cell) = (separated as u32, (separated >> 32) as u32);
    // C adds one to the 32-bit cell number before converting it (it wraps at 2^32).
    let (lat_next, long_next) =
        (f64::from(lat_cell.wrapping_add(1)), f64::from(long_cell.wrapping_add(1)));
    let (lat_cell, long_cell) = (f64::from(lat_cell), f64::from(long_cell));
    let scale = (1u64 << cell.step) as f64;
    let (lat_span, long_span) = (lat.max - lat.min, long.max - long.min);
    Some(Area {
        latitude: Range {
            min: lat.min + (lat_cell / scale) * lat_span,
            max: lat.min + (lat_next / scale) * lat_span,
        },
        longitude: Range {
            min: long.min + (long_cell / scale) * long_span,
            max: long.min + (long_next / scale) * long_span,
        },
    })
}

fn decode_area(cell: Cell) -> Option<Area> {
    decode_in(LONG_RANGE, LAT_RANGE, cell)
}

/// A score as C converts a double to `uint64_t` on x86-64 (Redis's `(uint64_t)score`):
/// below 2^63 by signed truncation (out of range: the "indefinite" 2^63), at or above it
/// by truncating the difference and adding 2^63 back (0 when that overflows too).
pub(crate) fn score_bits(score: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    fn truncate(value: f64) -> u64 {
        if value > -TWO_63 - 1025.0 && value < TWO_63 {
            value as i64 as u64
        } else {
            1 << 63
        }
    }
    if score < TWO_63 {
        truncate(score)
    } else {
        truncate(score - TWO_63) ^ (1 << 63)
    }
}

/// The point a score stands for: its cell's center, clamped to the limits (a score GEOADD
/// did not write still decodes to some point, as in Redis).
pub(crate) fn decode(score: f64) -> [f64; 2] {
    let cell = Cell { bits: score_bits(score), step: STEP_MAX };
    // A full-precision cell is never "no cell" (its step is not 0).
    let area = decode_area(cell).unwrap_or(Area { longitude: LONG_RANGE, latitude: LAT_RANGE });
    let longitude = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let latitude = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [longitude, latitude]
}

/// GEOHASH's 11 characters: the point re-encoded over the standard ranges (latitude
/// -90..90), 5 bits a character; the 11th has no bits left and is always '0'.
pub(crate) fn standard_geohash(point: [f64; 2]) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let standard_lat = Range { min: -90.0, max: 90.0 };
    let bits = encode_in(LONG_RANGE, standard_lat, point[0], point[1], STEP_MAX)
        .map_or(0, |cell| cell.bits);
    let mut out = [b'0'; 11];
    for (i, byte) in out.iter_mut().enumerate().take(10) {
        let index = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *byte = ALPHABET[index as usize];
    }
    out
}

fn deg_rad(degrees: f64) -> f64 {
    degrees * DEG_TO_RAD
}

fn rad_deg(radians: f64) -> f64 {
    radians / DEG_TO_RAD
}

/// The distance in meters along a meridian between two latitudes.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_METERS * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine distance in meters between two points (longitude first).
pub(crate) fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    // The same longitude: the distance along the meridian, without the costly part.
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_METERS * a.sqrt().asin()
}

/// What a search covers, its sizes in the unit the client gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Shape {
    Radius { radius: f64 },
    Box { width: f64, height: f64 },
}

/// A search: its center (longitude, latitude), shape, and the unit's size in meters.
/// Sizes are converted where Redis converts them (`size * conversion`), so that the
/// doubles compared are the same.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Search {
    pub center: [f64; 2],
    pub shape: Shape,
    pub conversion: f64,
}

impl Search {
    /// The distance in meters from the center if `point` is inside the shape.
    pub(crate) fn distance_if_within(&self, point: [f64; 2]) -> Option<f64> {
        let [x1, y1] = self.center;
        let [x2, y2] = point;
        match self.shape {
            Shape::Radius { radius } => {
                let distance = distance(x1, y1, x2, y2);
                (distance <= radius * self.conversion).then_some(distance)
            }
            Shape::Box { width, height } => {
                let (width_meters, height_meters) =
                    (width * self.conversion, height * self.conversion);
                // The latitude test first: it is the cheaper.
                if lat_distance(y2, y1) > height_meters / 2.0 {
                    return None;
                }
                if distance(x2, y2, x1, y2) > width_meters / 2.0 {
                    return None;
                }
                Some(distance(x1, y1, x2, y2))
            }
        }
    }

    /// The half sizes (height, width) in meters and the radius in meters used for the
    /// cell size (a box's: center to corner).
    fn extent(&self) -> (f64, f64, f64) {
        let c = self.conversion;
        match self.shape {
            Shape::Radius { radius } => (c * radius, c * radius, radius * c),
            Shape::Box { width, height } => {
                let (half_w, half_h) = (width / 2.0, height / 2.0);
                (c * half_h, c * half_w, (half_w * half_w + half_h * half_h).sqrt() * c)
            }
        }
    }

    /// The bounding box: [min longitude, min latitude, max longitude, max latitude].
    fn bounds(&self) -> [f64; 4] {
        let [longitude, latitude] = self.center;
        let (height, width, _) = self.extent();
        let lat_delta = rad_deg(height / EARTH_RADIUS_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_METERS / deg_rad(latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_METERS / deg_rad(latitude - lat_delta).cos());
        // The hemispheres' widest edges are opposite.
        let long_delta = if latitude < 0.0 { long_delta_bottom } else { long_delta_top };
        [longitude - long_delta, latitude - lat_delta, longitude + long_delta, latitude + lat_delta]
    }

    /// The cells to read, in Redis's order: the center's, then north, south, east, west,
    /// north-east, north-west, south-east, south-west; "no cell" where one is dropped.
    pub(crate) fn cells(&self) -> [Cell; 9] {
        let [longitude, latitude] = self.center;
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let mut step = estimate_step(self.extent().2, latitude);
        let mut cells = cells_at(self.center, step);
        let reaches_past = |cells: &[Cell; 9]| {
            let side = |cell| decode_area(cell);
            let (n, s, e, w) = (side(cells[1]), side(cells[2]), side(cells[3]), side(cells[4]));
            n.is_some_and(|n| n.latitude.max < max_lat)
                || s.is_some_and(|s| s.latitude.min > min_lat)
                || e.is_some_and(|e| e.longitude.max < max_lon)
                || w.is_some_and(|w| w.longitude.min > min_lon)
        };
        // The estimate may leave part of the area outside the nine cells near their edges.
        if step > 1 && reaches_past(&cells) {
            step -= 1;
            cells = cells_at([longitude, latitude], step);
        }
        if step >= 2 {
            drop_unneeded(&mut cells, [min_lon, min_lat, max_lon, max_lat]);
        }
        cells
    }
}

/// Bits per coordinate for a search of this radius: cells about as large as the radius,
/// larger toward the poles.
fn estimate_step(mut range_meters: f64, latitude: f64) -> u8 {
    if range_meters == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    // At most about 1,100 doublings (from the smallest double); none for inf or NaN.
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&latitude) {
        step -= 1;
        if !(-80.0..=80.0).contains(&latitude) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// The center's cell at `step` and its eight neighbours, in [`Search::cells`]'s order.
fn cells_at(center: [f64; 2], step: u8) -> [Cell; 9] {
    let Some(cell) = encode_in(LONG_RANGE, LAT_RANGE, center[0], center[1], step) else {
        return [Cell::NONE; 9];
    };
    let at = |dx: i8, dy: i8| move_y(move_x(cell, dx), dy);
    [cell, at(0, 1), at(0, -1), at(1, 0), at(-1, 0), at(1, 1), at(-1, 1), at(1, -1), at(-1, -1)]
}

/// Drops the neighbours on the sides where the center cell already covers the bounds.
fn drop_unneeded(cells: &mut [Cell; 9], [min_lon, min_lat, max_lon, max_lat]: [f64; 4]) {
    let Some(area) = decode_area(cells[0]) else { return };
    let mut drop = |which: [usize; 3]| which.iter().for_each(|&i| cells[i] = Cell::NONE);
    if area.latitude.min < min_lat {
        drop([2, 8, 7]);
    }
    if area.latitude.max > max_lat {
        drop([1, 5, 6]);
    }
    if area.longitude.min < min_lon {
        drop([4, 8, 6]);
    }
    if area.longitude.max > max_lon {
        drop([3, 7, 5]);
    }
}

/// The neighbouring cell east (`d` > 0) or west (`d` < 0), wrapping around.
fn move_x(cell: Cell, d: i8) -> Cell {
    move_along(cell, d, 0xaaaa_aaaa_aaaa_aaaa, 0x5555_5555_5555_5555)
}

/// The neighbouring cell north (`d` > 0) or south (`d` < 0), wrapping around.
fn move_y(cell: Cell, d: i8) -> Cell {
    move_along(cell, d, 0x5555_5555_5555_5555, 0xaaaa_aaaa_aaaa_aaaa)
}

/// Adds or subtracts one in the bits of `moved_mask` (the coordinate that moves), the
/// other coordinate's bits serving as carries.
fn move_along(cell: Cell, d: i8, moved_mask: u64, kept_mask: u64) -> Cell {
    if d == 0 {
        return cell;
    }
    let shift = 64 - u32::from(cell.step) * 2;
    let mut moved = cell.bits & moved_mask;
    let kept = cell.bits & kept_mask;
    let carries = kept_mask >> shift;
    if d > 0 {
        moved = moved.wrapping_add(carries + 1);
    } else {
        moved = (moved | carries).wrapping_sub(carries + 1);
    }
    moved &= moved_mask >> shift;
    Cell { bits: moved | kept, step: cell.step }
}

/// Redis's `%.17Lf` with trailing zeros (and a bare dot) trimmed, `-0` as `0`: the text
/// of a coordinate in replies.
pub(crate) fn human_text(value: f64) -> String {
    if value.is_infinite() {
        return if value > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let mut text = format!("{value:.17}");
    if text.contains('.') {
        let trimmed = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(trimmed);
    }
    if text == "-0" {
        text = "0".into();
    }
    text
}

/// Redis's distance text: four decimals (`fixedpoint_d2string`, rounding half to even).
pub(crate) fn distance_text(value: f64) -> String {
    if value == 0.0 {
        return "0.0000".into();
    }
    let scaled = (value * 10_000.0).round_ties_even();
    // `llrint` of what does not fit is the "indefinite" i64::MIN, as on x86-64.
    let scaled = if scaled.is_finite() && scaled.abs() < 9.2e18 { scaled as i64 } else { i64::MIN };
    let magnitude = scaled.unsigned_abs();
    let sign = if scaled < 0 { "-" } else { "" };
    format!("{sign}{}.{:04}", magnitude / 10_000, magnitude % 10_000)
}

/// The coordinate error text, as Redis's `%f` prints the pair.
pub(crate) fn invalid_pair(longitude: f64, latitude: f64) -> String {
    fn c_fixed(value: f64) -> String {
        if value.is_infinite() {
            return if value > 0.0 { "inf".into() } else { "-inf".into() };
        }
        format!("{value:.6}")
    }
    format!("ERR invalid longitude,latitude pair {},{}", c_fixed(longitude), c_fixed(latitude))
}

#[cfg(test)]
mod tests;
