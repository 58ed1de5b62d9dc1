//! LOLWUT [VERSION v [args...]]: Redis's computer art and version line.
//!
//! As Redis 7.0 answers: version 5 draws Georg Nees's "Schotter" (squares that tumble more
//! the lower they are) in Braille characters, version 6 a skyline in ANSI colours, and any
//! other version (Spinel's own by default) only the version line. The art is random where
//! Redis's is (it draws with `rand()`), so two calls differ; the first two rows of squares
//! in version 5 never move, so a call with at most two rows is the same as Redis's.
//! One difference, for memory's sake: version 5's canvas is cut at
//! [`MAX_CANVAS_PIXELS`] (Redis would draw up to 800 million pixels for
//! `LOLWUT VERSION 5 1000 1 200`); what is cut off is the bottom of the picture.

use proto_resp::{args::parse_i64, error};

use super::{pick::random_below, Ctx};

/// The largest canvas version 5 draws (version 6's is at most 1000 × 1000 already).
const MAX_CANVAS_PIXELS: usize = 4_000_000;

pub(super) fn lolwut(ctx: &mut Ctx<'_>) {
    let mut version = crate::REDIS_VERSION.to_string();
    let mut first_arg = 1;
    if ctx.argc() >= 3 && ctx.arg(1).eq_ignore_ascii_case(b"version") {
        let Ok(asked) = parse_i64(ctx.arg(2)) else {
            return ctx.error(error::NOT_INTEGER);
        };
        // C's `%u` of the number cast to unsigned int, as Redis writes it.
        version = format!("{}.0.0", asked as u32);
        first_arg = 3;
    }
    let mut numbers = Vec::new();
    for index in first_arg..ctx.argc() {
        match parse_i64(ctx.arg(index)) {
            Ok(n) => numbers.push(n),
            Err(_) => return ctx.error(error::NOT_INTEGER),
        }
    }
    let text = match version.as_bytes() {
        [b'5', b'.', c, ..] if *c != b'9' => schotter(&numbers),
        [b'4', b'.', b'9', ..] => schotter(&numbers),
        [b'6', b'.', c, ..] if *c != b'9' => skyline(&numbers),
        [b'5', b'.', b'9', ..] => skyline(&numbers),
        _ => format!("Redis ver. {}\n", crate::REDIS_VERSION),
    };
    ctx.reply().verbatim(b"txt", text.as_bytes());
}

/// C's `rand()`: 0 to 2^31 - 1.
fn c_rand() -> i64 {
    random_below(1 << 31) as i64
}

/// Argument `index` of the art's own, clamped as Redis clamps it.
fn arg(numbers: &[i64], index: usize, default: i64, max: i64) -> i64 {
    numbers.get(index).copied().unwrap_or(default).clamp(1, max)
}

