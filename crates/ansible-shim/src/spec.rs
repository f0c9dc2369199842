//! Module options: what each module accepts, and the coercions Ansible users expect.
//!
//! Ansible checks a Python module's options against its argument spec before the module runs;
//! a binary module gets the raw values. So each module declares its options here, as an
//! argument spec would (type, aliases, choices, default, required), and [`normalize`] does
//! what Ansible's argument spec does: refuses unknown options (naming the supported ones),
//! resolves aliases, drops nulls (`omit`, unset variables), coerces the usual YAML and Jinja
//! spellings (`yes`/`"true"` for booleans, `"5"` for integers, `"a,b"` for lists), checks
//! choices and required options. serde then builds the module's typed request from the
//! result; [`parse`] words what serde still refuses in Ansible's terms.
//!
//! The declarations are also what the sidecar docs are checked against
//! (`tests/docs_match_spec.rs`), so docs and code cannot drift apart.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The type of one option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string (numbers and booleans are turned into their text).
    Str,
    /// A path on the host the module runs on (a string).
    Path,
    /// A boolean: true/false, yes/no, on/off, 1/0, as Ansible accepts them.
    Bool,
    /// An integer, also given as a string.
    Int,
    /// A list of strings, also given as a comma-separated string.
    List,
    /// A mapping of strings to strings.
    Dict,
    /// A list of mappings, each passed on as given (a registered result per host).
    DictList,
}

impl Kind {
    /// The option's `type` in Ansible's documentation.
    pub fn ansible_type(self) -> &'static str {
        match self {
            Kind::Str => "str",
            Kind::Path => "path",
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::List => "list",
            Kind::Dict => "dict",
            Kind::DictList => "list",
        }
    }

    /// The `elements` of a list option in Ansible's documentation.
    pub fn elements(self) -> Option<&'static str> {
        match self {
            Kind::List => Some("str"),
            Kind::DictList => Some("dict"),
            _ => None,
        }
    }
}

/// The default of an option, as documented (the library applies it when the option is unset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultValue {
    /// A boolean default.
    Bool(bool),
    /// An integer default.
    Int(i64),
    /// A string default.
    Str(&'static str),
    /// A list default.
    List(&'static [&'static str]),
}

impl DefaultValue {
    /// The default as JSON.
    pub fn to_json(self) -> Value {
        match self {
            DefaultValue::Bool(b) => Value::Bool(b),
            DefaultValue::Int(i) => Value::from(i),
            DefaultValue::Str(s) => Value::from(s),
            DefaultValue::List(items) => Value::from(items.to_vec()),
        }
    }
}

/// One option of a module, as Ansible's argument spec would declare it.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    /// Its name in the task.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Whether its value is a secret: scrubbed from every output.
    pub secret: bool,
    /// Other names it answers to (documented `aliases`).
    pub aliases: &'static [&'static str],
    /// Old names it still answers to, with a deprecation warning (documented as aliases).
    pub deprecated_aliases: &'static [&'static str],
    /// The values it accepts (each element's, for a list); empty for any value.
    pub choices: &'static [&'static str],
    /// Its documented default.
    pub default: Option<DefaultValue>,
    /// Whether a task must give it.
    pub required: bool,
    /// Whether it is documented: false for the options only tests set.
    pub documented: bool,
    /// The field of the library's request it fills, when that is not its name (an option
    /// renamed for consistency across modules keeps the library's field).
    pub field: Option<&'static str>,
}

/// An option that is not a secret.
pub const fn opt(name: &'static str, kind: Kind) -> OptionSpec {
    OptionSpec {
        name,
        kind,
        secret: false,
        aliases: &[],
        deprecated_aliases: &[],
        choices: &[],
        default: None,
        required: false,
        documented: true,
        field: None,
    }
}

/// An option whose value is a secret.
pub const fn secret(name: &'static str, kind: Kind) -> OptionSpec {
    OptionSpec {
        secret: true,
        ..opt(name, kind)
    }
}

