//! Running real ansible-core against the `etcd.core` collection of this checkout, with the
//! shim binary built beside the tests placed as the collection's module binary.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Directory of the ansible-core venv (`ETCDOPS_ANSIBLE_VENV`, set by `scripts/test`).
pub fn ansible_venv() -> PathBuf {
    PathBuf::from(
        std::env::var("ETCDOPS_ANSIBLE_VENV")
            .unwrap_or_else(|_| "/opt/etcdops-deps/ansible".into()),
    )
}

/// Path of the shim binary built beside this test binary (or `ETCDOPS_SHIM_BIN`).
pub fn shim_path() -> PathBuf {
    crate::cli::built_binary("etcd-ansible-shim", "ETCDOPS_SHIM_BIN", "ansible-shim")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read collection dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy collection file");
        }
    }
}

/// A play over `hosts` that runs `role` with `vars`, its modules connected to `endpoints`
/// through the `group/etcd.core.etcd` module defaults (as the roles' READMEs show).
pub fn role_playbook(
    hosts: &str,
    endpoints: &[String],
    role: &str,
    vars: serde_json::Value,
) -> String {
    serde_json::json!([{
        "hosts": hosts,
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": endpoints}},
        "roles": [{"role": role, "vars": vars}],
    }])
    .to_string()
}

/// A private install of the collection (this checkout's files plus the shim binary).
pub struct Collection {
    dir: tempfile::TempDir,
}

/// The result of one `ansible-playbook` run.
#[derive(Debug)]
pub struct PlaybookRun {
    /// Exit code.
    pub code: i32,
    /// Standard output (the play recap, `-v` results).
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl PlaybookRun {
    /// Asserts that the play succeeded: exit code 0 and no failed task in the recap.
    pub fn assert_ok(&self) {
        assert_eq!(self.code, 0, "{self}");
        assert!(self.stdout.contains("failed=0"), "{self}");
    }
}

impl std::fmt::Display for PlaybookRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ansible-playbook exit code {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Collection {
    /// Copies `ansible_collections/etcd/core` into a temporary collections path and installs
    /// the shim as `files/etcd_shim_<arch>`.
    pub fn install() -> Collection {
        let dir = tempfile::Builder::new()
            .prefix("etcdops-ansible-")
            .tempdir()
            .expect("temp dir");
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join("ansible_collections/etcd/core");
        let target = dir.path().join("ansible_collections/etcd/core");
        copy_tree(&source, &target);
        let shim = shim_path();
        let files = target.join("files");
        std::fs::create_dir_all(&files).expect("create files dir");
        let binary = files.join(format!("etcd_shim_{}", std::env::consts::ARCH));
        std::fs::copy(&shim, &binary).expect("install shim");
        Collection { dir }
    }

