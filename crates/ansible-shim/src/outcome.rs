//! What a module returns, and how it is printed.

use serde::Serialize;
use serde_json::{Map, Value};

use etcdops::hints::{Hint, OptionId, OptionKind};

use crate::context::Context;
use crate::secrets::{masked_params, scrub_value, secret_values};

/// A module's result: Ansible's common keys plus the module's return values.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Whether the module changed something (or would, in check mode).
    pub changed: bool,
    /// Whether the module failed.
    pub failed: bool,
    /// What happened, in words.
    pub msg: String,
    /// Before/after, shown with `--diff`.
    pub diff: Option<Value>,
    /// Warnings Ansible prints.
    pub warnings: Vec<String>,
    /// The module's documented return values.
    pub values: Map<String, Value>,
}

/// Why a module could not do its job: a one-line message.
#[derive(Debug)]
pub struct ModuleError(pub String);

impl ModuleError {
    /// Wraps a message.
    pub fn new(msg: impl Into<String>) -> Self {
        ModuleError(msg.into())
    }
}

impl ModuleError {
    /// A library error in the module's words: its message, then the module option that gets
    /// past or fixes it (`(move_aside: true)`), found anywhere in its chain of sources, with
    /// the library's option names translated to this collection's ([`LIBRARY_NAMES`]) and any
    /// command-line flag in the text spelled as the module option it stands for.
    pub fn from_library(error: &(dyn std::error::Error + 'static)) -> ModuleError {
        let hint = etcdops::hint_of(error).map(module_options);
        ModuleError(etcdops::hints::with_hint(
            &module_words(&error.to_string()),
            hint.as_ref(),
            etcdops::hints::Style::Module,
        ))
    }
}

/// The library's option ids (the CLI's names) that this collection spells otherwise: the
/// id, how it takes its value, and the module options standing for it (any one will do).
pub const LIBRARY_NAMES: &[(&str, OptionKind, &[&str])] = &[
    // An age identity: given by file or by content.
    (
        "identity",
        OptionKind::Value,
        &["identity_file", "identity_content"],
    ),
    // kube-apiserver's key prefix (`--etcd-prefix`); `prefix` is the switch of a key range.
    ("prefix", OptionKind::Value, &["etcd_prefix"]),
];

/// A hint's options as this collection names them.
fn module_options(hint: Hint) -> Hint {
    let mut options = Vec::new();
    for option in hint.options {
        match LIBRARY_NAMES
            .iter()
            .find(|(name, kind, _)| *name == option.name && *kind == option.kind)
        {
            Some((_, kind, ours)) => {
                options.extend(ours.iter().map(|name| OptionId { name, kind: *kind }))
            }
            None => options.push(option),
        }
    }
    Hint { options }
}

/// Whether `name` is a documented option of a module of this collection, and a switch.
fn collection_option(name: &str) -> Option<bool> {
    crate::modules::MODULES
        .iter()
        .filter_map(|m| m.spec().ok())
        .find_map(|spec| {
            let option = spec.get(name).filter(|o| o.documented)?;
            Some(option.kind == "bool")
        })
}

/// A message with each command-line flag of a module option (`pass --move-aside`) in the
/// module's words (`set move_aside: true`). Other `--flags` (another program's, as
/// `kube-apiserver's --etcd-prefix`) are kept.
fn module_words(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        let (before, flag) = rest.split_at(at);
        let word: String = flag[2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let boundary = before
            .chars()
            .last()
            .is_none_or(|c| c.is_whitespace() || "(`'\"".contains(c));
        let name = word.replace('-', "_");
        // A value flag after `kube-apiserver's` is that program's: only a switch, or a value
        // flag the message tells the user to give, is ours.
        let told = ["pass ", "give ", "set ", "with ", "use ", "("]
            .iter()
            .any(|verb| before.ends_with(verb));
        let ours = collection_option(&name).filter(|switch| (*switch || told) && boundary);
        match ours.filter(|_| !word.is_empty()) {
            Some(switch) => {
                let before = match before.strip_suffix("pass ") {
                    Some(stem) => format!("{stem}set "),
                    None => before.to_string(),
                };
                out.push_str(&before);
                out.push_str(&name);
                if switch {
                    out.push_str(": true");
                }
                rest = &flag[2 + word.len()..];
            }
            None => {
                out.push_str(before);
                out.push_str("--");
                rest = &flag[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every library error becomes a module error through [`ModuleError::from_library`].
macro_rules! from_library {
    ($($error:ty),* $(,)?) => {
        $(impl From<$error> for ModuleError {
            fn from(e: $error) -> Self {
                ModuleError::from_library(&e)
            }
        })*
    };
}

from_library!(
    etcdops::Error,
    etcdops::client::ClientError,
    etcdops::server_config::HostError,
    etcdops::snapshot::SnapshotError,
    etcdops::snapshot::RestoreError,
    etcdops::kubernetes::K8sError,
    etcdops::store::StoreError,
);

impl Outcome {
    /// A result that changed nothing.
    pub fn unchanged(msg: impl Into<String>) -> Outcome {
        Outcome {
            msg: msg.into(),
            ..Outcome::default()
        }
    }

    /// A failed result.
    pub fn failure(msg: impl Into<String>) -> Outcome {
        Outcome {
            failed: true,
            msg: msg.into(),
            ..Outcome::default()
        }
    }

    /// Adds a return value (anything serializable).
    pub fn with(mut self, key: &str, value: impl Serialize) -> Outcome {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        self.values.insert(key.to_string(), value);
        self
    }

    /// Adds every field of a serializable struct as return values.
    pub fn with_fields(mut self, value: impl Serialize) -> Outcome {
        if let Ok(Value::Object(map)) = serde_json::to_value(value) {
            self.values.extend(map);
        }
        self
    }

    /// The printed document, with every secret scrubbed.
    pub fn into_json(self, context: &Context) -> String {
        let spec = context.spec();
        let mut doc = self.values;
        doc.insert("changed".into(), Value::Bool(self.changed));
        doc.insert("failed".into(), Value::Bool(self.failed));
        doc.insert("msg".into(), Value::String(one_line(&self.msg)));
        if !self.warnings.is_empty() {
            doc.insert("warnings".into(), Value::from(self.warnings));
        }
        if context.diff
            && let Some(diff) = self.diff
        {
            doc.insert("diff".into(), diff);
        }
        let mut invocation = Map::new();
        invocation.insert(
            "module_args".into(),
            Value::Object(masked_params(context.params(), spec)),
        );
        doc.insert("invocation".into(), Value::Object(invocation));
        scrub_value(Value::Object(doc), &secret_values(context.params(), spec)).to_string()
    }
}

fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn flags_of_module_options_become_option_names() {
        assert_eq!(
            module_words("a member has run on it since; pass --force to move it aside"),
            "a member has run on it since; set force: true to move it aside"
        );
        assert_eq!(
            module_words("give --cacert or --insecure-skip-tls-verify"),
            "give cacert or insecure_skip_tls_verify: true"
        );
        // Another program's flags are not ours.
        assert_eq!(
            module_words("check crictl ps --quiet etcd, kube-apiserver's --etcd-prefix"),
            "check crictl ps --quiet etcd, kube-apiserver's --etcd-prefix"
        );
        assert_eq!(module_words("a -- b --"), "a -- b --");
    }

    #[test]
    fn library_option_ids_become_this_collections_names() {
        let hint = Hint::any_of(&[
            OptionId::value("identity"),
            OptionId::value("prefix"),
            OptionId::switch("prefix"),
            OptionId::switch("force"),
        ]);
        assert_eq!(
            module_options(hint).render(etcdops::hints::Style::Module),
            "identity_file or identity_content or etcd_prefix or prefix: true or force: true"
        );
    }

    #[test]
    fn every_option_a_library_hint_names_is_an_option_of_a_module() {
        let missing: Vec<&str> = etcdops::hints::options::ALL
            .iter()
            .flat_map(|o| module_options(Hint::option(*o)).options)
            .map(|o| o.name)
            .filter(|name| collection_option(name).is_none())
            .collect();
        // Options of what no module does: `backup run` (its metrics address too),
        // keepalives, user passwords, watch and hashkv revisions,
        // downgrades (and `check_every`, which only library callers set).
        let cli_only = [
            "check_every",
            "compact_after",
            "delta_every",
            "full_every",
            "keepalive_time",
            "keepalive_timeout",
            "metrics_addr",
            "no_password",
            "password_env",
            "password_file",
            "rev",
            "segment_bytes",
            "until_rev",
            "version",
        ];
        let mut expected: Vec<&str> = cli_only.to_vec();
        expected.sort_unstable();
        let mut missing = missing;
        missing.sort_unstable();
        assert_eq!(missing, expected);
    }
}
