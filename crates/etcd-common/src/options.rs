//! Every option a library error or warning can name as its hint, declared once: the neutral
//! ids each front-end spells in its own words (`--skip-hash-check`, `skip_hash_check: true`).
//! [`ALL`] lists them, so that the front-ends' tests check each is a flag or a module option
//! they have.

use crate::hint::OptionId;

/// Declares each option id as a constant, and [`ALL`].
macro_rules! option_ids {
    ($($(#[doc = $doc:literal])* $name:ident = $kind:ident($id:literal);)*) => {
        $($(#[doc = $doc])* pub const $name: OptionId = OptionId::$kind($id);)*
        /// Every option id above.
        pub const ALL: &[OptionId] = &[$($name),*];
    };
}

option_ids! {
    /// The client URLs the member tells others about.
    ADVERTISE_CLIENT_URLS = value("advertise_client_urls");
    /// Allow plain-http store endpoints.
    ALLOW_HTTP = switch("allow_http");
    /// A JWT etcd issued, sent instead of a user and password.
    AUTH_JWT_TOKEN = value("auth_jwt_token");
    /// How much history automatic compaction keeps.
    AUTO_COMPACTION_RETENTION = value("auto_compaction_retention");
    /// Raise the latest revision.
    BUMP_REVISION = value("bump_revision");
    /// The CA that signed the servers' certificates.
    CACERT = value("cacert");
    /// The CA certificate that signs.
    CA_CERT = value("ca_cert");
    /// The CA key that signs.
    CA_KEY = value("ca_key");
    /// The client certificate.
    CERT = value("cert");
    /// A certificate expiring within this many days is critical.
    CERT_CRITICAL_DAYS = value("cert_critical_days");
    /// A certificate expiring within this many days is a warning.
    CERT_WARN_DAYS = value("cert_warn_days");
    /// The chain to compact, by its full backup.
    CHAIN = value("chain");
    /// The time between a backup run's checks.
    CHECK_EVERY = value("check_every");
    /// How long to wait for an answer.
    COMMAND_TIMEOUT = value("command_timeout");
    /// The certificate's common name.
    COMMON_NAME = value("common_name");
    /// When a backup run compacts its chain.
    COMPACT_AFTER = value("compact_after");
    /// The zstd compression level.
    COMPRESSION_LEVEL = value("compression_level");
    /// A member's data dir.
    DATA_DIR = value("data_dir");
    /// The time between delta segments of a backup run.
    DELTA_EVERY = value("delta_every");
    /// How many path segments the usage groups keys by.
    DEPTH = value("depth");
    /// How long to wait for a connection.
    DIAL_TIMEOUT = value("dial_timeout");
    /// The domain whose DNS SRV records list the endpoints or the members.
    DISCOVERY_SRV = value("discovery_srv");
    /// The service name of the SRV records.
    DISCOVERY_SRV_NAME = value("discovery_srv_name");
    /// The DNS names a certificate is valid for.
    DNS_NAMES = value("dns_names");
    /// The DNS server asked for SRV records.
    DNS_SERVER = value("dns_server");
    /// The raft election timeout.
    ELECTION_TIMEOUT = value("election_timeout");
    /// The age recipients a backup is encrypted to.
    ENCRYPT_TO = value("encrypt_to");
    /// The endpoints to connect to.
    ENDPOINTS = value("endpoints");
    /// The etcd binary a restore drill starts.
    ETCD_BINARY = value("etcd_binary");
    /// Settings passed to etcd as they are.
    EXTRA = value("extra");
    /// Go ahead although a guard refused (the OpenShift operator, a quorum check).
    FORCE = switch("force");
    /// Read every key from the given one on.
    FROM_KEY = switch("from_key");
    /// The time between full backups of a backup run.
    FULL_EVERY = value("full_every");
    /// An age identity that decrypts an encrypted backup.
    IDENTITY = value("identity");
    /// The peer URLs a new member advertises.
    INITIAL_ADVERTISE_PEER_URLS = value("initial_advertise_peer_urls");
    /// `name=peer-url,...` of a new cluster.
    INITIAL_CLUSTER = value("initial_cluster");
    /// Whether the member starts a new cluster or joins one.
    INITIAL_CLUSTER_STATE = value("initial_cluster_state");
    /// The token of a new cluster.
    INITIAL_CLUSTER_TOKEN = value("initial_cluster_token");
    /// Trust any server certificate.
    INSECURE_SKIP_TLS_VERIFY = switch("insecure_skip_tls_verify");
    /// Interval of HTTP/2 keepalive pings.
    KEEPALIVE_TIME = value("keepalive_time");
    /// Time a keepalive ping may go unanswered.
    KEEPALIVE_TIMEOUT = value("keepalive_timeout");
    /// Keep the newest backup of each of the last N days.
    KEEP_DAILY = value("keep_daily");
    /// Keep the newest backup of each of the last N hours.
    KEEP_HOURLY = value("keep_hourly");
    /// Keep the newest N backups.
    KEEP_LAST = value("keep_last");
    /// Keep the newest backup of each of the last N months.
    KEEP_MONTHLY = value("keep_monthly");
    /// How many revisions a compaction keeps.
    KEEP_REVISIONS = value("keep_revisions");
    /// Keep the newest backup of each of the last N weeks.
    KEEP_WEEKLY = value("keep_weekly");
    /// The client certificate's key.
    KEY = value("key");
    /// The name of an encryption key.
    KEY_NAME = value("key_name");
    /// The prefix under which kube-apiserver stores its objects.
    KUBERNETES_PREFIX = value("kubernetes_prefix");
    /// The option that adds a member as a learner.
    LEARNER = switch("learner");
    /// The URLs the member serves clients on.
    LISTEN_CLIENT_URLS = value("listen_client_urls");
    /// The URLs the member serves metrics on.
    LISTEN_METRICS_URLS = value("listen_metrics_urls");
    /// The URLs the member serves its peers on.
    LISTEN_PEER_URLS = value("listen_peer_urls");
    /// The address a backup run serves its metrics and health on.
    METRICS_ADDR = value("metrics_addr");
    /// Mark the latest revision compacted.
    MARK_COMPACTED = switch("mark_compacted");
    /// Keep the backups younger than this.
    MAX_AGE = value("max_age");
    /// How old the newest backup may be.
    MAX_BACKUP_AGE = value("max_backup_age");
    /// The option naming the member a change is about.
    MEMBER = argument("member");
    /// Move an existing data dir aside instead of refusing it.
    MOVE_ASIDE = switch("move_aside");
    /// A member's name.
    NAME = value("name");
    /// A user without a password (client-certificate authentication).
    NO_PASSWORD = switch("no_password");
    /// S3 Object Lock on the backups a save writes: governance or compliance.
    OBJECT_LOCK_MODE = value("object_lock_mode");
    /// How long an Object-Locked backup is retained, from its date.
    OBJECT_LOCK_RETAIN = value("object_lock_retain");
    /// OpenShift's backup pair's directory.
    OPENSHIFT_BACKUP_DIR = value("openshift_backup_dir");
    /// The owner of the restored tree.
    OWNER = value("owner");
    /// The part size of a multipart upload.
    PART_SIZE = value("part_size");
    /// The password of the connection's user.
    PASSWORD = value("password");
    /// An environment variable holding a new user's password.
    PASSWORD_ENV = value("password_env");
    /// A file holding a new user's password.
    PASSWORD_FILE = value("password_file");
    /// The path of etcd's config file.
    PATH = value("path");
    /// The peer URLs of a member to add or update.
    PEER_URLS = value("peer_urls");
    /// The directory standing for `/` in platform detection.
    PLATFORM_ROOT = value("platform_root");
    /// A key prefix: where kube-apiserver stores its objects, or the keys to read.
    PREFIX = value("prefix");
    /// A key is a prefix: every key starting with it.
    PREFIX_SWITCH = switch("prefix");
    /// The resources to scan or an entry covers.
    RESOURCES = value("resources");
    /// The revision a hash, a read or a watch is at.
    REV = value("rev");
    /// An S3-compatible endpoint.
    S3_ENDPOINT = value("s3_endpoint");
    /// The size at which a delta segment is cut.
    SEGMENT_BYTES = value("segment_bytes");
    /// The name expected in the servers' certificates.
    SERVER_NAME = value("server_name");
    /// Restore or read a db whose SHA-256 trailer is missing or wrong.
    SKIP_HASH_CHECK = switch("skip_hash_check");
    /// A snapshot file or backup to read.
    SNAPSHOT = value("snapshot");
    /// The option naming the store that holds the cluster's backups.
    STORE = value("store");
    /// The CA bundle trusted for object store endpoints.
    STORE_CA_BUNDLE = value("store_ca_bundle");
    /// The endpoint of an object store.
    STORE_ENDPOINT = value("store_endpoint");
    /// How long a watch runs.
    TIMEOUT = value("timeout");
    /// How many of the largest groups the usage lists.
    TOP = value("top");
    /// A point-in-time restore's revision.
    TO_REVISION = value("to_revision");
    /// A point-in-time restore's time.
    TO_TIME = value("to_time");
    /// The revision a watch stops at.
    UNTIL_REV = value("until_rev");
    /// The etcd user (and password).
    USER = value("user");
    /// How many days a certificate is valid.
    VALIDITY_DAYS = value("validity_days");
    /// The version to downgrade to.
    VERSION = argument("version");
    /// A separate WAL dir.
    WAL_DIR = value("wal_dir");
    /// Where a compaction rebuilds the db.
    WORK_DIR = value("work_dir");
}