impl OptionSpec {
    /// With other names it answers to.
    pub const fn aliases(self, aliases: &'static [&'static str]) -> Self {
        OptionSpec { aliases, ..self }
    }

    /// With old names it still answers to, each with a deprecation warning.
    pub const fn deprecated_aliases(self, deprecated_aliases: &'static [&'static str]) -> Self {
        OptionSpec {
            deprecated_aliases,
            ..self
        }
    }

    /// With the only values it accepts.
    pub const fn choices(self, choices: &'static [&'static str]) -> Self {
        OptionSpec { choices, ..self }
    }

    /// With its documented default.
    pub const fn default(self, default: DefaultValue) -> Self {
        OptionSpec {
            default: Some(default),
            ..self
        }
    }

    /// With a boolean default.
    pub const fn default_bool(self, value: bool) -> Self {
        self.default(DefaultValue::Bool(value))
    }

    /// With an integer default.
    pub const fn default_int(self, value: i64) -> Self {
        self.default(DefaultValue::Int(value))
    }

    /// With a string default.
    pub const fn default_str(self, value: &'static str) -> Self {
        self.default(DefaultValue::Str(value))
    }

    /// With a list default.
    pub const fn default_list(self, value: &'static [&'static str]) -> Self {
        self.default(DefaultValue::List(value))
    }

    /// Required: a task must give it.
    pub const fn required(self) -> Self {
        OptionSpec {
            required: true,
            ..self
        }
    }

    /// Undocumented: an option only tests set (users must not).
    pub const fn undocumented(self) -> Self {
        OptionSpec {
            documented: false,
            ..self
        }
    }

    /// Fills the library's request field `field` (its own name differs).
    pub const fn field(self, field: &'static str) -> Self {
        OptionSpec {
            field: Some(field),
            ..self
        }
    }

    /// The key of its value after [`normalize`]: the library's field name.
    pub fn key(&self) -> &'static str {
        self.field.unwrap_or(self.name)
    }

    /// Whether `name` names this option (its name or one of its aliases).
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name) || self.deprecated_aliases.contains(&name)
    }

    /// How the option is listed among the supported ones: `store (dest)`.
    fn listed(&self) -> String {
        let aliases: Vec<&str> = self
            .aliases
            .iter()
            .chain(self.deprecated_aliases)
            .copied()
            .collect();
        if aliases.is_empty() {
            self.name.to_string()
        } else {
            format!("{} ({})", self.name, aliases.join(", "))
        }
    }
}

/// A value as Ansible users wrote it, for messages: `'x'` for a string, JSON otherwise.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// The deprecated aliases used in `params`, as warnings: `(alias, option)` pairs.
pub fn deprecated_aliases_used(
    params: &Map<String, Value>,
    specs: &[&[OptionSpec]],
) -> Vec<(String, &'static str)> {
    let mut used = Vec::new();
    for name in params.keys() {
        for spec in specs.iter().flat_map(|s| s.iter()) {
            if spec.deprecated_aliases.contains(&name.as_str()) {
                used.push((name.clone(), spec.name));
            }
        }
    }
    used
}

/// Checks and coerces `params` (no `_ansible_*` keys) against `specs`: the result is keyed
/// by each option's [`OptionSpec::key`] (aliases resolved).
pub fn normalize(
    module: &str,
    params: &Map<String, Value>,
    specs: &[&[OptionSpec]],
) -> Result<Map<String, Value>, String> {
    let all = || specs.iter().flat_map(|s| s.iter());
    let mut out = Map::new();
    let mut given_as: Map<String, Value> = Map::new();
    for (name, value) in params {
        let Some(spec) = all().find(|s| s.answers_to(name)) else {
            let mut known: Vec<String> = all()
                .filter(|s| s.documented)
                .map(OptionSpec::listed)
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
                format!("{name}: expected {expected}")
            } else {
                format!("{name}: expected {expected}, got {}", shown(value))
            }
        })?;
        check_choices(name, spec, &coerced)?;
        if let Some(Value::String(other)) = given_as.get(spec.name)
            && out.get(spec.key()) != Some(&coerced)
        {
            return Err(format!(
                "{name} and {other} name the same option ({}); give only one",
                spec.name
            ));
        }
        given_as.insert(spec.name.to_string(), Value::from(name.as_str()));
        out.insert(spec.key().to_string(), coerced);
    }
    for spec in all().filter(|s| s.required) {
        if !out.contains_key(spec.key()) {
            return Err(format!("{module}: missing required option '{}'", spec.name));
        }
    }
    Ok(out)
}

