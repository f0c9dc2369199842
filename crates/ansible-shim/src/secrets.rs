//! Secret hygiene: Ansible masks `no_log` values only for Python modules, so the shim scrubs
//! every secret option's value from everything it prints.

use serde_json::{Map, Value};

use crate::spec::OptionSpec;

/// What replaces a secret in `invocation`, as Ansible itself writes it.
pub const MASK: &str = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER";

/// The secret values among the raw parameters (`user: name:password` included), longest
/// first so that a secret containing another is replaced whole.
pub fn secret_values(params: &Map<String, Value>, specs: &[&[OptionSpec]]) -> Vec<String> {
    let mut values = Vec::new();
    for spec in specs.iter().flat_map(|s| s.iter()).filter(|s| s.secret) {
        if let Some(value) = params.get(spec.name) {
            collect_strings(value, &mut values);
        }
    }
    if let Some(Value::String(user)) = params.get("user")
        && let Some((_, password)) = user.split_once(':')
    {
        values.push(password.to_string());
    }
    // A multi-line secret (an age identity file's content) is also scrubbed line by line, so
    // that a key line shown on its own is caught too; comment lines are not secret.
    let lines: Vec<String> = values
        .iter()
        .filter(|v| v.contains('\n'))
        .flat_map(|v| v.lines())
        .map(str::trim)
        .filter(|line| line.len() >= 8 && !line.starts_with('#'))
        .map(str::to_string)
        .collect();
    values.extend(lines);
    values.retain(|v| !v.trim().is_empty());
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    values
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// The parameters as `invocation.module_args` shows them: secret options masked.
pub fn masked_params(params: &Map<String, Value>, specs: &[&[OptionSpec]]) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, value) in params {
        if name.starts_with("_ansible_") || name == crate::MODULE_KEY {
            continue;
        }
        let is_secret = specs
            .iter()
            .flat_map(|s| s.iter())
            .any(|s| s.secret && s.name == name);
        let shown = if is_secret && !value.is_null() {
            Value::String(MASK.to_string())
        } else {
            value.clone()
        };
        out.insert(name.clone(), shown);
    }
    out
}

/// Replaces every occurrence of each secret in serialized JSON, in its JSON-escaped form too
/// (a PEM key's newlines are `\n` there).
pub fn scrub_json(json: &str, secrets: &[String]) -> String {
    let mut out = json.to_string();
    for secret in secrets {
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        if !escaped.is_empty() {
            out = out.replace(escaped, "********");
        }
        if secret.as_str() != escaped {
            out = out.replace(secret.as_str(), "********");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Kind, opt, secret};
    use serde_json::json;

    const SPECS: &[OptionSpec] = &[opt("user", Kind::Str), secret("password", Kind::Str)];

    #[test]
    fn each_line_of_a_multi_line_secret_is_scrubbed_too() {
        const IDS: &[OptionSpec] = &[secret("identity_content", Kind::Str)];
        let content = "# public key: age1public\nAGE-SECRET-KEY-1QQQQQQQQQQ\n";
        let params = json!({ "identity_content": content });
        let secrets = secret_values(params.as_object().unwrap(), &[IDS]);
        let scrubbed = scrub_json("{\"msg\": \"AGE-SECRET-KEY-1QQQQQQQQQQ\"}", &secrets);
        assert!(!scrubbed.contains("AGE-SECRET"), "{scrubbed}");
        assert!(!secrets.iter().any(|s| s == "# public key: age1public"));
    }

    #[test]
    fn secrets_are_found_masked_and_scrubbed() {
        let params =
            json!({"user": "root:s3cr3t-in-user", "password": "hunter2\nx", "_ansible_diff": true});
        let params = params.as_object().unwrap();
        let secrets = secret_values(params, &[SPECS]);
        assert_eq!(
            secrets,
            vec!["s3cr3t-in-user".to_string(), "hunter2\nx".to_string()]
        );
        let masked = masked_params(params, &[SPECS]);
        assert_eq!(masked["password"], json!(MASK));
        assert!(!masked.contains_key("_ansible_diff"));
        let doc =
            json!({"msg": "bad password hunter2\nx for root:s3cr3t-in-user", "invocation": masked})
                .to_string();
        let scrubbed = scrub_json(&doc, &secrets);
        assert!(!scrubbed.contains("hunter2"), "{scrubbed}");
        assert!(!scrubbed.contains("s3cr3t"), "{scrubbed}");
        assert!(serde_json::from_str::<Value>(&scrubbed).is_ok());
    }
}
