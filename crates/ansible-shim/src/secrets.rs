//! Secret hygiene: Ansible masks `no_log` values only for Python modules, so the shim scrubs
//! every secret option's value from everything it prints.

use serde_json::{Map, Value};

use crate::spec::ModuleSpec;

/// What replaces a secret in `invocation`, as Ansible itself writes it.
pub const MASK: &str = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER";

/// The secret values among the raw parameters (`user: name:password` included), longest
/// first so that a secret containing another is replaced whole.
pub fn secret_values(params: &Map<String, Value>, spec: &ModuleSpec) -> Vec<String> {
    let mut values = Vec::new();
    for option in spec.options.iter().filter(|o| o.secret) {
        if let Some(value) = params.get(&option.name) {
            collect_strings(value, &mut values);
        }
    }
    if let Some(Value::String(user)) = params.get("user")
        && let Some((_, password)) = user.split_once(':')
    {
        values.push(password.to_string());
    }
    // Passwords written into a URL's user-info (`endpoints: http://root:PASS@host:2379`, a
    // store URL): etcd-core refuses them, and they must not come back in the refusal or in
    // `invocation`.
    for (name, value) in params {
        let mut strings = Vec::new();
        collect_strings(value, &mut strings);
        for text in &strings {
            values.extend(userinfo_passwords(text, name == "endpoints"));
        }
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

/// The password (or lone token) of every `scheme://user:pass@host` in `text`; with
/// `endpoint`, also of a scheme-less `user:pass@host:port`.
fn userinfo_passwords(text: &str, endpoint: bool) -> Vec<String> {
    let mut out = Vec::new();
    for item in text.split([',', ' ', '\t', '\n']) {
        let (rest, has_scheme) = match item.split_once("://") {
            Some((_, rest)) => (rest, true),
            None if endpoint => (item, false),
            None => continue,
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let Some((userinfo, _host)) = authority.rsplit_once('@') else {
            continue;
        };
        let secret = match userinfo.split_once(':') {
            Some((_, password)) => password,
            None if has_scheme => userinfo,
            None => continue,
        };
        if !secret.is_empty() {
            out.push(secret.to_string());
        }
    }
    out
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
pub fn masked_params(params: &Map<String, Value>, spec: &ModuleSpec) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, value) in params {
        if name.starts_with("_ansible_") || name == crate::MODULE_KEY {
            continue;
        }
        let is_secret = spec.get(name).is_some_and(|o| o.secret);
        let shown = match value {
            _ if is_secret && !value.is_null() => Value::String(MASK.to_string()),
            Value::String(text) if text.contains("://") => Value::String(url_shown(text)),
            other => other.clone(),
        };
        out.insert(name.clone(), shown);
    }
    out
}

/// A URL option's value as `invocation` shows it: a password in its user-info and its query
/// string (where SAS tokens live) masked. A store URL holding either is refused anyway, but the
/// task's arguments are printed before that.
fn url_shown(text: &str) -> String {
    let text = etcdops::client::redact_urls(text);
    match text.split_once('?') {
        Some((before, _)) => format!("{before}?<redacted>"),
        None => text,
    }
}

/// Replaces every occurrence of each secret in the strings of `value` (map keys too), as
/// Ansible's `no_log` does: numbers, booleans and the document's shape stay as they are, so a
/// secret such as `true` or `1` never turns the result into something that is not JSON.
pub fn scrub_value(value: Value, secrets: &[String]) -> Value {
    let scrub = |text: String| {
        secrets.iter().fold(text, |text, secret| {
            if text.contains(secret.as_str()) {
                text.replace(secret.as_str(), "********")
            } else {
                text
            }
        })
    };
    match value {
        Value::String(text) => Value::String(scrub(text)),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| scrub_value(item, secrets))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, item)| (scrub(key), scrub_value(item, secrets)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::OptionSpec;
    use serde_json::json;

    fn option(name: &str, secret: bool) -> OptionSpec {
        OptionSpec {
            name: name.into(),
            kind: "str",
            elements: None,
            default: None,
            choices: Vec::new(),
            required: false,
            aliases: Vec::new(),
            deprecated_aliases: Vec::new(),
            secret,
            documented: true,
        }
    }

    fn specs() -> ModuleSpec {
        ModuleSpec {
            options: vec![option("user", false), option("password", true)],
        }
    }

    #[test]
    fn each_line_of_a_multi_line_secret_is_scrubbed_too() {
        let ids = ModuleSpec {
            options: vec![option("identity_content", true)],
        };
        let content = "# public key: age1public\nAGE-SECRET-KEY-1QQQQQQQQQQ\n";
        let params = json!({ "identity_content": content });
        let secrets = secret_values(params.as_object().unwrap(), &ids);
        let scrubbed = scrub_value(json!({"msg": "AGE-SECRET-KEY-1QQQQQQQQQQ"}), &secrets);
        assert!(!scrubbed.to_string().contains("AGE-SECRET"), "{scrubbed}");
        assert!(!secrets.iter().any(|s| s == "# public key: age1public"));
    }

    #[test]
    fn credentials_and_query_strings_of_store_urls_are_masked_in_invocation() {
        let params = json!({
            "backup_to": "s3://AKIAX:Sup3rSecret@bucket/prefix",
            "store": "az://c/p?sv=2020&sig=S1gS3cret",
            "name": "etcd-1",
        });
        let masked = masked_params(params.as_object().unwrap(), &specs());
        let shown = Value::Object(masked).to_string();
        assert!(
            !shown.contains("Sup3rSecret") && !shown.contains("S1gS3cret"),
            "{shown}"
        );
        assert!(shown.contains("s3://AKIAX:***@bucket/prefix"), "{shown}");
        assert!(shown.contains("az://c/p?<redacted>"), "{shown}");
        assert!(shown.contains("etcd-1"), "{shown}");
    }

    #[test]
    fn passwords_in_endpoint_urls_are_secrets() {
        let params = json!({
            "endpoints": ["http://root:PW-IN-URL@h:2379", "u:PW2@h:1", "https://h:2"],
            "msg_to": "ops@example.com",
        });
        let secrets = secret_values(params.as_object().unwrap(), &specs());
        assert!(secrets.contains(&"PW-IN-URL".to_string()), "{secrets:?}");
        assert!(secrets.contains(&"PW2".to_string()), "{secrets:?}");
        assert_eq!(secrets.len(), 2, "{secrets:?}");
    }

    #[test]
    fn secrets_are_found_masked_and_scrubbed() {
        let params =
            json!({"user": "root:s3cr3t-in-user", "password": "hunter2\nx", "_ansible_diff": true});
        let params = params.as_object().unwrap();
        let secrets = secret_values(params, &specs());
        assert_eq!(
            secrets,
            vec!["s3cr3t-in-user".to_string(), "hunter2\nx".to_string()]
        );
        let masked = masked_params(params, &specs());
        assert_eq!(masked["password"], json!(MASK));
        assert!(!masked.contains_key("_ansible_diff"));
        let doc =
            json!({"msg": "bad password hunter2\nx for root:s3cr3t-in-user", "invocation": masked});
        let scrubbed = scrub_value(doc, &secrets).to_string();
        assert!(!scrubbed.contains("hunter2"), "{scrubbed}");
        assert!(!scrubbed.contains("s3cr3t"), "{scrubbed}");
    }

    #[test]
    fn a_secret_that_is_a_json_word_or_digit_leaves_the_result_json() {
        let params = json!({"password": "true", "user": "root:1"});
        let secrets = secret_values(params.as_object().unwrap(), &specs());
        let doc = json!({"changed": true, "failed": false, "revision": 11, "true": "a true 1",
            "msg": "revision 11 is true"});
        let scrubbed = scrub_value(doc, &secrets);
        assert_eq!(scrubbed["changed"], json!(true));
        assert_eq!(scrubbed["revision"], json!(11));
        assert_eq!(scrubbed["********"], json!("a ******** ********"));
        assert_eq!(
            scrubbed["msg"],
            json!("revision **************** is ********")
        );
    }
}
