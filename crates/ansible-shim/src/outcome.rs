//! What a module returns, and how it is printed.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::context::Context;
use crate::secrets::{masked_params, scrub_json, secret_values};

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
    /// past or fixes it (`(move_aside: true)`), found anywhere in its chain of sources.
    pub fn from_library(error: &(dyn std::error::Error + 'static)) -> ModuleError {
        let hint = etcdops::hint_of(error).map(module_options);
        ModuleError(etcdops::common::with_hint(
            &error.to_string(),
            hint.as_ref(),
            etcdops::common::Style::Module,
        ))
    }
}

/// A hint's options as this collection names them: an identity is given by file or by
/// content.
fn module_options(hint: etcdops::common::Hint) -> etcdops::common::Hint {
    use etcdops::common::OptionId;
    let mut options = Vec::new();
    for option in hint.options {
        if option.name == "identity" {
            options.push(OptionId::value("identity_file"));
            options.push(OptionId::value("identity_content"));
        } else {
            options.push(option);
        }
    }
    etcdops::common::Hint { options }
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
    etcd_core::Error,
    etcd_snapshot::SnapshotError,
    etcd_snapshot::RestoreError,
    etcd_k8s::K8sError,
    etcd_store::StoreError,
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
        let specs = context.specs();
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
            Value::Object(masked_params(context.params(), &specs)),
        );
        doc.insert("invocation".into(), Value::Object(invocation));
        let json = Value::Object(doc).to_string();
        scrub_json(&json, &secret_values(context.params(), &specs))
    }
}

fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
