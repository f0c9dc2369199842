//! Module options, declared once.
//!
//! A module's options are a Rust type: the workflow's request, with the shared groups it
//! flattens (connection, store, identity) and what only the module takes, deriving serde's
//! `Deserialize` and schemars' `JsonSchema`. [`ModuleSpec::of`] reads that type's schema in
//! Ansible's terms (type, list elements, default, choices, required, aliases, `no_log`), so
//! the field's Rust type, serde default and doc comment are the option's only declaration:
//! - the argument specs the action plugin validates every task with, with ansible-core's own
//!   validator (aliases, the usual spellings of booleans and integers, comma-separated lists,
//!   choices, required), are written from it (`plugins/plugin_utils/argument_specs.json`,
//!   kept equal by `tests/argument_specs.rs`);
//! - the sidecar docs are checked against it (`tests/docs_match_spec.rs`).
//!
//! What a JSON schema cannot say is a schemars extension on the field:
//! `#[schemars(extend("x-aliases" = ["dest"]))]`, `"x-deprecated-aliases"` (also accepted,
//! with a deprecation warning), `"x-no-log" = true` (a secret: masked and scrubbed),
//! `"x-undocumented" = true` (only tests set it). [`parse`] builds the typed options from
//! the validated values and words what serde still refuses (an integer out of its range) in
//! Ansible's terms.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// One option of a module, as its options type declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionSpec {
    /// The option's name.
    pub name: String,
    /// Ansible's `type`: `str`, `bool`, `int`, `float`, `list`, `dict` or `raw`.
    pub kind: &'static str,
    /// Ansible's `elements` of a list.
    pub elements: Option<&'static str>,
    /// The default the library applies when the option is unset.
    pub default: Option<Value>,
    /// The values it may take (each element's, for a list).
    pub choices: Vec<Value>,
    /// A task must give it.
    pub required: bool,
    /// Other names it answers to.
    pub aliases: Vec<String>,
    /// Old names it still answers to, with a deprecation warning.
    pub deprecated_aliases: Vec<String>,
    /// A secret: `no_log`, masked in `invocation` and scrubbed from every result.
    pub secret: bool,
    /// In the module's docs (false: only tests set it).
    pub documented: bool,
}

/// Every option of a module.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleSpec {
    /// The options, by name.
    pub options: Vec<OptionSpec>,
}

/// The schema of `T` with every sub-schema inlined, as JSON.
fn schema_value<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The alternatives of a schema that are not `null` (`Option<T>` adds one), nested ones
/// (an `Option` of an enum) flattened.
fn not_null(schema: &Value) -> Vec<Value> {
    let is_null = |s: &Value| {
        s.get("type") == Some(&Value::from("null")) || s.get("const") == Some(&Value::Null)
    };
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alternatives)) = schema.get(key) {
            return alternatives
                .iter()
                .filter(|s| !is_null(s))
                .flat_map(not_null)
                .collect();
        }
    }
    vec![schema.clone()]
}

/// Ansible's type, list elements and choices of one schema.
fn shape(schema: &Value) -> Result<(&'static str, Option<&'static str>, Vec<Value>), String> {
    let alternatives = not_null(schema);
    let constant = |s: &Value| -> Option<Vec<Value>> {
        if let Some(c) = s.get("const") {
            return Some(vec![c.clone()]);
        }
        s.get("enum")
            .and_then(Value::as_array)
            .map(|values| values.iter().filter(|v| !v.is_null()).cloned().collect())
    };
    if alternatives.len() > 1 {
        let mut choices = Vec::new();
        for alternative in &alternatives {
            choices.extend(constant(alternative).ok_or("alternatives that are not values")?);
        }
        return Ok(("str", None, choices));
    }
    let Some(schema) = alternatives.first() else {
        return Ok(("raw", None, Vec::new()));
    };
    if let Some(choices) = constant(schema) {
        return Ok(("str", None, choices));
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => Vec::new(),
    };
    Ok(match types.as_slice() {
        ["string"] => ("str", None, Vec::new()),
        ["boolean"] => ("bool", None, Vec::new()),
        ["integer"] => ("int", None, Vec::new()),
        ["number"] => ("float", None, Vec::new()),
        ["object"] => ("dict", None, Vec::new()),
        ["array"] => {
            let items = schema.get("items").cloned().unwrap_or(Value::Bool(true));
            let (element, _, choices) = match items {
                Value::Bool(_) => ("raw", None, Vec::new()),
                items => shape(&items)?,
            };
            let element = if element == "raw" { "dict" } else { element };
            ("list", Some(element), choices)
        }
        [] => ("raw", None, Vec::new()),
        other => return Err(format!("no Ansible type for {other:?}")),
    })
}

