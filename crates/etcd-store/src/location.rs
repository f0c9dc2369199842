//! "A snapshot file or a stored object": the one parser of the argument every snapshot
//! command takes (`snapshot status FILE|URL`, a restore's source, the Ansible `snapshot`
//! option). Text with a scheme (`s3://b/p/x.db.zst`, `file:///mnt/b/x.db`) names an object in
//! a store; anything else is a local file path.

use std::path::PathBuf;

use crate::parse::split_object_url;

/// Where a snapshot is: a local file, or an object in a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A local file (plain, zstd or age-encrypted snapshot).
    File(PathBuf),
    /// An object of a store: the store's URL and the object's name in it.
    Object {
        /// The store's URL (`s3://bucket/prefix/etcd-<cluster>`).
        store: String,
        /// The object's name in that store (`20261130T010000.000Z-rev10-0000000a.db.zst`).
        name: String,
    },
}

impl Location {
    /// A file path, or an object of a store when `text` has a scheme (`://`).
    pub fn parse(text: &str) -> Location {
        if text.contains("://") {
            let (store, name) = split_object_url(text);
            Location::Object { store, name }
        } else {
            Location::File(PathBuf::from(text))
        }
    }

    /// Whether this is an object of a store.
    pub fn is_object(&self) -> bool {
        matches!(self, Location::Object { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::Location;

    #[test]
    fn text_with_a_scheme_is_an_object_and_anything_else_a_file() {
        let cases = [
            (
                "s3://b/p/etcd-abc/x.db.zst",
                Location::Object {
                    store: "s3://b/p/etcd-abc".into(),
                    name: "x.db.zst".into(),
                },
            ),
            (
                "file:///mnt/b/x.db",
                Location::Object {
                    store: "file:///mnt/b".into(),
                    name: "x.db".into(),
                },
            ),
            (
                "/var/backups/x.db",
                Location::File("/var/backups/x.db".into()),
            ),
            ("x.db", Location::File("x.db".into())),
            // A path with a colon but no scheme is still a file.
            ("./a:b/x.db", Location::File("./a:b/x.db".into())),
        ];
        for (text, want) in cases {
            assert_eq!(Location::parse(text), want, "{text}");
            assert_eq!(Location::parse(text).is_object(), text.contains("://"));
        }
    }
}
