//! The command groups of `COMMAND DOCS` (Redis's `group` field).

/// The `group` of `COMMAND DOCS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Bitmap,
    Cluster,
    Connection,
    Generic,
    Geo,
    Hash,
    Hyperloglog,
    List,
    Pubsub,
    Scripting,
    Server,
    Set,
    SortedSet,
    Stream,
    String,
    Transactions,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Bitmap => "bitmap",
            Group::Cluster => "cluster",
            Group::Connection => "connection",
            Group::Generic => "generic",
            Group::Geo => "geo",
            Group::Hash => "hash",
            Group::Hyperloglog => "hyperloglog",
            Group::List => "list",
            Group::Pubsub => "pubsub",
            Group::Scripting => "scripting",
            Group::Server => "server",
            Group::Set => "set",
            Group::SortedSet => "sorted-set",
            Group::Stream => "stream",
            Group::String => "string",
            Group::Transactions => "transactions",
        }
    }
}