/// A grid of colour numbers; drawing outside it does nothing, reading outside it is 0.
struct Canvas {
    width: i64,
    height: i64,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i64, height: i64, colour: u8) -> Canvas {
        let (width, height) = (width.max(0), height.max(0));
        Canvas { width, height, pixels: vec![colour; (width * height) as usize] }
    }

    fn set(&mut self, x: i64, y: i64, colour: u8) {
        if (0..self.width).contains(&x) && (0..self.height).contains(&y) {
            self.pixels[(x + y * self.width) as usize] = colour;
        }
    }

    fn get(&self, x: i64, y: i64) -> u8 {
        if (0..self.width).contains(&x) && (0..self.height).contains(&y) {
            self.pixels[(x + y * self.width) as usize]
        } else {
            0
        }
    }

    /// Bresenham's line, both ends included.
    fn line(&mut self, (mut x1, mut y1): (i64, i64), (x2, y2): (i64, i64)) {
        let (dx, dy) = ((x2 - x1).abs(), (y2 - y1).abs());
        let (sx, sy) = (if x1 < x2 { 1 } else { -1 }, if y1 < y2 { 1 } else { -1 });
        let mut err = dx - dy;
        loop {
            self.set(x1, y1, 1);
            if x1 == x2 && y1 == y2 {
                return;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x1 += sx;
            }
            if e2 < dx {
                err += dx;
                y1 += sy;
            }
        }
    }

    /// A square of side `side` centred on (x, y), turned by `angle` radians.
    /// The arithmetic mixes single and double precision as Redis's C does, so that the
    /// corners land on the same pixels.
    fn square(&mut self, (x, y): (i64, i64), side: f32, angle: f32) {
        // Redis's literal, not SQRT_2: the same digits give the same pixels.
        #[allow(clippy::approx_constant)]
        let half_diagonal = ((f64::from(side) / 1.4142135623) as f32).round();
        let mut k = (std::f64::consts::FRAC_PI_4 + f64::from(angle)) as f32;
        let mut corners = [(0i64, 0i64); 4];
        for corner in &mut corners {
            let k_wide = f64::from(k);
            *corner = (
                (k_wide.sin() * f64::from(half_diagonal) + x as f64).round() as i64,
                (k_wide.cos() * f64::from(half_diagonal) + y as f64).round() as i64,
            );
            k = (k_wide + std::f64::consts::FRAC_PI_2) as f32;
        }
        for j in 0..4 {
            self.line(corners[j], corners[(j + 1) % 4]);
        }
    }
}

