//! The architecture as a test: the workspace's dependency arrows, the length of source files
//! and of functions, and where `unsafe` may appear. docs/ARCHITECTURE.md draws the same map; when the two
//! disagree, this test is the one that fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "architecture/functions.rs"]
mod functions;

/// Every allowed arrow between workspace crates (normal, build and dev dependencies alike).
/// Layers point one way: server -> exec -> protocols, store; server -> rt; the load generator
/// reuses the codecs and the runtime; codecs and store know no other workspace crate.
const ALLOWED_ARROWS: &[(&str, &[&str])] = &[
    ("server", &["exec", "rt", "proto-memcache", "proto-resp", "store"]),
    ("exec", &["proto-memcache", "proto-resp", "store", "values", "luacall"]),
    ("bench", &["proto-memcache", "proto-resp", "rt"]),
    ("rt", &[]),
    ("proto-memcache", &[]),
    ("proto-resp", &[]),
    ("store", &[]),
    // Redis values without a protocol: below exec, beside the protocols and the store.
    ("values", &[]),
    // Lua C functions for exec's `redis.call`: below exec, knowing no workspace crate.
    ("luacall", &[]),
];

/// The longest a file under `crates/*/src` may be.
const MAX_FILE_LINES: usize = 800;

/// Files over [`MAX_FILE_LINES`] today, each with the length it may not exceed. The list may only
/// shrink: a listed file that has come under the limit must be removed from it, and a listed
/// file may not grow.
const LONG_FILES: &[(&str, usize)] = &[];

/// The longest a function under `crates/*/src` may be, in lines from `fn name` to its closing
/// brace. Test code (`#[cfg(test)]` items and the files of `#[cfg(test)]` modules) is exempt;
/// see `functions.rs`.
const MAX_FUNCTION_LINES: usize = 70;

/// Functions over [`MAX_FUNCTION_LINES`] today, as `path::Type::function` (or `path::function`
/// for a free function), each with the length it may not exceed. The list may only shrink: an
/// unlisted function over the limit fails, a listed one may not grow, and a listed one that
/// has come under the limit (or is gone) must be removed. When it fails, the message prints
/// the list as it stands today, ready to paste. Two functions with the same name in one file
/// share an entry holding the longer.
const LONG_FUNCTIONS: &[(&str, usize)] = &[
    ("crates/bench/src/compare/report_html.rs::dual_line_chart", 79),
    ("crates/bench/src/report.rs::text", 95),
    ("crates/exec/src/memcache/mod.rs::execute", 87),
    ("crates/exec/src/resp/cluster/migrate.rs::migrate", 83),
    // A table: one match arm per command (and subcommand) id to its handler; splitting it
    // would only scatter the table.
    ("crates/exec/src/resp/dispatch.rs::dispatch", 193),
    ("crates/exec/src/resp/geo/search.rs::parse_options", 75),
    ("crates/exec/src/resp/mod.rs::execute_as", 100),
    ("crates/exec/src/resp/mod.rs::run", 78),
    ("crates/exec/src/resp/script/vm.rs::State::new", 85),
    ("crates/exec/src/resp/script/vm.rs::redis_table", 76),
    ("crates/proto-memcache/src/request.rs::Request::compose", 83),
    // A table: one line per setting's default value.
    ("crates/server/src/config/mod.rs::Config::default", 71),
    ("crates/store/src/store/core.rs::Store::put", 86),
    ("crates/store/src/store/ops.rs::Store::store_with", 72),
    ("crates/values/src/rdb/lzf.rs::compress", 81),
];

/// The crates allowed to contain `unsafe`: the store (segments, lock-free index), the
/// runtime (system calls) and luacall (`redis.call` as raw Lua C functions: half of a short
/// script's instructions went to mlua's callback machinery; docs/ARCHITECTURE.md, "Why
/// luacall has unsafe code", gives the measurement and the soundness argument). Every other
/// crate root declares `#![forbid(unsafe_code)]`.
const UNSAFE_CRATES: &[&str] = &["store", "rt", "luacall"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// One workspace package as `cargo metadata` describes it.
struct Package {
    name: String,
    dir: PathBuf,
    workspace_deps: BTreeSet<String>,
    roots: Vec<PathBuf>,
}

fn workspace_packages() -> Vec<Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: BTreeSet<String> =
        packages.iter().map(|p| p["name"].as_str().unwrap().to_owned()).collect();
    packages.iter().map(|p| package(p, &names)).collect()
}

fn package(p: &serde_json::Value, workspace: &BTreeSet<String>) -> Package {
    let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap());
    let workspace_deps = p["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .filter(|name| workspace.contains(name))
        .collect();
    let roots = p["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "lib" || k == "bin"))
        .map(|t| PathBuf::from(t["src_path"].as_str().unwrap()))
        .collect();
    let name = p["name"].as_str().unwrap().to_owned();
    Package { name, dir: manifest.parent().unwrap().to_owned(), workspace_deps, roots }
}

#[test]
fn dependency_arrows_are_the_documented_ones() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED_ARROWS.iter().copied().collect();
    let mut wrong = Vec::new();
    for package in workspace_packages() {
        let Some(targets) = allowed.get(package.name.as_str()) else {
            wrong.push(format!("crate `{}` is not in ALLOWED_ARROWS", package.name));
            continue;
        };
        for dep in &package.workspace_deps {
            if !targets.contains(&dep.as_str()) {
                wrong.push(format!("{} -> {} is not an allowed arrow", package.name, dep));
            }
        }
    }
    assert!(wrong.is_empty(), "architecture drift:\n  {}", wrong.join("\n  "));
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn source_files() -> Vec<(String, usize)> {
    let root = workspace_root();
    let mut files = Vec::new();
    for package in workspace_packages() {
        rust_files(&package.dir.join("src"), &mut files);
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            (path.strip_prefix(&root).unwrap().to_string_lossy().into_owned(), lines)
        })
        .collect()
}