/// The properties of an object schema and those it requires, with what `allOf` adds and
/// what every alternative of a `oneOf`/`anyOf` (a tagged enum: one request per `action`)
/// declares; a property named by several alternatives keeps each of its schemas.
#[derive(Default)]
struct Properties {
    schemas: BTreeMap<String, Vec<Value>>,
    required: BTreeSet<String>,
}

impl Properties {
    fn of(schema: &Value) -> Properties {
        let mut out = Properties::default();
        for (name, property) in schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            out.schemas
                .entry(name.clone())
                .or_default()
                .push(property.clone());
        }
        out.required.extend(strings(schema.get("required")));
        for part in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.merge(Properties::of(part), true);
        }
        for key in ["oneOf", "anyOf"] {
            let Some(alternatives) = schema.get(key).and_then(Value::as_array) else {
                continue;
            };
            let alternatives: Vec<Properties> = alternatives
                .iter()
                .filter(|a| a.get("properties").is_some())
                .map(Properties::of)
                .collect();
            let in_every = |name: &String| alternatives.iter().all(|a| a.required.contains(name));
            let required: BTreeSet<String> = alternatives
                .first()
                .map(|a| a.required.iter().filter(|n| in_every(n)).cloned().collect())
                .unwrap_or_default();
            for alternative in alternatives {
                out.merge(alternative, false);
            }
            out.required.extend(required);
        }
        out
    }

    fn merge(&mut self, other: Properties, required_too: bool) {
        for (name, schemas) in other.schemas {
            self.schemas.entry(name).or_default().extend(schemas);
        }
        if required_too {
            self.required.extend(other.required);
        }
    }
}

impl ModuleSpec {
    /// The options `T` declares. An error names a field whose schema has no Ansible type (a
    /// programming error the tests of every module catch).
    pub fn of<T: JsonSchema>() -> Result<ModuleSpec, String> {
        let properties = Properties::of(&schema_value::<T>());
        let mut options = Vec::new();
        for (name, schemas) in &properties.schemas {
            let mut shapes = Vec::new();
            for schema in schemas {
                shapes.push(shape(schema).map_err(|e| format!("option {name}: {e}"))?);
            }
            let (kind, elements, mut choices) = shapes[0].clone();
            if shapes.len() > 1 {
                // One value per alternative (the tag of a tagged enum): every one is a choice,
                // once, in the alternatives' order.
                choices = Vec::new();
                for choice in shapes.iter().flat_map(|(_, _, c)| c) {
                    if !choices.contains(choice) {
                        choices.push(choice.clone());
                    }
                }
            }
            let find = |key: &str| schemas.iter().find_map(|s| s.get(key));
            let flag = |key: &str| find(key).and_then(Value::as_bool).unwrap_or(false);
            options.push(OptionSpec {
                name: name.clone(),
                kind,
                elements,
                // An empty string, list or mapping is no default: the option is unset.
                default: find("default")
                    .filter(|d| ![json!(null), json!([]), json!({}), json!("")].contains(d))
                    .cloned(),
                choices,
                required: properties.required.contains(name),
                aliases: strings(find("x-aliases")),
                deprecated_aliases: strings(find("x-deprecated-aliases")),
                secret: flag("x-no-log"),
                documented: !flag("x-undocumented"),
            });
        }
        Ok(ModuleSpec { options })
    }

