//! Commands by name: an open-addressed table built once.

use super::{all_commands, command_count, CommandSpec};

/// Finds a command by name, ignoring ASCII case, without allocating.
///
/// ```
/// let spec = proto_resp::lookup(b"gEt").unwrap();
/// assert_eq!((spec.name, spec.arity), ("get", 2));
/// assert!(proto_resp::lookup(b"nosuch").is_none());
/// ```
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut lowered = [0u8; NAME_MAX];
    let lowered = lowered.get_mut(..name.len())?;
    for (to, from) in lowered.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
    }
    let index = by_name();
    let slot = name_hash(lowered) as usize & (index.len() - 1);
    // Open addressing: probe from the name's slot to the first empty one.
    index[slot..]
        .iter()
        .chain(&index[..slot])
        .map_while(|entry| *entry)
        .find(|spec| spec.name.as_bytes() == lowered)
}

/// Longer than any command's name.
const NAME_MAX: usize = 32;

/// Every command by name, in an open-addressed table at most a quarter full: one hash of
/// the lowercased name and, mostly, one comparison (a binary search per table cost a
/// tenth of a PUBLISH's time).
fn by_name() -> &'static [Option<&'static CommandSpec>] {
    static INDEX: std::sync::OnceLock<Vec<Option<&'static CommandSpec>>> =
        std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let size = (command_count() * 4).next_power_of_two();
        let mut index = vec![None; size];
        for spec in all_commands() {
            assert!(spec.name.len() < NAME_MAX, "{} is too long", spec.name);
            let mut slot = name_hash(spec.name.as_bytes()) as usize & (size - 1);
            while index[slot].is_some() {
                slot = (slot + 1) & (size - 1);
            }
            index[slot] = Some(spec);
        }
        index
    })
}

/// FNV-1a: short keys, no seed needed (the names are ours, not a client's).
fn name_hash(name: &[u8]) -> u64 {
    name.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x100_0000_01b3)
    })
}