/// Refuses a value (or a list element) that is not one of the option's choices.
fn check_choices(name: &str, spec: &OptionSpec, value: &Value) -> Result<(), String> {
    if spec.choices.is_empty() {
        return Ok(());
    }
    let values = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    for value in values {
        if !value.as_str().is_some_and(|v| spec.choices.contains(&v)) {
            return Err(format!(
                "{name}: {} is not one of {}",
                shown(value),
                spec.choices.join(", ")
            ));
        }
    }
    Ok(())
}

fn coerce(kind: Kind, value: &Value) -> Result<Value, &'static str> {
    match kind {
        Kind::Str | Kind::Path => match value {
            Value::String(_) => Ok(value.clone()),
            Value::Number(n) => Ok(Value::String(n.to_string())),
            Value::Bool(b) => Ok(Value::String(b.to_string())),
            _ => Err(if kind == Kind::Path {
                "a path"
            } else {
                "a string"
            }),
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
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(value.clone()),
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
        Kind::DictList => match value {
            Value::Array(items) if items.iter().all(Value::is_object) => Ok(value.clone()),
            _ => Err("a list of mappings"),
        },
    }
}

/// Builds a module's typed options from normalized parameters. serde's messages are turned
/// into Ansible's words: the option is named, with what it expected, never a Rust type.
pub fn parse<T: DeserializeOwned>(
    module: &str,
    normalized: Map<String, Value>,
) -> Result<T, String> {
    let value = Value::Object(normalized);
    serde_json::from_value(value.clone()).map_err(|e| {
        let text = e.to_string();
        let Value::Object(normalized) = &value else {
            return format!("{module}: {text}");
        };
        ansible_words(module, &text, normalized)
    })
}

/// A serde message in Ansible's words, naming the option whose value it refuses.
fn ansible_words(module: &str, text: &str, normalized: &Map<String, Value>) -> String {
    if let Some(field) = between(text, "missing field `", "`") {
        return format!("{module}: missing required option '{field}'");
    }
    if let Some(variant) = between(text, "unknown variant `", "`") {
        let expected: Vec<&str> = text
            .split_once("expected ")
            .map(|(_, rest)| rest.split('`').skip(1).step_by(2).collect())
            .unwrap_or_default();
        let choices = if expected.is_empty() {
            String::new()
        } else {
            format!(" is not one of {}", expected.join(", "))
        };
        let wanted = Value::from(variant);
        return match holder(normalized, &wanted) {
            Some(name) => format!("{name}: '{variant}'{choices}"),
            None => format!("{module}: '{variant}'{choices}"),
        };
    }
    if let Some(number) = between(text, "integer `", "`") {
        let range = text
            .rsplit_once("expected ")
            .map(|(_, ty)| integer_range(ty.trim()))
            .unwrap_or("an integer");
        let wanted: Option<Value> = serde_json::from_str(number).ok();
        return match wanted.as_ref().and_then(|w| holder(normalized, w)) {
            Some(name) => format!("{name}: expected {range}, got {number}"),
            None => format!("{module}: expected {range}, got {number}"),
        };
    }
    format!("{module}: {}", text.replace('`', "'"))
}

/// The text between `start` and the next `end`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = &text[text.find(start)? + start.len()..];
    rest.split_once(end).map(|(inside, _)| inside)
}

/// The option holding `wanted` (or a list holding it), when exactly one does.
fn holder<'a>(normalized: &'a Map<String, Value>, wanted: &Value) -> Option<&'a str> {
    let mut names = normalized.iter().filter(|(_, v)| match v {
        Value::Array(items) => items.contains(wanted),
        other => *other == wanted,
    });
    match (names.next(), names.next()) {
        (Some((name, _)), None) => Some(name),
        _ => None,
    }
}

