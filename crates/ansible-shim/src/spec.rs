//! Module options: what each module accepts, and the coercions Ansible users expect.
//!
//! Ansible checks a Python module's options against its argument spec before the module runs;
//! a binary module gets the raw values. So each module declares its options here, and
//! [`normalize`] refuses unknown ones (naming the supported ones), drops nulls (`omit`,
//! unset variables) and coerces the usual YAML and Jinja spellings: `yes`/`"true"` for
//! booleans, `"5"` for integers, `"a,b"` for lists. serde then builds the module's typed
//! request from the result.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The type of one option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string (numbers and booleans are turned into their text).
    Str,
    /// A boolean: true/false, yes/no, on/off, 1/0, as Ansible accepts them.
    Bool,
    /// An integer, also given as a string.
    Int,
    /// A list of strings, also given as a comma-separated string.
    List,
    /// A mapping of strings to strings.
    Dict,
}

/// One option of a module.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    /// Its name in the task.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Whether its value is a secret: scrubbed from every output.
    pub secret: bool,
}

/// An option that is not a secret.
pub const fn opt(name: &'static str, kind: Kind) -> OptionSpec {
    OptionSpec {
        name,
        kind,
        secret: false,
    }
}

/// An option whose value is a secret.
pub const fn secret(name: &'static str, kind: Kind) -> OptionSpec {
    OptionSpec {
        name,
        kind,
        secret: true,
    }
}

/// Checks and coerces `params` (no `_ansible_*` keys) against `specs`.
pub fn normalize(
    module: &str,
    params: &Map<String, Value>,
    specs: &[&[OptionSpec]],
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (name, value) in params {
        let Some(spec) = specs.iter().flat_map(|s| s.iter()).find(|s| s.name == name) else {
            let mut known: Vec<&str> = specs
                .iter()
                .flat_map(|s| s.iter())
                .map(|s| s.name)
                .collect();
            known.sort_unstable();
            return Err(format!(
                "unsupported option '{name}' for {module}; supported options: {}",
                known.join(", ")
            ));
        };
        if value.is_null() {
            continue;
        }
        let coerced = coerce(spec.kind, value).map_err(|expected| {
            if spec.secret {
                format!("option '{name}' must be {expected}")
            } else {
                format!("option '{name}' must be {expected}, got {value}")
            }
        })?;
        out.insert(name.clone(), coerced);
    }
    Ok(out)
}

fn coerce(kind: Kind, value: &Value) -> Result<Value, &'static str> {
    match kind {
        Kind::Str => match value {
            Value::String(_) => Ok(value.clone()),
            Value::Number(n) => Ok(Value::String(n.to_string())),
            Value::Bool(b) => Ok(Value::String(b.to_string())),
            _ => Err("a string"),
        },
        Kind::Bool => match value {
            Value::Bool(_) => Ok(value.clone()),
            Value::Number(n) if n.as_i64() == Some(1) => Ok(Value::Bool(true)),
            Value::Number(n) if n.as_i64() == Some(0) => Ok(Value::Bool(false)),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "yes" | "true" | "on" | "1" | "y" | "t" => Ok(Value::Bool(true)),
                "no" | "false" | "off" | "0" | "n" | "f" => Ok(Value::Bool(false)),
                _ => Err("a boolean (true/false, yes/no)"),
            },
            _ => Err("a boolean (true/false, yes/no)"),
        },
        Kind::Int => match value {
            Value::Number(n) if n.is_i64() => Ok(value.clone()),
            Value::String(s) => s
                .trim()
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "an integer"),
            _ => Err("an integer"),
        },
        Kind::List => match value {
            Value::Array(items) => items
                .iter()
                .map(|item| coerce(Kind::Str, item))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
                .map_err(|_| "a list of strings"),
            Value::String(s) => Ok(Value::Array(
                s.split(',')
                    .map(str::trim)
                    .filter(|part| !part.is_empty())
                    .map(|part| Value::String(part.to_string()))
                    .collect(),
            )),
            _ => Err("a list of strings"),
        },
        Kind::Dict => match value {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| coerce(Kind::Str, v).map(|v| (k.clone(), v)))
                .collect::<Result<Map<_, _>, _>>()
                .map(Value::Object)
                .map_err(|_| "a mapping of strings"),
            _ => Err("a mapping of strings"),
        },
    }
}

/// Builds a module's typed options from normalized parameters. serde's messages are turned
/// into Ansible's words (`missing required option`).
pub fn parse<T: DeserializeOwned>(
    module: &str,
    normalized: Map<String, Value>,
) -> Result<T, String> {
    serde_json::from_value(Value::Object(normalized)).map_err(|e| {
        let text = e.to_string();
        match text
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split_once('`'))
        {
            Some((field, _)) => format!("{module}: missing required option '{field}'"),
            None => format!("{module}: {}", text.replace('`', "'")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SPECS: &[OptionSpec] = &[
        opt("name", Kind::Str),
        opt("learner", Kind::Bool),
        opt("limit", Kind::Int),
        opt("peer_urls", Kind::List),
        opt("labels", Kind::Dict),
        secret("password", Kind::Str),
    ];

    fn norm(v: Value) -> Result<Map<String, Value>, String> {
        normalize("etcd_test", v.as_object().unwrap(), &[SPECS])
    }

    #[test]
    fn ansible_spellings_are_coerced() {
        let out = norm(json!({
            "name": 5, "learner": "yes", "limit": "10",
            "peer_urls": "https://a:2380, https://b:2380", "labels": {"n": 1}
        }))
        .unwrap();
        assert_eq!(out["name"], json!("5"));
        assert_eq!(out["learner"], json!(true));
        assert_eq!(out["limit"], json!(10));
        assert_eq!(
            out["peer_urls"],
            json!(["https://a:2380", "https://b:2380"])
        );
        assert_eq!(out["labels"], json!({"n": "1"}));
    }

    #[test]
    fn unknown_options_name_the_supported_ones() {
        let err = norm(json!({"nmae": "x"})).unwrap_err();
        assert!(err.contains("unsupported option 'nmae'"), "{err}");
        assert!(
            err.contains("labels, learner, limit, name, password, peer_urls"),
            "{err}"
        );
    }

    #[test]
    fn nulls_are_dropped_and_bad_values_refused() {
        let out = norm(json!({"name": null})).unwrap();
        assert!(out.is_empty());
        let err = norm(json!({"learner": "maybe"})).unwrap_err();
        assert!(err.contains("option 'learner' must be a boolean"), "{err}");
        let err = norm(json!({"limit": "ten"})).unwrap_err();
        assert!(err.contains("must be an integer"), "{err}");
    }

    #[test]
    fn secret_values_are_not_echoed_in_errors() {
        let err = norm(json!({"password": ["hunter2"]})).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn missing_required_options_are_named() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Needs {
            name: String,
        }
        let err = parse::<Needs>("etcd_test", Map::new()).unwrap_err();
        assert_eq!(err, "etcd_test: missing required option 'name'");
    }
}
