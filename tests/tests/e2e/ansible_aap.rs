//! The Automation Platform credential type (`extensions/aap/etcd-credential-type.yml`) as AAP
//! applies it: its injectors rendered by Jinja2's sandbox the way AAP renders them (file
//! injectors written to private files, `tower.filename.<name>` naming them), then
//! `ansible-playbook` run with the injected variables and nothing else of this machine's
//! environment, against real etcd (TLS) and real store emulators (moto, Azurite,
//! fake-gcs-server). Store reads run `delegate_to: localhost`, as the roles' do.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use etcdops_tests::{
    AZURITE_ACCOUNT, AZURITE_KEY, AzuriteServer, Cluster, Collection, FakeGcsServer, PlaybookRun,
    S3Server, Security, ansible_venv,
};
use serde_json::{Value, json};

/// How AAP (awx/main/models/credential `CredentialType.inject_credential`) renders a
/// credential: an immutable Jinja2 sandbox, missing boolean inputs as `False`, one private
/// file per `template.<name>` file injector, then every env injector (empty ones included).
/// First it checks the type as AAP does when it is created: each template renders with every
/// field set and undefined names as errors; no `ANSIBLE_*` or reserved variable.
const INJECT_PY: &str = r#"
import json, os, stat, sys, tempfile
import yaml
from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

BLOCKED = {"VIRTUAL_ENV", "PATH", "PYTHONPATH", "JOB_ID", "INVENTORY_ID", "INVENTORY_SOURCE_ID",
           "INVENTORY_UPDATE_ID", "AD_HOC_COMMAND_ID", "REST_API_URL", "REST_API_TOKEN",
           "MAX_EVENT_RES", "CALLBACK_QUEUE", "CALLBACK_CONNECTION", "CACHE",
           "JOB_CALLBACK_DEBUG", "INVENTORY_HOSTVARS", "AWX_HOST", "PROJECT_REVISION",
           "SUPERVISOR_CONFIG_PATH"}

spec_path, inputs_path, out_dir = sys.argv[1:4]
with open(spec_path, encoding="utf-8") as f:
    spec = yaml.safe_load(f)
with open(inputs_path, encoding="utf-8") as f:
    inputs = json.load(f)

class Namespace:
    pass

tower = Namespace()
namespace = {"tower": tower, "awx": tower}
namespace.update(inputs)
for field in spec["inputs"]["fields"]:
    if field.get("type") == "boolean" and field["id"] not in inputs:
        namespace[field["id"]] = False
# As AAP validates a new type: every template renders with every field set, undefined names
# (a misspelled field) being errors, and no variable AAP refuses to inject.
strict = ImmutableSandboxedEnvironment(undefined=StrictUndefined)
check = Namespace()
check.filename = Namespace()
for label in spec["injectors"].get("file", {}):
    setattr(check.filename, label.split(".")[1], "/path")
full = {"tower": check, "awx": check}
for field in spec["inputs"]["fields"]:
    full[field["id"]] = True if field.get("type") == "boolean" else "x"
for kind in ("file", "env"):
    for name, template in spec["injectors"].get(kind, {}).items():
        strict.from_string(template).render(**full)
        if kind == "env" and (name.startswith("ANSIBLE_") or name in BLOCKED):
            sys.exit("AAP refuses to inject " + name)
sandbox = ImmutableSandboxedEnvironment()
for label, template in spec["injectors"].get("file", {}).items():
    data = sandbox.from_string(template).render(**namespace)
    fd, path = tempfile.mkstemp(dir=out_dir)
    with os.fdopen(fd, "w") as f:
        f.write(data)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    if "." not in label:
        tower.filename = path
    else:
        if not hasattr(tower, "filename"):
            tower.filename = Namespace()
        setattr(tower.filename, label.split(".")[1], path)
env = {name: sandbox.from_string(template).render(**namespace)
       for name, template in spec["injectors"].get("env", {}).items()}
json.dump(env, sys.stdout)
"#;

fn collection_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ansible_collections/etcd/core")
}

fn credential_type_path() -> PathBuf {
    collection_dir().join("extensions/aap/etcd-credential-type.yml")
}