/// Version 5: `[columns [squares-per-row [squares-per-column]]]` (66, 8, 12).
fn schotter(numbers: &[i64]) -> String {
    let cols = arg(numbers, 0, 66, 1000);
    let per_row = arg(numbers, 1, 8, 200);
    let per_col = arg(numbers, 2, 12, 200);
    let width = cols * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    let height = (side * per_col as f32) as i64 + padding * 2;
    let mut canvas = Canvas::new(width, height.min(MAX_CANVAS_PIXELS as i64 / width), 0);
    for y in 0..per_col {
        for x in 0..per_row {
            let mut sx = (x as f32 * side + side / 2.0) as i64 + padding;
            let mut sy = (y as f32 * side + side / 2.0) as i64 + padding;
            let mut angle = 0.0;
            if y > 1 {
                let tumble = || c_rand() as f32 / i32::MAX as f32 / per_col as f32 * y as f32;
                let (r1, r2, r3) = (tumble(), tumble(), tumble());
                let sign = |r: f32| if c_rand() % 2 == 1 { -r } else { r };
                let (r1, r2, r3) = (sign(r1), sign(r2), sign(r3));
                angle = r1;
                sx = (sx as f32 + r2 * side / 3.0) as i64;
                sy = (sy as f32 + r3 * side / 3.0) as i64;
            }
            canvas.square((sx, sy), side, angle);
        }
    }
    let mut text = braille(&canvas);
    text.push_str("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
    text.push_str(crate::REDIS_VERSION);
    text.push('\n');
    text
}

/// Each 2 × 4 block of pixels as one Braille character, rows of them joined by newlines.
fn braille(canvas: &Canvas) -> String {
    // (dx, dy) of the dot each bit of a Braille character stands for.
    const DOTS: [(i64, i64); 8] = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (0, 3), (1, 3)];
    let mut text = String::new();
    for y in (0..canvas.height).step_by(4) {
        for x in (0..canvas.width).step_by(2) {
            let bits = DOTS
                .iter()
                .enumerate()
                .filter(|(_, (dx, dy))| canvas.get(x + dx, y + dy) != 0)
                .fold(0u32, |bits, (bit, _)| bits | 1 << bit);
            text.push(char::from_u32(0x2800 + bits).unwrap_or(' '));
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
    }
    text
}

/// A building of version 6's skyline.
struct Skyscraper {
    xoff: i64,
    width: i64,
    height: i64,
    windows: bool,
    colour: u8,
}

impl Skyscraper {
    fn draw(&self, canvas: &mut Canvas) {
        let start_y = canvas.height - 1;
        let end_y = start_y - self.height + 1;
        let right = self.xoff + self.width;
        for y in (end_y..=start_y).rev() {
            for x in self.xoff..right {
                // The roof's corners are cut.
                if y == end_y && (x <= self.xoff + 1 || x >= right - 2) {
                    continue;
                }
                let mut colour = self.colour;
                let inside = x > self.xoff + 1 && x < right - 2 && y > end_y + 1 && y < start_y - 1;
                if self.windows && inside {
                    let (rel_x, rel_y) = (x - (self.xoff + 1), y - (end_y + 1));
                    if (rel_x / 2) % 2 != 0 && rel_y % 2 != 0 {
                        colour = loop {
                            let lit = 1 + (c_rand() % 2) as u8;
                            if lit != self.colour {
                                break lit;
                            }
                        };
                        if rel_x % 2 != 0 {
                            colour = canvas.get(x - 1, y);
                        }
                    }
                }
                canvas.set(x, y, colour);
            }
        }
    }
}

/// Version 6: `[columns [rows]]` (80, 20).
fn skyline(numbers: &[i64]) -> String {
    let cols = arg(numbers, 0, 80, 1000);
    let rows = arg(numbers, 1, 20, 1000);
    let mut canvas = Canvas::new(cols, rows, 3);
    let h = canvas.height;
    for colour in [2u8, 1] {
        let mut offset = -10;
        while offset < canvas.width {
            offset += c_rand() % 8;
            let width = 10 + c_rand() % 9;
            let height =
                if colour == 2 { h / 2 + c_rand() % h / 2 } else { h / 2 + c_rand() % h / 3 };
            Skyscraper { xoff: offset, width, height, windows: false, colour }.draw(&mut canvas);
            offset += if colour == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut offset = -10;
    while offset < canvas.width {
        offset += c_rand() % 8;
        let mut width = 5 + c_rand() % 14;
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = h / 3 + c_rand() % h / 2;
        Skyscraper { xoff: offset, width, height, windows: true, colour: 0 }.draw(&mut canvas);
        offset += width + 5;
    }
    let mut text = String::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            let escape = match canvas.get(x, y) {
                1 => "0;90;100m",
                2 => "0;37;47m",
                3 => "0;97;107m",
                _ => "0;30;40m",
            };
            text.push_str(&format!("\x1b[{escape} \x1b[0m"));
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
    }
    text.push_str(
        "\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image \
         from Plaguemon by hikikomori. Redis ver. ",
    );
    text.push_str(crate::REDIS_VERSION);
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::super::testkit::Harness;

    /// Goal: the version line, the art's captions and its size for given arguments.
    #[test]
    fn lolwut() {
        let mut h = Harness::new();
        let version = crate::REDIS_VERSION;
        let line = format!("Redis ver. {version}\n");
        h.check(&[
            ("LOLWUT", &format!("${}\r\n{line}\r\n", line.len())),
            ("LOLWUT VERSION 7", &format!("${}\r\n{line}\r\n", line.len())),
            ("LOLWUT VERSION x", "-ERR value is not an integer or out of range\r\n"),
            ("LOLWUT VERSION 5 x", "-ERR value is not an integer or out of range\r\n"),
        ]);
        let five = h.run("LOLWUT VERSION 5 10 2 2");
        assert!(five
            .ends_with(&format!("schotter, plotter on paper, 1968. Redis ver. {version}\n\r\n")));
        // 10 columns of Braille characters per row.
        assert_eq!(five.lines().nth(1).map(|l| l.chars().count()), Some(10), "{five}");
        let six = h.run("LOLWUT VERSION 6 3 2");
        assert_eq!(six.matches("\x1b[0m").count(), 6, "{six}");
        assert!(six.contains("by hikikomori. Redis ver. "));
        // The largest canvas is cut, not drawn in full.
        let big = h.run("LOLWUT VERSION 5 1000 1 200");
        assert!(big.len() < 8 << 20, "{}", big.len());
    }
}