#[test]
fn source_files_stay_short() {
    let allowed: BTreeMap<&str, usize> = LONG_FILES.iter().copied().collect();
    let lengths: BTreeMap<String, usize> = source_files().into_iter().collect();
    let mut wrong = Vec::new();
    for (path, &lines) in &lengths {
        match allowed.get(path.as_str()) {
            None if lines > MAX_FILE_LINES => {
                wrong.push(format!("{path}: {lines} lines (limit {MAX_FILE_LINES}); split it"))
            }
            Some(&cap) if lines > cap => {
                wrong.push(format!("{path}: {lines} lines, grew past its allowance of {cap}"))
            }
            Some(_) if lines <= MAX_FILE_LINES => {
                wrong.push(format!("{path}: {lines} lines; remove it from LONG_FILES"))
            }
            _ => {}
        }
    }
    for path in allowed.keys() {
        if !lengths.contains_key(*path) {
            wrong.push(format!("{path}: listed in LONG_FILES but gone; remove it"));
        }
    }
    assert!(wrong.is_empty(), "file length ratchet:\n  {}", wrong.join("\n  "));
}

fn function_lengths() -> BTreeMap<String, usize> {
    let root = workspace_root();
    let (mut roots, mut files) = (Vec::new(), Vec::new());
    for package in workspace_packages() {
        roots.extend(package.roots.iter().map(|r| r.canonicalize().unwrap()));
        rust_files(&package.dir.join("src"), &mut files);
    }
    let files: Vec<PathBuf> = files.into_iter().map(|f| f.canonicalize().unwrap()).collect();
    let mut lengths = BTreeMap::new();
    for (path, found) in functions::measure(&roots, &files) {
        let path = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        for function in found {
            let longest = lengths.entry(format!("{path}::{}", function.name)).or_insert(0);
            *longest = function.lines.max(*longest);
        }
    }
    lengths
}

#[test]
fn functions_stay_short() {
    let allowed: BTreeMap<&str, usize> = LONG_FUNCTIONS.iter().copied().collect();
    let lengths = function_lengths();
    let mut wrong = Vec::new();
    for (name, &lines) in &lengths {
        match allowed.get(name.as_str()) {
            None if lines > MAX_FUNCTION_LINES => {
                wrong.push(format!("{name}: {lines} lines (limit {MAX_FUNCTION_LINES}); split it"))
            }
            Some(&cap) if lines > cap => {
                wrong.push(format!("{name}: {lines} lines, grew past its allowance of {cap}"))
            }
            Some(_) if lines <= MAX_FUNCTION_LINES => {
                wrong.push(format!("{name}: {lines} lines; remove it from LONG_FUNCTIONS"))
            }
            _ => {}
        }
    }
    for name in allowed.keys() {
        if !lengths.contains_key(*name) {
            wrong.push(format!("{name}: listed in LONG_FUNCTIONS but gone; remove it"));
        }
    }
    let today: Vec<String> = lengths
        .iter()
        .filter(|(_, &lines)| lines > MAX_FUNCTION_LINES)
        .map(|(name, lines)| format!("    (\"{name}\", {lines}),"))
        .collect();
    assert!(
        wrong.is_empty(),
        "function length ratchet:\n  {}\n\nThe functions over {MAX_FUNCTION_LINES} lines today \
         (paste only after splitting what must not grow):\n{}",
        wrong.join("\n  "),
        today.join("\n")
    );
}

#[test]
fn unsafe_code_only_in_store_rt_and_luacall() {
    let mut wrong = Vec::new();
    for package in workspace_packages() {
        if UNSAFE_CRATES.contains(&package.name.as_str()) {
            continue;
        }
        for root in &package.roots {
            let text = std::fs::read_to_string(root).unwrap();
            if !text.lines().any(|l| l.trim() == "#![forbid(unsafe_code)]") {
                wrong.push(format!("{}: missing #![forbid(unsafe_code)]", root.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "unsafe outside store, rt and luacall:\n  {}", wrong.join("\n  "));
}

/// Lines of the Rust files under `dir` (relative to the workspace) whose code (comments
/// left out) contains one of `needles`, except in the files named by `allowed`.
fn lines_naming(dir: &str, needles: &[&str], allowed: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&workspace_root().join(dir), &mut files);
    let mut found = Vec::new();
    for path in files {
        if allowed.iter().any(|name| path.ends_with(name)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if needles.iter().any(|needle| code.contains(needle)) {
                found.push(format!("{}:{}: {}", path.display(), number + 1, line.trim()));
            }
        }
    }
    found
}

/// Each protocol's handlers touch only their own state and the shared core: the Redis
/// handlers (`exec/src/resp`) never reach memcached's (`Shared::memcache`), and memcached's
/// (`exec/src/memcache`, `exec/src/binary`) reach Redis's registries only through the few
/// links `memcache/view.rs` gives them (logins, ACL LOG, tracking invalidations).
#[test]
fn each_protocol_keeps_to_its_own_state() {
    let mut wrong = lines_naming("crates/exec/src/resp", &[".memcache.", "MemcacheState"], &[]);
    for dir in ["crates/exec/src/memcache", "crates/exec/src/binary"] {
        let needles = [".redis.", "RedisState", "shared: &Shared", "&crate::Shared"];
        wrong.extend(lines_naming(dir, &needles, &["memcache/view.rs"]));
    }
    assert!(wrong.is_empty(), "a protocol reaching the other's state:\n  {}", wrong.join("\n  "));
}