/// A Rust integer type in words.
fn integer_range(ty: &str) -> &'static str {
    match ty {
        "u8" => "an integer from 0 to 255",
        "u16" => "an integer from 0 to 65535",
        "u32" => "an integer from 0 to 4294967295",
        "u64" | "usize" => "a non-negative integer",
        "i32" => "an integer from -2147483648 to 2147483647",
        _ => "an integer",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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
        opt("store", Kind::Str).aliases(&["dest"]),
        opt("list_keys", Kind::Bool)
            .deprecated_aliases(&["keys"])
            .field("keys"),
        opt("fail_on", Kind::List).choices(&["unhealthy", "alarm", "inconsistent"]),
        opt("state", Kind::Str).choices(&["present", "absent"]),
        opt("platform_root", Kind::Path).undocumented(),
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
    fn unknown_options_name_the_supported_ones_with_their_aliases() {
        let err = norm(json!({"nmae": "x"})).unwrap_err();
        assert!(err.contains("unsupported option 'nmae'"), "{err}");
        assert!(
            err.contains(
                "fail_on, labels, learner, limit, list_keys (keys), name, password, peer_urls, state, store (dest)"
            ),
            "{err}"
        );
        assert!(!err.contains("platform_root"), "{err}");
    }

    #[test]
    fn aliases_resolve_to_the_option_and_may_not_disagree_with_it() {
        let out = norm(json!({"dest": "s3://b/p", "keys": "yes"})).unwrap();
        assert_eq!(out["store"], json!("s3://b/p"));
        assert_eq!(out["keys"], json!(true), "the library's field");
        assert!(norm(json!({"dest": "s3://b/p", "store": "s3://b/p"})).is_ok());
        let err = norm(json!({"dest": "s3://b/p", "store": "s3://other"})).unwrap_err();
        assert!(err.contains("name the same option (store)"), "{err}");
        let used = deprecated_aliases_used(json!({"keys": true}).as_object().unwrap(), &[SPECS]);
        assert_eq!(used, vec![("keys".to_string(), "list_keys")]);
    }

    #[test]
    fn nulls_are_dropped_and_bad_values_refused_in_ansible_words() {
        let out = norm(json!({"name": null})).unwrap();
        assert!(out.is_empty());
        let err = norm(json!({"learner": "maybe"})).unwrap_err();
        assert_eq!(
            err,
            "learner: expected a boolean (true/false, yes/no), got 'maybe'"
        );
        let err = norm(json!({"limit": "x"})).unwrap_err();
        assert_eq!(err, "limit: expected an integer, got 'x'");
        let err = norm(json!({"fail_on": ["alarm", "sick"]})).unwrap_err();
        assert_eq!(
            err,
            "fail_on: 'sick' is not one of unhealthy, alarm, inconsistent"
        );
        let err = norm(json!({"state": "gone"})).unwrap_err();
        assert_eq!(err, "state: 'gone' is not one of present, absent");
    }

    #[test]
    fn secret_values_are_not_echoed_in_errors() {
        let err = norm(json!({"password": ["hunter2"]})).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn required_options_are_named_when_missing() {
        let specs: &[OptionSpec] = &[opt("action", Kind::Str).required()];
        let err = normalize("etcd_test", &Map::new(), &[specs]).unwrap_err();
        assert_eq!(err, "etcd_test: missing required option 'action'");
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        New,
        Existing,
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Typed {
        name: String,
        days: Option<u32>,
        mode: Option<Mode>,
    }

    fn typed(v: Value) -> String {
        parse::<Typed>("etcd_test", v.as_object().unwrap().clone()).unwrap_err()
    }

    #[test]
    fn serde_refusals_name_the_option_never_a_rust_type() {
        assert_eq!(
            typed(json!({})),
            "etcd_test: missing required option 'name'"
        );
        assert_eq!(
            typed(json!({"name": "m", "mode": "old"})),
            "mode: 'old' is not one of new, existing"
        );
        assert_eq!(
            typed(json!({"name": "m", "days": -1})),
            "days: expected an integer from 0 to 4294967295, got -1"
        );
    }
}
