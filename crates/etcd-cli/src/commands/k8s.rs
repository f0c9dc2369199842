//! `etcdops k8s ...`: encryption-at-rest audit, EncryptionConfiguration steps, new keys,
//! decoded values. All the work is in etcd-k8s; this prints its results.

use std::io::{self, BufWriter, Read, Write};

use super::snapshot::store_options;
use anyhow::{Context, Result};
use etcdops::client::ClusterConfig;
use etcdops::guard::Guards;
use etcdops::kubernetes::{
    ConfigStep, DecodedValue, EncryptionConfigRequest, EncryptionConfigResult, EncryptionReport,
    EncryptionStatusRequest, K8sGetRequest, KeyMaterial, KeySecret, NewKey, NewKeyRequest,
    Provider, Storage, encryption_config, encryption_status, k8s_get, new_encryption_key,
};

use super::ExitStatus;
use crate::flags::{
    EncryptionConfigArgs, EncryptionConfigCommand, EncryptionKeyCommand, EncryptionStatusArgs,
    K8sCommand, K8sGetArgs, NewKeyArgs, OutputFormat, ProviderArg, RotateStepArg,
};
use crate::output::{Lines, Render, escape, json_line, plain, print};

/// Runs a `k8s` command.
pub async fn run(
    config: &ClusterConfig,
    guards: &Guards,
    command: &K8sCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        K8sCommand::EncryptionStatus(args) => status(config, args, format).await,
        K8sCommand::EncryptionConfig(EncryptionConfigCommand::Generate(args)) => {
            config_step(guards, args, ConfigStep::Generate, format).await
        }
        K8sCommand::EncryptionConfig(EncryptionConfigCommand::Rotate(args)) => {
            let step = match args.step {
                RotateStepArg::AddKey => ConfigStep::AddKey,
                RotateStepArg::Promote => ConfigStep::Promote,
                RotateStepArg::DropOld => ConfigStep::DropOld,
            };
            config_step(guards, &args.config, step, format).await
        }
        K8sCommand::EncryptionKey(EncryptionKeyCommand::New(args)) => new_key(args, format),
        K8sCommand::Get(args) => get(config, args, format).await,
    }
}

fn provider(arg: ProviderArg) -> Provider {
    match arg {
        ProviderArg::Aescbc => Provider::Aescbc,
        ProviderArg::Aesgcm => Provider::Aesgcm,
        ProviderArg::Secretbox => Provider::Secretbox,
    }
}

