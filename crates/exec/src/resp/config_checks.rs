//! The checks of Redis 7.0's CONFIG parameters whose values are lists of words
//! (`client-output-buffer-limit`, `oom-score-adj-values`), split on single spaces as
//! CONFIG SET splits them.

use super::config_kept::memtoull_checked;

/// C's `strtoll` over the whole word: optional spaces, a sign, digits (none is 0), nothing
/// after; `None` when something follows the digits.
fn strtoll_whole(word: &[u8]) -> Option<i64> {
    let start = word.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(word.len());
    let word = &word[start..];
    let (negative, digits) = match word.first() {
        Some(b'-') => (true, &word[1..]),
        Some(b'+') => (false, &word[1..]),
        _ => (false, word),
    };
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // strtoll saturates; a value that large is out of every range checked here anyway.
    let magnitude = digits.iter().fold(0i64, |n, d| {
        n.checked_mul(10).and_then(|n| n.checked_add(i64::from(d - b'0'))).unwrap_or(i64::MAX)
    });
    Some(if negative { -magnitude } else { magnitude })
}

/// The client classes of `client-output-buffer-limit`, in the order CONFIG GET shows them.
const CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// `client-output-buffer-limit`: groups of `<class> <hard> <soft> <soft-seconds>`; the
/// classes given, as CONFIG GET shows them (`replica` is `slave`). Merged into the current
/// value by [`merge_output_buffer_limits`].
pub(super) fn client_output_buffer_limit(value: &[u8]) -> Result<String, String> {
    let words: Vec<&[u8]> =
        if value.is_empty() { Vec::new() } else { value.split(|b| *b == b' ').collect() };
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut groups = Vec::new();
    for group in words.chunks(4) {
        let class = match group[0].to_ascii_lowercase().as_slice() {
            b"normal" => "normal",
            b"slave" | b"replica" => "slave",
            b"pubsub" => "pubsub",
            _ => return Err("Invalid client class specified in buffer limit configuration.".into()),
        };
        let hard = memtoull_checked(group[1]);
        let soft = memtoull_checked(group[2]);
        let seconds = strtoll_whole(group[3]).filter(|s| *s >= 0);
        let (Some(hard), Some(soft), Some(seconds)) = (hard, soft, seconds) else {
            return Err("Error in hard, soft or soft_seconds setting in buffer limit \
                        configuration."
                .into());
        };
        groups.push(format!("{class} {hard} {soft} {seconds}"));
    }
    Ok(groups.join(" "))
}

/// The current `client-output-buffer-limit` with the classes `given` names replaced.
pub(super) fn merge_output_buffer_limits(current: &str, given: &str) -> String {
    let group_of = |text: &str, class: &str| -> Option<String> {
        let words: Vec<&str> = text.split(' ').collect();
        words.chunks(4).find(|g| g[0] == class && g.len() == 4).map(|g| g.join(" "))
    };
    let groups: Vec<String> = CLASSES
        .iter()
        .filter_map(|class| group_of(given, class).or_else(|| group_of(current, class)))
        .collect();
    groups.join(" ")
}

/// `oom-score-adj-values`: three integers from -2000 to 2000.
pub(super) fn oom_score_adj_values(value: &[u8]) -> Result<String, String> {
    let words: Vec<&[u8]> = value.split(|b| *b == b' ').collect();
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let mut shown = Vec::with_capacity(3);
    for word in words {
        match strtoll_whole(word).filter(|n| (-2000..=2000).contains(n)) {
            Some(n) => shown.push(n.to_string()),
            None => {
                return Err(
                    "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into(),
                )
            }
        }
    }
    Ok(shown.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: the list parameters are checked, shown and merged as Redis 7.0 does.
    #[test]
    fn list_parameters() {
        assert_eq!(client_output_buffer_limit(b"replica 1mb 2 3"), Ok("slave 1048576 2 3".into()));
        assert!(client_output_buffer_limit(b"normal 1 2").unwrap_err().starts_with("Wrong"));
        assert!(client_output_buffer_limit(b"master 1 2 3").unwrap_err().starts_with("Invalid"));
        assert!(client_output_buffer_limit(b"normal 1 2 -1").unwrap_err().starts_with("Error"));
        assert!(client_output_buffer_limit(b"normal x 2 1").unwrap_err().starts_with("Error"));
        let default = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";
        assert_eq!(
            merge_output_buffer_limits(default, "slave 1048576 2 3"),
            "normal 0 0 0 slave 1048576 2 3 pubsub 33554432 8388608 60"
        );
        assert_eq!(oom_score_adj_values(b"0 -2000 2000"), Ok("0 -2000 2000".into()));
        assert_eq!(oom_score_adj_values(b"1 2"), Err("wrong number of arguments".into()));
        assert!(oom_score_adj_values(b"1 2 2001").unwrap_err().starts_with("Invalid"));
        assert!(oom_score_adj_values(b"1 2 x").unwrap_err().starts_with("Invalid"));
    }
}
