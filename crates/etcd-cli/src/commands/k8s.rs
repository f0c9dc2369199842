//! `etcdops k8s ...`: encryption-at-rest audit, EncryptionConfiguration steps, new keys,
//! decoded values. All the work is in etcd-k8s; this prints its results.

use std::io::{self, BufWriter, Read, Write};

use super::snapshot::store_options;
use anyhow::{Context, Result};
use etcdops::client::ClusterConfig;
use etcdops::guard::Guards;
use etcdops::kubernetes::{
    ConfigStep, EncryptionConfigRequest, EncryptionStatusRequest, K8sGetRequest, KeyMaterial,
    KeySecret, NewKeyRequest, Provider, encryption_config, encryption_status, k8s_get,
    new_encryption_key,
};

use super::ExitStatus;
use crate::flags::{
    EncryptionConfigArgs, EncryptionConfigCommand, EncryptionKeyCommand, EncryptionStatusArgs,
    K8sCommand, K8sGetArgs, NewKeyArgs, OutputFormat, ProviderArg, RotateStepArg,
};
use crate::output::{Lines, escape, json_line};
use etcdops_printer::Printer;
use etcdops_printer::views::k8s::*;

/// Runs a `k8s` command.
pub async fn run(
    config: &ClusterConfig,
    guards: &Guards,
    command: &K8sCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    match command {
        K8sCommand::EncryptionStatus(args) => status(config, args, printer).await,
        K8sCommand::EncryptionConfig(EncryptionConfigCommand::Generate(args)) => {
            config_step(guards, args, ConfigStep::Generate, printer).await
        }
        K8sCommand::EncryptionConfig(EncryptionConfigCommand::Rotate(args)) => {
            let step = match args.step {
                RotateStepArg::AddKey => ConfigStep::AddKey,
                RotateStepArg::Promote => ConfigStep::Promote,
                RotateStepArg::DropOld => ConfigStep::DropOld,
            };
            config_step(guards, &args.config, step, printer).await
        }
        K8sCommand::EncryptionKey(EncryptionKeyCommand::New(args)) => new_key(args, printer),
        K8sCommand::Get(args) => get(config, args, printer).await,
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
    printer: Printer,
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
    printer.print(&ReportView(&report))?;
    if !printer.format().is_json() && !report.objects.is_empty() {
        println!();
        printer.print(&ObjectsView(&report))?;
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
    printer: Printer,
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
    printer.print(&ConfigView(&result))?;
    if printer.format() == OutputFormat::Table {
        crate::output::note(&format!("next: {}", result.next));
    }
    Ok(ExitStatus::Success)
}

fn new_key(args: &NewKeyArgs, printer: Printer) -> Result<ExitStatus> {
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
        printer.print(&KeyWritten {
            name: key.name.clone(),
            file: out.display().to_string(),
        })?;
        return Ok(ExitStatus::Success);
    }
    eprintln!(
        "etcdops: this key is shown once: keep it in a vault; every control-plane host needs the same key"
    );
    printer.print(&KeyView(&key))?;
    Ok(ExitStatus::Success)
}

async fn get(config: &ClusterConfig, args: &K8sGetArgs, printer: Printer) -> Result<ExitStatus> {
    let request = K8sGetRequest {
        key: args.key.clone(),
        prefix: args.prefix,
        revision: args.rev,
        limit: args.limit,
    };
    let mut out = BufWriter::new(io::stdout());
    let mut first = true;
    let summary = k8s_get(config, &request, |value| match printer.format().is_json() {
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
    if printer.format().is_json() {
        let tail = serde_json::to_string(&summary)?;
        writeln!(out, "\n],{}", &tail[1..])?;
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}