fn credential_type() -> serde_yaml_ng::Value {
    let text = std::fs::read_to_string(credential_type_path()).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

/// The variables a credential of the type with `inputs` injects, rendered as AAP renders
/// them; its files are written under `dir`.
fn inject(inputs: &Value, dir: &Path) -> Vec<(String, String)> {
    std::fs::create_dir_all(dir).unwrap();
    let script = dir.join("inject.py");
    std::fs::write(&script, INJECT_PY).unwrap();
    let inputs_file = dir.join("inputs.json");
    std::fs::write(&inputs_file, inputs.to_string()).unwrap();
    let out = Command::new(ansible_venv().join("bin/python"))
        .arg(&script)
        .arg(credential_type_path())
        .arg(&inputs_file)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rendering the injectors failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env: serde_json::Map<String, Value> = serde_json::from_slice(&out.stdout).unwrap();
    env.into_iter()
        .map(|(k, v)| (k, v.as_str().unwrap().to_string()))
        .collect()
}

/// Runs `playbook` as a job would: the injected `env` and ansible's own settings, nothing
/// inherited (no `ETCDCTL_*`, `AWS_*` or `HOME` credentials of this machine).
fn job(
    collection: &Collection,
    playbook: &str,
    env: &[(String, String)],
    extra_args: &[&str],
) -> PlaybookRun {
    let work = tempfile::tempdir_in(collection.path()).unwrap();
    let play = work.path().join("play.yml");
    std::fs::write(&play, playbook).unwrap();
    let inventory = work.path().join("inventory.ini");
    // The etcd hosts have no Python; only the controller (localhost) runs the store reads.
    std::fs::write(
        &inventory,
        "[etcd]\netcd-1 ansible_connection=local ansible_python_interpreter=/nonexistent\n",
    )
    .unwrap();
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let venv = ansible_venv();
    let mut cmd = Command::new(venv.join("bin/ansible-playbook"));
    cmd.env_clear()
        .arg("-i")
        .arg(&inventory)
        .arg("-v")
        .args(extra_args)
        .arg(&play)
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", venv.join("bin").display()),
        )
        .env("HOME", &home)
        .env("LANG", "C.UTF-8")
        .env("ANSIBLE_COLLECTIONS_PATH", collection.path())
        .env("ANSIBLE_COLLECTIONS_SCAN_SYS_PATH", "false")
        .env("ANSIBLE_LOCAL_TEMP", work.path().join("local-tmp"))
        .env("ANSIBLE_REMOTE_TEMP", work.path().join("remote-tmp"))
        .env("ANSIBLE_PYTHON_INTERPRETER", venv.join("bin/python"))
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_DEPRECATION_WARNINGS", "false")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "false");
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    PlaybookRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn pem(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The credential's TLS inputs for `cluster`.
fn tls_inputs(cluster: &Cluster) -> Value {
    let certs = cluster.certs.as_ref().unwrap();
    json!({
        "endpoints": cluster.endpoints(),
        "cacert": pem(&certs.ca),
        "cert": pem(&certs.client_cert),
        "key": pem(&certs.client_key),
    })
}

/// Upper-case identifiers quoted in `text` (`"AWS_REGION"`, `'ETCDCTL_KEY'`).
fn quoted_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for quote in ['"', '\''] {
        for (i, part) in text.split(quote).enumerate() {
            let is_name = !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
                && part.contains('_');
            if i % 2 == 1 && is_name {
                names.insert(part.to_string());
            }
        }
    }
    names
}

/// Every variable the type injects is one the code reads where the credential is: the action
/// plugin (connection, on the controller) or etcd-store (store credentials, in the module
/// that runs on the controller). A typo or an invented name would silently do nothing.
#[test]
fn the_credential_type_injects_only_variables_the_code_reads() {
    let spec = credential_type();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let action =
        std::fs::read_to_string(collection_dir().join("plugins/plugin_utils/shim_action.py"))
            .unwrap();
    let store = std::fs::read_to_string(root.join("crates/etcd-store/src/options.rs")).unwrap();
    let (action, store) = (quoted_names(&action), quoted_names(&store));
    let injected: Vec<String> = spec["injectors"]["env"]
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert!(injected.len() >= 18, "{injected:?}");
    for name in &injected {
        let read = if name.starts_with("ETCDCTL_") || name == "ETCDOPS_SERVER_NAME" {
            action.contains(name)
        } else {
            store.contains(name)
        };
        assert!(read, "{name} is injected but nothing reads it");
    }
    // Every input is used by some injector, and every secret input is marked secret.
    let injectors = serde_yaml_ng::to_string(&spec["injectors"]).unwrap();
    for field in spec["inputs"]["fields"].as_sequence().unwrap() {
        let id = field["id"].as_str().unwrap();
        assert!(
            injectors.contains(&format!("{{{{ {id} }}}}"))
                || injectors.contains(&format!("if {id} ")),
            "input {id} is injected nowhere"
        );
        let secret_like = ["password", "key", "secret", "token", "json"]
            .iter()
            .any(|w| id.contains(w))
            && !id.ends_with("_id");
        assert_eq!(
            field["secret"].as_bool().unwrap_or(false),
            secret_like,
            "input {id}: secret should be {secret_like}"
        );
    }
}

const AZURE_CONTAINER: &str = "etcd-backups";

/// The job: a health gate and a backup to each object store with no connection option and no
/// credential in the play; the stores' endpoints are the job's (survey) variables.
fn backup_job(azurite: &AzuriteServer, gcs: &FakeGcsServer) -> String {
    format!(
        r#"
- name: Health gate, then a backup to each store
  hosts: etcd
  gather_facts: false
  tasks:
    - name: Health gate
      etcd.core.etcd_cluster_info:
        fail_on: [unhealthy, alarm]
      delegate_to: localhost
      run_once: true
    - name: Backup to S3 (endpoint, path style and keys from the credential)
      etcd.core.etcd_snapshot:
        dest: s3://etcd-backups/prod
        allow_http: true
      register: s3_backup
      delegate_to: localhost
      run_once: true
    - name: Backup to Azure (account and key from the credential)
      etcd.core.etcd_snapshot:
        dest: azure://{AZURE_CONTAINER}/prod
        store_endpoint: {azure}/{AZURITE_ACCOUNT}
        allow_http: true
      register: azure_backup
      delegate_to: localhost
      run_once: true
    - name: List the GCS store (service account key from the credential)
      etcd.core.etcd_snapshot_info:
        store: gs://etcd-backups/prod
        store_endpoint: {gcs}
        allow_http: true
      register: gcs_list
      delegate_to: localhost
      run_once: true
    - name: Both backups were written
      ansible.builtin.assert:
        that:
          - s3_backup is changed
          - azure_backup is changed
          - gcs_list.backups | length == 0
"#,
        azure = azurite.endpoint,
        gcs = gcs.endpoint,
    )
}

#[test]
fn a_job_with_only_the_credentials_variables_gates_and_backs_up_to_every_store() {
    let cluster = Cluster::start(1, Security::Tls);
    let s3 = S3Server::start();
    s3.create_bucket("etcd-backups");
    let azurite = AzuriteServer::start();
    azurite.create_container(AZURE_CONTAINER);
    let gcs = FakeGcsServer::start();
    gcs.create_bucket("etcd-backups");
    let collection = Collection::install();
    let files = collection.path().join("credential");
    let mut inputs = tls_inputs(&cluster);
    let store_inputs = json!({
        "aws_access_key_id": "AKIAAAPTEST",
        "aws_secret_access_key": "aap-s3-secret-value",
        "aws_region": "us-east-1",
        // By host name: an endpoint given as an IP address is addressed path-style whatever
        // the field says (no bucket host exists under an IP), so it would not show the field.
        "s3_endpoint": s3.endpoint.replace("127.0.0.1", "localhost"),
        "s3_path_style": true,
        "azure_storage_account": AZURITE_ACCOUNT,
        "azure_storage_key": AZURITE_KEY,
        // Emulators only: an empty bearer token, so nothing asks Google for one.
        "gcs_service_account_json": r#"{"private_key":"unused","private_key_id":"unused","client_email":"aap@example.com","disable_oauth":true}"#,
    });
    for (k, v) in store_inputs.as_object().unwrap() {
        inputs[k] = v.clone();
    }
    let env = inject(&inputs, &files);
    let playbook = backup_job(&azurite, &gcs);
    let run = job(&collection, &playbook, &env, &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("failed=0"), "{run}");
    for secret in ["aap-s3-secret-value", AZURITE_KEY] {
        assert!(
            !run.stdout.contains(secret) && !run.stderr.contains(secret),
            "{run}"
        );
    }

    // The key is what Azurite checked: a wrong one fails the Azure backup.
    let mut wrong = inputs.clone();
    wrong["azure_storage_key"] = json!(AZURITE_KEY.replace('E', "F"));
    let env = inject(&wrong, &collection.path().join("wrong-key"));
    let run = job(&collection, &playbook, &env, &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(run.stdout.contains("Backup to Azure"), "{run}");
    assert!(
        run.stdout.contains("fatal: [etcd-1 -> localhost]: FAILED!"),
        "{run}"
    );

    // Without path style (a credential field) the S3 backup fails: the field reached it
    // (`etcd-backups.localhost` resolves nowhere).
    let mut virtual_hosted = inputs.clone();
    virtual_hosted["s3_path_style"] = json!(false);
    let env = inject(&virtual_hosted, &collection.path().join("virtual"));
    let run = job(&collection, &playbook, &env, &[]);
    assert_ne!(run.code, 0, "{run}");
    let failed_task = run
        .stdout
        .split("TASK [")
        .find(|t| t.contains("FAILED!"))
        .unwrap_or("");
    assert!(failed_task.starts_with("Backup to S3"), "{run}");
}

/// A job's health gate: the cluster's health from the controller, with the credential's
/// connection settings only.
const HEALTH_GATE_ON_THE_CONTROLLER: &str = r#"
- name: Health gate
  hosts: etcd
  gather_facts: false
  tasks:
    - name: Health gate
      etcd.core.etcd_cluster_info:
        fail_on: [unhealthy]
      delegate_to: localhost
      run_once: true
"#;

#[test]
fn insecure_skip_tls_verify_from_the_credential_reaches_the_modules() {
    let cluster = Cluster::start(1, Security::Tls);
    let collection = Collection::install();
    let playbook = HEALTH_GATE_ON_THE_CONTROLLER;
    let mut inputs = tls_inputs(&cluster);
    inputs.as_object_mut().unwrap().remove("cacert");
    // No CA: the server is not trusted.
    let env = inject(&inputs, &collection.path().join("no-ca"));
    let run = job(&collection, playbook, &env, &[]);
    assert_ne!(run.code, 0, "{run}");
    // The box ticked: accepted, with a warning.
    inputs["insecure_skip_tls_verify"] = json!(true);
    let env = inject(&inputs, &collection.path().join("insecure"));
    assert!(env.contains(&("ETCDCTL_INSECURE_SKIP_TLS_VERIFY".into(), "true".into())));
    let run = job(&collection, playbook, &env, &[]);
    assert_eq!(run.code, 0, "{run}");
}

/// `server_name` reaches the modules as `ETCDOPS_SERVER_NAME`: a name the server's certificate
/// does not hold fails the task, one it holds passes (the action plugin reads
/// `ETCDOPS_SERVER_NAME` from the controller's environment: `ENV_OPTIONS` in
/// plugins/plugin_utils/shim_action.py).
#[test]
fn server_name_from_the_credential_reaches_the_modules() {
    let cluster = Cluster::start(1, Security::Tls);
    let collection = Collection::install();
    let playbook = HEALTH_GATE_ON_THE_CONTROLLER;
    let mut inputs = tls_inputs(&cluster);
    inputs["server_name"] = json!("etcd.example.invalid");
    let env = inject(&inputs, &collection.path().join("wrong-name"));
    let run = job(&collection, playbook, &env, &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(
        run.stdout.contains("etcd.example.invalid") || run.stdout.contains("host name"),
        "{run}"
    );
    inputs["server_name"] = json!("localhost");
    let env = inject(&inputs, &collection.path().join("right-name"));
    let run = job(&collection, playbook, &env, &[]);
    assert_eq!(run.code, 0, "{run}");
}

/// The ansible-builder venv that scripts/install-deps makes beside the ansible-core one
/// (`ETCDOPS_ANSIBLE_BUILDER_VENV` overrides).
fn builder_venv() -> PathBuf {
    std::env::var_os("ETCDOPS_ANSIBLE_BUILDER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| ansible_venv().with_file_name("ansible-builder"))
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = format!(
        "{cmd:?}\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// extensions/aap/execution-environment.yml makes a build context (ansible-builder create, no
/// container needed) whose galaxy stage, run here as the image runs it, installs the
/// collection's tarball, and whose introspection of the installed collection (what the
/// builder stage does with meta/execution-environment.yml) finds no Python or system package.
#[test]
fn the_execution_environment_definition_installs_the_collection_and_nothing_else() {
    if etcdops_tests::skip_on_etcd_3_4(
        "builds the tarball and runs ansible-builder and ansible-galaxy; starts no etcd",
    ) {
        return;
    }
    let collection = Collection::install();
    let work = tempfile::tempdir_in(collection.path()).unwrap();
    let venv = ansible_venv();
    // The tarball, as scripts/build-collection makes it (without its release shim).
    let built = work.path().join("built");
    run_ok(
        Command::new(venv.join("bin/ansible-galaxy"))
            .args(["collection", "build", "--output-path"])
            .arg(&built)
            .arg(collection.path().join("ansible_collections/etcd/core")),
    );
    let tarball = std::fs::read_dir(&built)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap();
    let ee_dir = work.path().join("ee");
    std::fs::create_dir_all(&ee_dir).unwrap();
    std::fs::copy(
        collection_dir().join("extensions/aap/execution-environment.yml"),
        ee_dir.join("execution-environment.yml"),
    )
    .unwrap();
    std::fs::copy(&tarball, ee_dir.join("etcd-core.tar.gz")).unwrap();
    let context = work.path().join("context");
    run_ok(
        Command::new(builder_venv().join("bin/ansible-builder"))
            .current_dir(&ee_dir)
            .args(["create", "-f", "execution-environment.yml", "-c"])
            .arg(&context),
    );
    let build = context.join("_build");
    let containerfile = ["Containerfile", "Dockerfile"]
        .iter()
        .map(|name| context.join(name))
        .find(|p| p.exists())
        .unwrap();
    let containerfile = std::fs::read_to_string(containerfile).unwrap();
    assert!(containerfile.contains("ansible-core"), "{containerfile}");
    assert!(
        containerfile.contains("COPY _build /build"),
        "{containerfile}"
    );
    // The galaxy stage: `ansible-galaxy collection install -r requirements.yml` in /build.
    let installed = work.path().join("installed");
    run_ok(
        Command::new(venv.join("bin/ansible-galaxy"))
            .current_dir(&build)
            .args(["collection", "install", "-r", "requirements.yml", "-p"])
            .arg(&installed),
    );
    let meta = installed.join("ansible_collections/etcd/core/meta/execution-environment.yml");
    assert!(
        meta.exists(),
        "the tarball lacks meta/execution-environment.yml"
    );
    // The builder stage's introspection: nothing to install for etcd.core.
    let deps = run_ok(
        Command::new(builder_venv().join("bin/ansible-builder"))
            .args(["introspect", "--sanitize"])
            .arg(&installed),
    );
    let deps: serde_yaml_ng::Value = serde_yaml_ng::from_str(
        deps.split("---")
            .nth(1)
            .expect("introspect prints YAML after ---"),
    )
    .unwrap();
    assert_eq!(
        deps["python"],
        serde_yaml_ng::Value::Sequence(vec![]),
        "{deps:?}"
    );
    assert_eq!(
        deps["system"],
        serde_yaml_ng::Value::Sequence(vec![]),
        "{deps:?}"
    );
}

fn example_playbook(name: &str) -> String {
    std::fs::read_to_string(collection_dir().join("extensions/aap/playbooks").join(name)).unwrap()
}

/// The job templates' playbooks of the README: the health gate and the backup run with the
/// credential's variables alone; the restore and member replacement parse (their roles have
/// their own tests); the README shows each file as it is.
#[test]
fn the_job_template_playbooks_run_with_the_credential_alone() {
    let cluster = Cluster::start(1, Security::Tls);
    let collection = Collection::install();
    let env = inject(&tls_inputs(&cluster), &collection.path().join("credential"));
    let run = job(
        &collection,
        &example_playbook("etcd_health_gate.yml"),
        &env,
        &[],
    );
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stdout.contains("ok=1") && run.stdout.contains("failed=0"),
        "{run}"
    );

    let backups = collection.path().join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    let dest = format!("etcd_backup_dest={}", backups.display());
    let run = job(
        &collection,
        &example_playbook("etcd_backup.yml"),
        &env,
        &["-e", &dest],
    );
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("at revision"), "{run}");
    // Check mode: the play runs through and says what it would save, saving nothing.
    let checked = collection.path().join("backups-check");
    std::fs::create_dir_all(&checked).unwrap();
    let dest_check = format!("etcd_backup_dest={}", checked.display());
    let check = job(
        &collection,
        &example_playbook("etcd_backup.yml"),
        &env,
        &["--check", "-e", &dest_check],
    );
    assert_eq!(check.code, 0, "{check}");
    assert!(check.stdout.contains("would save a snapshot"), "{check}");
    assert_eq!(std::fs::read_dir(&checked).unwrap().count(), 0, "{check}");
    // One cluster directory holding the snapshot and its manifest.
    let stored: Vec<String> = std::fs::read_dir(&backups)
        .unwrap()
        .flat_map(|cluster| std::fs::read_dir(cluster.unwrap().path()).unwrap())
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        stored.iter().any(|f| f.ends_with(".db.zst"))
            && stored.iter().any(|f| f.ends_with(".manifest.json")),
        "no backup and manifest in {}: {stored:?}\n{run}",
        backups.display()
    );

    for name in ["etcd_restore.yml", "etcd_member_replace.yml"] {
        let run = job(
            &collection,
            &example_playbook(name),
            &env,
            &["--syntax-check"],
        );
        assert_eq!(run.code, 0, "{name}: {run}");
    }
    let readme = std::fs::read_to_string(collection_dir().join("README.md")).unwrap();
    for name in [
        "etcd_backup.yml",
        "etcd_health_gate.yml",
        "etcd_restore.yml",
        "etcd_member_replace.yml",
    ] {
        let text = example_playbook(name);
        let body = text.strip_prefix("---\n").unwrap_or(&text);
        assert!(
            readme.contains(body),
            "the README does not show extensions/aap/playbooks/{name} as it is"
        );
    }
}

/// Creates `bucket` in the https moto at `port`, trusting `ca` (moto needs no signature).
fn create_bucket_tls(port: u16, ca: &Path, bucket: &str) {
    let out = Command::new("curl")
        .args(["-sSf", "-X", "PUT", "--cacert"])
        .arg(ca)
        .arg(format!("https://localhost:{port}/{bucket}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The job template's backup playbook against an S3 endpoint behind a private CA (the
/// credential's CA bundle field) and against a plain-http one (its allow-http box): the play
/// carries no store option, the credential alone makes it work.
#[test]
fn a_private_ca_and_plain_http_for_the_store_come_from_the_credential() {
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.as_ref().unwrap();
    let tls_s3 = S3Server::start_tls(&certs.server_cert, &certs.server_key);
    create_bucket_tls(tls_s3.port, &certs.ca, "etcd-backups");
    let http_s3 = S3Server::start();
    http_s3.create_bucket("etcd-backups");
    let collection = Collection::install();
    let playbook = example_playbook("etcd_backup.yml");
    let dest = ["-e", "etcd_backup_dest=s3://etcd-backups/prod"];
    let store = |endpoint: &str| {
        let mut inputs = tls_inputs(&cluster);
        for (k, v) in [
            ("aws_access_key_id", json!("AKIAAAPTEST")),
            ("aws_secret_access_key", json!("aap-s3-secret-value")),
            ("s3_endpoint", json!(endpoint)),
            ("s3_path_style", json!(true)),
        ] {
            inputs[k] = v;
        }
        inputs
    };

    // https with a private CA: refused without the bundle, saved with it.
    let inputs = store(&tls_s3.endpoint);
    let env = inject(&inputs, &collection.path().join("no-bundle"));
    let run = job(&collection, &playbook, &env, &dest);
    assert_ne!(run.code, 0, "{run}");
    let mut with_bundle = inputs.clone();
    with_bundle["s3_ca_bundle"] = json!(pem(&certs.ca));
    let env = inject(&with_bundle, &collection.path().join("bundle"));
    assert!(
        env.iter()
            .any(|(k, v)| k == "AWS_CA_BUNDLE" && !v.is_empty())
    );
    let run = job(&collection, &playbook, &env, &dest);
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("s3://etcd-backups/prod"), "{run}");

    // Plain http: refused unless the credential allows it.
    let inputs = store(&http_s3.endpoint);
    let env = inject(&inputs, &collection.path().join("no-http"));
    let run = job(&collection, &playbook, &env, &dest);
    assert_ne!(run.code, 0, "{run}");
    assert!(run.stdout.contains("plain http"), "{run}");
    let mut allowed = inputs.clone();
    allowed["allow_http"] = json!(true);
    let env = inject(&allowed, &collection.path().join("http"));
    let run = job(&collection, &playbook, &env, &dest);
    assert_eq!(run.code, 0, "{run}");
    for run_output in [&run.stdout, &run.stderr] {
        assert!(!run_output.contains("aap-s3-secret-value"), "{run}");
    }
}