    /// These options and `other`'s (a shared group); an option in both is kept once.
    pub fn with(mut self, other: ModuleSpec) -> ModuleSpec {
        for option in other.options {
            if !self.options.iter().any(|o| o.name == option.name) {
                self.options.push(option);
            }
        }
        self.options.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// The option called `name` (not an alias).
    pub fn get(&self, name: &str) -> Option<&OptionSpec> {
        self.options.iter().find(|o| o.name == name)
    }

    /// Whether `name` is an option or one of an option's names.
    pub fn takes(&self, name: &str) -> bool {
        self.options.iter().any(|o| {
            o.name == name
                || o.aliases.iter().any(|a| a == name)
                || o.deprecated_aliases.iter().any(|a| a == name)
        })
    }

    /// Ansible's argument spec of these options, as the action plugin validates a task with.
    ///
    /// It has no defaults: the shim applies them (serde's, from the options type), so that
    /// an unset connection option still falls back to the target's `ETCDCTL_*` variable and
    /// unset options stay out of `invocation`. The docs show them ([`OptionSpec::default`]).
    pub fn argument_spec(&self) -> Value {
        let mut spec = Map::new();
        for option in &self.options {
            let mut entry = Map::new();
            entry.insert("type".into(), Value::from(option.kind));
            if let Some(elements) = option.elements {
                entry.insert("elements".into(), Value::from(elements));
            }
            if !option.choices.is_empty() {
                entry.insert("choices".into(), Value::from(option.choices.clone()));
            }
            if option.required {
                entry.insert("required".into(), Value::Bool(true));
            }
            let aliases: Vec<&String> = option
                .aliases
                .iter()
                .chain(&option.deprecated_aliases)
                .collect();
            if !aliases.is_empty() {
                entry.insert("aliases".into(), serde_json::json!(aliases));
            }
            if !option.deprecated_aliases.is_empty() {
                let deprecated: Vec<Value> = option
                    .deprecated_aliases
                    .iter()
                    .map(|name| {
                        serde_json::json!({
                            "name": name, "version": "1.0.0", "collection_name": "etcd.core",
                        })
                    })
                    .collect();
                entry.insert("deprecated_aliases".into(), Value::from(deprecated));
            }
            if option.secret {
                entry.insert("no_log".into(), Value::Bool(true));
            }
            spec.insert(option.name.clone(), Value::Object(entry));
        }
        Value::Object(spec)
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

    #[derive(serde::Deserialize, JsonSchema, Debug, Clone, Copy, Default, serde::Serialize)]
    #[allow(dead_code)]
    #[serde(rename_all = "snake_case")]
    enum Check {
        /// Fails on an unhealthy member.
        #[default]
        Unhealthy,
        /// Fails on an alarm.
        Alarm,
    }

    fn token() -> String {
        "etcd-cluster".into()
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Group {
        #[schemars(extend("x-no-log" = true))]
        password: Option<String>,
        #[serde(default)]
        #[schemars(extend("x-undocumented" = true))]
        platform_root: Option<std::path::PathBuf>,
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Options {
        name: String,
        #[serde(default)]
        learner: bool,
        limit: Option<u32>,
        #[serde(default)]
        peer_urls: Vec<String>,
        labels: Option<std::collections::BTreeMap<String, String>>,
        #[serde(default = "token")]
        token: String,
        #[schemars(extend("x-aliases" = ["dest"]))]
        store: Option<String>,
        #[serde(default)]
        #[schemars(extend("x-deprecated-aliases" = ["keys"]))]
        list_keys: bool,
        #[serde(default)]
        fail_on: Vec<Check>,
        state: Option<Check>,
        #[serde(default)]
        check: Check,
        members: Option<Vec<serde_json::Value>>,
        #[serde(flatten)]
        group: Group,
    }

    #[test]
    fn the_options_type_is_read_in_ansibles_terms() {
        let spec = ModuleSpec::of::<Options>().unwrap().argument_spec();
        assert_eq!(spec["name"], json!({"type": "str", "required": true}));
        assert_eq!(spec["learner"], json!({"type": "bool"}));
        assert_eq!(spec["limit"], json!({"type": "int"}));
        assert_eq!(
            spec["peer_urls"],
            json!({"type": "list", "elements": "str"})
        );
        assert_eq!(spec["labels"], json!({"type": "dict"}));
        assert_eq!(spec["token"], json!({"type": "str"}));
        assert_eq!(spec["store"], json!({"type": "str", "aliases": ["dest"]}));
        assert_eq!(
            spec["list_keys"],
            json!({"type": "bool", "aliases": ["keys"],
                "deprecated_aliases": [{"name": "keys", "version": "1.0.0", "collection_name": "etcd.core"}]})
        );
        assert_eq!(
            spec["fail_on"],
            json!({"type": "list", "elements": "str", "choices": ["unhealthy", "alarm"]})
        );
        assert_eq!(
            spec["state"],
            json!({"type": "str", "choices": ["unhealthy", "alarm"]})
        );
        assert_eq!(
            spec["check"],
            json!({"type": "str", "choices": ["unhealthy", "alarm"]})
        );
        assert_eq!(spec["members"], json!({"type": "list", "elements": "dict"}));
        assert_eq!(spec["password"], json!({"type": "str", "no_log": true}));
        let parsed = ModuleSpec::of::<Options>().unwrap();
        let default = |name: &str| parsed.get(name).unwrap().default.clone();
        assert_eq!(default("learner"), Some(json!(false)));
        assert_eq!(default("token"), Some(json!("etcd-cluster")));
        assert_eq!(default("check"), Some(json!("unhealthy")));
        assert_eq!(default("peer_urls"), None, "an empty list is no default");
        assert_eq!(default("limit"), None);
        assert!(!parsed.get("platform_root").unwrap().documented);
        assert!(parsed.takes("dest") && parsed.takes("keys") && !parsed.takes("nmae"));
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