async fn status(
    config: &ClusterConfig,
    args: &EncryptionStatusArgs,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let request = EncryptionStatusRequest {
        resources: args.resources.clone(),
        prefix: args.prefix.clone(),
        snapshot: args.snapshot.clone(),
        skip_hash_check: args.skip_hash_check,
        list_all: args.all,
        max_objects: args.max_objects,
    };
    let identities = super::snapshot::identities(&args.identity)?;
    let report = encryption_status(
        config,
        &store_options(&args.store_flags),
        &request,
        &identities,
    )
    .await?;
    print(format, &ReportView(&report))?;
    if !format.is_json() && !report.objects.is_empty() {
        println!();
        print(format, &ObjectsView(&report))?;
    }
    if report.objects_truncated {
        eprintln!(
            "etcdops: warning: {} objects listed of more; --max-objects 0 lists every one",
            report.objects.len()
        );
    }
    if args.require_encrypted && !report.all_encrypted {
        eprintln!(
            "etcdops: {} of {} objects under {} are plaintext (--require-encrypted)",
            report.plaintext, report.total, report.prefix
        );
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}

fn storage_cell(storage: &Storage) -> String {
    match storage {
        Storage::Encrypted { provider, key_name } => format!("{provider} key {}", plain(key_name)),
        Storage::Plaintext { format } => {
            format!(
                "PLAINTEXT ({})",
                serde_json::to_string(format)
                    .unwrap_or_default()
                    .trim_matches('"')
            )
        }
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct ReportView<'a>(&'a EncryptionReport);

impl Render for ReportView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["RESOURCE", "STORED AS", "OBJECTS"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        for resource in &self.0.resources {
            for count in &resource.storage {
                rows.push(vec![
                    resource.resource.clone(),
                    storage_cell(&count.storage),
                    count.count.to_string(),
                ]);
            }
            if resource.storage.is_empty() {
                rows.push(vec![resource.resource.clone(), "(none)".into(), "0".into()]);
            }
        }
        rows.push(vec![
            "TOTAL".into(),
            format!(
                "{} encrypted, {} plaintext ({} {}, revision {})",
                self.0.encrypted,
                self.0.plaintext,
                if self.0.offline { "snapshot" } else { "live" },
                self.0.prefix,
                self.0.revision
            ),
            self.0.total.to_string(),
        ]);
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .rows()
            .into_iter()
            .map(|r| format!("{}, {}, {}", r[0], r[1], r[2]))
            .collect();
        lines.push(if self.0.all_encrypted {
            "all encrypted".into()
        } else {
            "NOT all encrypted".into()
        });
        lines
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct ObjectsView<'a>(&'a EncryptionReport);

impl Render for ObjectsView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["RESOURCE", "NAMESPACE", "NAME", "STORED AS"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .objects
            .iter()
            .map(|o| {
                vec![
                    plain(&o.resource),
                    plain(o.namespace.as_deref().unwrap_or_default()),
                    plain(&o.name),
                    storage_cell(&o.storage),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows()
            .into_iter()
            .map(|r| {
                let at = if r[1].is_empty() {
                    r[2].clone()
                } else {
                    format!("{}/{}", r[1], r[2])
                };
                format!("{} {at}: {}", r[0], r[3])
            })
            .collect()
    }
}

/// How a key file written by `encryption-key new --out` starts (JSON); else a bare key.
const JSON_OBJECT: char = '{';

/// The key given with --key-file: `encryption-key new --out` JSON, or bare base64.
fn read_key(args: &EncryptionConfigArgs) -> Result<Option<KeyMaterial>> {
    let Some(path) = &args.key_file else {
        return Ok(None);
    };
    let text = read_key_text(path)?;
    parse_key(text.trim(), path, args.key_name.as_deref()).map(Some)
}

/// The key file's text (`-`: standard input).
fn read_key_text(path: &std::path::Path) -> Result<String> {
    let mut text = String::new();
    if path.as_os_str() == "-" {
        io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the key from standard input")?;
    } else {
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .with_context(|| format!("cannot read the key file '{}'", path.display()))?;
    }
    Ok(text)
}

/// The key in `text`: JSON with its name (which `key_name`, when given, must match), or a
/// bare key named by `key_name`. Never echoes the text: it holds the key.
fn parse_key(text: &str, path: &std::path::Path, key_name: Option<&str>) -> Result<KeyMaterial> {
    #[derive(serde::Deserialize)]
    struct KeyFile {
        name: String,
        secret: String,
    }
    if !text.starts_with(JSON_OBJECT) {
        let name = key_name.ok_or_else(|| {
            anyhow::anyhow!(
                "'{}' holds a bare key: name it with --key-name",
                path.display()
            )
        })?;
        return Ok(KeyMaterial {
            name: name.to_string(),
            secret: KeySecret::new(text),
        });
    }
    // Never echo the parse error: it may quote the key.
    let file: KeyFile = serde_json::from_str(text).map_err(|_| {
        anyhow::anyhow!(
            "the key file '{}' is JSON but not {{\"name\": ..., \"secret\": ...}}",
            path.display()
        )
    })?;
    if let Some(name) = key_name
        && name != file.name
    {
        anyhow::bail!(
            "--key-name {name} differs from the name {} in '{}'",
            file.name,
            path.display()
        );
    }
    Ok(KeyMaterial {
        name: file.name,
        secret: KeySecret::new(file.secret),
    })
}

async fn config_step(
    guards: &Guards,
    args: &EncryptionConfigArgs,
    step: ConfigStep,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let request = EncryptionConfigRequest {
        path: args.config.clone(),
        step,
        provider: provider(args.provider),
        resources: args.resources.clone(),
        key: read_key(args)?,
        key_name: args.key_name.clone(),
        check_mode: args.check,
        force: args.force,
        identity_first: args.identity_first,
    };
    let done = encryption_config(guards, &request).await?;
    let result = done.result;
    for warning in done.forced.iter().chain(&result.warnings) {
        crate::output::warn(warning);
    }
    print(format, &ConfigView(&result))?;
    if format == OutputFormat::Table {
        crate::output::note(&format!("next: {}", result.next));
    }
    Ok(ExitStatus::Success)
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct ConfigView<'a>(&'a EncryptionConfigResult);

impl Render for ConfigView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = self.0;
        let changed = match (r.changed, r.check_mode) {
            (false, _) => "no",
            (true, true) => "yes (check mode: not written)",
            (true, false) => "yes (written, mode 0600)",
        };
        vec![
            vec!["file".into(), r.path.clone()],
            vec!["step".into(), r.step.as_str().into()],
            vec!["changed".into(), changed.into()],
            vec![
                format!("{} keys before", r.provider),
                r.keys_before.join(", "),
            ],
            vec![
                format!("{} keys after", r.provider),
                r.keys_after.join(", "),
            ],
            vec!["file before".into(), r.diff.before.trim_end().to_string()],
            vec!["file after".into(), r.diff.after.trim_end().to_string()],
        ]
    }

    fn simple_lines(&self) -> Vec<String> {
        let r = self.0;
        let mut lines = vec![format!(
            "{} {}: {}",
            r.step.as_str(),
            r.path,
            if r.changed { "changed" } else { "unchanged" }
        )];
        lines.extend(r.diff.before.lines().map(|l| format!("- {l}")));
        lines.extend(r.diff.after.lines().map(|l| format!("+ {l}")));
        lines.push(format!("next: {}", r.next));
        lines
    }
}

fn new_key(args: &NewKeyArgs, format: OutputFormat) -> Result<ExitStatus> {
    let key = new_encryption_key(&NewKeyRequest {
        name: args.name.clone(),
        provider: provider(args.provider),
    })?;
    if let Some(out) = &args.out {
        let json = serde_json::to_string_pretty(&key)?;
        let mut file = etcdops::files::create_new_file(out).with_context(|| {
            format!("cannot create '{}' (it must not exist yet)", out.display())
        })?;
        file.write_all(json.as_bytes())
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.sync_all())
            .with_context(|| format!("cannot write '{}'", out.display()))?;
        print(
            format,
            &KeyWritten {
                name: key.name.clone(),
                file: out.display().to_string(),
            },
        )?;
        return Ok(ExitStatus::Success);
    }
    eprintln!(
        "etcdops: this key is shown once: keep it in a vault; every control-plane host needs the same key"
    );
    print(format, &KeyView(&key))?;
    Ok(ExitStatus::Success)
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct KeyView<'a>(&'a NewKey);

impl Render for KeyView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["NAME", "PROVIDER", "SECRET"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![
            self.0.name.clone(),
            self.0.provider.to_string(),
            self.0.secret.clone(),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![format!("{} {}", self.0.name, self.0.secret)]
    }
}

#[derive(serde::Serialize)]
struct KeyWritten {
    name: String,
    file: String,
}

impl Render for KeyWritten {
    fn headers(&self) -> Vec<&'static str> {
        vec!["NAME", "WRITTEN TO"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![self.name.clone(), self.file.clone()]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![format!("{} {}", self.name, self.file)]
    }
}

fn text_block(value: &DecodedValue) -> String {
    let mut out = format!("{}\n", plain(&value.key));
    let field = |name: &str, v: &Option<String>| {
        v.as_ref()
            .map(|v| format!("  {name}: {}\n", plain(v)))
            .unwrap_or_default()
    };
    out.push_str(&format!("  stored as: {}\n", storage_cell(&value.storage)));
    out.push_str(&format!("  value size: {}\n", value.value_size));
    out.push_str(&field("apiVersion", &value.api_version));
    out.push_str(&field("kind", &value.kind));
    out.push_str(&field("namespace", &value.namespace));
    out.push_str(&field("name", &value.name));
    out.push_str(&field("uid", &value.uid));
    out.push_str(&field("created", &value.creation_timestamp));
    if let Some(size) = value.object_size {
        out.push_str(&format!("  object size: {size}\n"));
    }
    out.push_str(&field("note", &value.note));
    if let Some(object) = &value.object {
        let pretty = serde_json::to_string_pretty(object).unwrap_or_default();
        for line in pretty.lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

async fn get(
    config: &ClusterConfig,
    args: &K8sGetArgs,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let request = K8sGetRequest {
        key: args.key.clone(),
        prefix: args.prefix,
        revision: args.rev,
        limit: args.limit,
    };
    let mut out = BufWriter::new(io::stdout());
    let mut first = true;
    let summary = k8s_get(config, &request, |value| match format.is_json() {
        true => {
            let sep = if first { "{\"values\":[" } else { "," };
            first = false;
            let json = json_line(&value)?;
            write!(out, "{sep}\n{json}")
        }
        false => {
            let sep = if first { "" } else { "\n" };
            first = false;
            write!(out, "{sep}{}", escape(&text_block(&value), Lines::Keep))
        }
    })
    .await?;
    if format.is_json() {
        let tail = serde_json::to_string(&summary)?;
        writeln!(out, "\n],{}", &tail[1..])?;
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}