    /// Builds the release tarball with `scripts/build-collection` (this build's shim) and
    /// installs it with `ansible-galaxy collection install`, as a user would.
    pub fn install_tarball() -> Collection {
        let dir = tempfile::Builder::new()
            .prefix("etcdops-galaxy-")
            .tempdir()
            .expect("temp dir");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let built = dir.path().join("built");
        // The debug shim carries ~50 MB of symbols that only slow the tarball down.
        let shim = dir.path().join("etcd-ansible-shim");
        std::fs::copy(shim_path(), &shim).expect("copy shim");
        let stripped = Command::new("strip").arg(&shim).status();
        assert!(stripped.is_ok_and(|s| s.success()), "strip failed");
        // As an operator's machine runs it: a deps dir without the test world, and the
        // ansible-galaxy of an Ansible install on PATH.
        let deps = dir.path().join("deps");
        std::fs::create_dir_all(&deps).expect("deps dir");
        let path = format!("{}:/usr/bin:/bin", ansible_venv().join("bin").display());
        let out = Command::new(root.join("scripts/build-collection"))
            .arg("--shim")
            .arg(&shim)
            .arg("--output")
            .arg(&built)
            .env("ETCDOPS_DEPS_DIR", &deps)
            .env("PATH", path)
            .output()
            .expect("run build-collection");
        assert!(
            out.status.success(),
            "build-collection failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let installed: Vec<String> = std::fs::read_dir(&deps)
            .expect("read deps dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            installed.is_empty(),
            "build-collection installed {installed:?} into its deps dir:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tarball = std::fs::read_dir(&built)
            .expect("read output")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
            .expect("a tarball");
        let out = Command::new(ansible_venv().join("bin/ansible-galaxy"))
            .args(["collection", "install", "--force", "-p"])
            .arg(dir.path())
            .arg(&tarball)
            .output()
            .expect("run ansible-galaxy");
        assert!(
            out.status.success(),
            "ansible-galaxy collection install failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Collection { dir }
    }

    /// The collections path (holds `ansible_collections/`).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Where a test target of the collection lives (`tests/integration/targets/NAME`).
    pub fn target(&self, name: &str) -> PathBuf {
        self.dir
            .path()
            .join("ansible_collections/etcd/core/tests/integration/targets")
            .join(name)
    }

    /// Where the action plugin caches the shim on the target (this machine): inside this
    /// install, so every test starts without a cached copy and leaves none behind.
    pub fn shim_cache_dir(&self) -> PathBuf {
        self.dir.path().join("shim-cache")
    }

    /// Where a role of the collection lives.
    pub fn roles_dir(&self) -> PathBuf {
        self.dir.path().join("ansible_collections/etcd/core/roles")
    }

    /// Runs `playbook` (YAML text) with `extra_vars` (JSON) and the inventory text, plus
    /// environment variables for the controller. `-v` so results (with `invocation`) print.
    pub fn playbook(
        &self,
        playbook: &str,
        inventory: &str,
        extra_vars: &serde_json::Value,
        env: &[(&str, &str)],
        extra_args: &[&str],
    ) -> PlaybookRun {
        let (mut cmd, _work) = self.command(playbook, inventory, extra_vars, env, extra_args);
        let out = cmd.output().expect("run ansible-playbook");
        PlaybookRun {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Starts `playbook` as [`Collection::playbook`] runs it, its stdout piped (a test reads
    /// it as it comes and may kill the run half-way; its files live as long as the result).
    pub fn spawn_playbook(&self, playbook: &str, inventory: &str) -> SpawnedPlaybook {
        let (mut cmd, work) = self.command(playbook, inventory, &serde_json::json!({}), &[], &[]);
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start ansible-playbook");
        let stdout = child.stdout.take().expect("piped stdout");
        SpawnedPlaybook {
            child,
            stdout,
            _work: work,
        }
    }

    fn command(
        &self,
        playbook: &str,
        inventory: &str,
        extra_vars: &serde_json::Value,
        env: &[(&str, &str)],
        extra_args: &[&str],
    ) -> (Command, tempfile::TempDir) {
        let work = tempfile::tempdir_in(self.dir.path()).expect("temp dir");
        let play = work.path().join("play.yml");
        std::fs::write(&play, playbook).expect("write playbook");
        let inv = work.path().join("inventory.ini");
        std::fs::write(&inv, inventory).expect("write inventory");
        let vars = work.path().join("vars.json");
        std::fs::write(&vars, extra_vars.to_string()).expect("write vars");
        let venv = ansible_venv();
        // The controller's home is this install's: what a role keeps under ~ (the backups
        // taken before a change, by default) lives and goes with the test.
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).expect("create home");
        let mut cmd = Command::new(venv.join("bin/ansible-playbook"));
        cmd.arg("-i")
            .arg(&inv)
            .arg("-e")
            .arg(format!("@{}", vars.display()))
            .arg("-e")
            .arg(
                serde_json::json!({ "etcd_core_shim_cache_dir": self.shim_cache_dir() })
                    .to_string(),
            )
            .arg("-v")
            .args(extra_args)
            .arg(&play)
            .env("HOME", &home)
            .env("ANSIBLE_COLLECTIONS_PATH", self.dir.path())
            .env("ANSIBLE_COLLECTIONS_SCAN_SYS_PATH", "false")
            .env("ANSIBLE_LOCAL_TEMP", work.path().join("local-tmp"))
            .env("ANSIBLE_REMOTE_TEMP", work.path().join("remote-tmp"))
            .env("ANSIBLE_HOST_KEY_CHECKING", "false")
            // Targets are this machine: its Python is the venv's (inventory can override).
            .env("ANSIBLE_PYTHON_INTERPRETER", venv.join("bin/python"))
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_FORCE_COLOR", "0")
            .env("ANSIBLE_DEPRECATION_WARNINGS", "false")
            .env("ANSIBLE_RETRY_FILES_ENABLED", "false")
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    venv.join("bin").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            );
        for (name, _) in etcd_core_env() {
            cmd.env_remove(name);
        }
        for (name, value) in env {
            cmd.env(name, value);
        }
        (cmd, work)
    }
}

/// A running `ansible-playbook` ([`Collection::spawn_playbook`]).
pub struct SpawnedPlaybook {
    /// The process.
    pub child: std::process::Child,
    /// Its standard output.
    pub stdout: std::process::ChildStdout,
    _work: tempfile::TempDir,
}

/// The `ETCDCTL_*` variables a test must not inherit.
fn etcd_core_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("ETCDCTL_"))
        .collect()
}
