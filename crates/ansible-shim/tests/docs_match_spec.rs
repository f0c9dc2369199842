//! The sidecar docs of every module (`plugins/modules/<name>.yml` and the doc fragments they
//! extend) against the shim's real option declarations: the same options, and for each the
//! same aliases, type, list elements, default, choices and required flag. Options only tests
//! set (`platform_root`) must stay out of the docs. Also the conventions every module's docs
//! keep: `version_added`, `attributes` (check_mode, diff_mode, action_group), `requirements`,
//! `seealso`, and a `contains` for every returned mapping.

#![allow(clippy::unwrap_used)] // a test: a broken doc file should panic with its place

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ansible_shim::connection::ConnectionArgs;
use ansible_shim::modules::MODULES;
use ansible_shim::spec::OptionSpec;
use serde_yaml_ng::{Mapping, Value};

fn collection() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ansible_collections/etcd/core")
}

/// The YAML strings of a Python doc fragment: `NAME = r"""..."""`, by NAME.
fn fragments() -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let dir = collection().join("plugins/doc_fragments");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find(" = r\"\"\"") {
            let name = rest[..at]
                .rsplit(char::is_whitespace)
                .next()
                .unwrap()
                .to_string();
            let body = &rest[at + 7..];
            let end = body.find("\"\"\"").unwrap();
            let yaml: Value = serde_yaml_ng::from_str(&body[..end]).unwrap();
            let key = if name == "DOCUMENTATION" {
                format!("etcd.core.{stem}")
            } else {
                format!("etcd.core.{stem}.{}", name.to_lowercase())
            };
            out.insert(key, yaml);
            rest = &body[end + 3..];
        }
    }
    out
}

fn docs(module: &str) -> Value {
    let path = collection().join(format!("plugins/modules/{module}.yml"));
    serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The documented options of a module: its own and its fragments'.
fn documented_options(doc: &Value, fragments: &BTreeMap<String, Value>) -> Mapping {
    let mut options = doc["options"].as_mapping().cloned().unwrap_or_default();
    for fragment in doc["extends_documentation_fragment"]
        .as_sequence()
        .into_iter()
        .flatten()
    {
        let name = fragment.as_str().unwrap();
        if name.starts_with("ansible.builtin.") {
            continue;
        }
        let fragment = fragments
            .get(&name.to_lowercase())
            .unwrap_or_else(|| panic!("no doc fragment {name}"));
        for (k, v) in fragment["options"].as_mapping().into_iter().flatten() {
            options.insert(k.clone(), v.clone());
        }
    }
    options
}

/// What the docs should say of one option, as YAML. A `str` the docs call `path` is a path
/// (the Rust type `PathBuf` reads as a string in the schema).
fn expected(spec: &OptionSpec, documented_type: &Value) -> BTreeMap<&'static str, Value> {
    let mut out = BTreeMap::new();
    let kind = if spec.kind == "str" && documented_type.as_str() == Some("path") {
        "path"
    } else {
        spec.kind
    };
    out.insert("type", Value::from(kind));
    if let Some(elements) = spec.elements {
        out.insert("elements", Value::from(elements));
    }
    if let Some(default) = &spec.default {
        out.insert("default", serde_yaml_ng::to_value(default).unwrap());
    }
    if !spec.choices.is_empty() {
        out.insert("choices", serde_yaml_ng::to_value(&spec.choices).unwrap());
    }
    out.insert("required", Value::from(spec.required));
    let mut aliases: Vec<&String> = spec
        .aliases
        .iter()
        .chain(&spec.deprecated_aliases)
        .collect();
    aliases.sort_unstable();
    if !aliases.is_empty() {
        out.insert("aliases", serde_yaml_ng::to_value(aliases).unwrap());
    }
    out
}

/// What the docs say of one option, in the same shape.
fn documented(doc: &Value) -> BTreeMap<&'static str, Value> {
    let mut out = BTreeMap::new();
    out.insert(
        "type",
        doc.get("type").cloned().unwrap_or(Value::from("str")),
    );
    for key in ["elements", "default", "choices"] {
        if let Some(v) = doc.get(key) {
            out.insert(key, v.clone());
        }
    }
    out.insert(
        "required",
        doc.get("required").cloned().unwrap_or(Value::from(false)),
    );
    if let Some(Value::Sequence(aliases)) = doc.get("aliases") {
        let mut aliases: Vec<String> = aliases
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        aliases.sort_unstable();
        out.insert("aliases", serde_yaml_ng::to_value(aliases).unwrap());
    }
    out
}

#[test]
fn documented_options_are_the_shims_options() {
    let fragments = fragments();
    let mut problems = Vec::new();
    for module in MODULES {
        let doc = docs(module.name)["DOCUMENTATION"].clone();
        let options = documented_options(&doc, &fragments);
        let extends: Vec<&str> = doc["extends_documentation_fragment"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut specs: Vec<OptionSpec> = (module.options)().unwrap().options;
        // Every module accepts the connection options; those that talk to a cluster document them.
        if module.connection {
            assert!(
                extends.contains(&"etcd.core.connection"),
                "{} talks to a cluster: its docs must extend etcd.core.connection",
                module.name
            );
        }
        if extends.contains(&"etcd.core.connection") {
            specs.extend(ConnectionArgs::spec().options.clone());
        }
        let mut seen = BTreeSet::new();
        for spec in &specs {
            match options.get(spec.name.as_str()) {
                None if spec.documented => {
                    problems.push(format!(
                        "{}: option {} is not documented",
                        module.name, spec.name
                    ));
                }
                None => {}
                Some(_) if !spec.documented => problems.push(format!(
                    "{}: option {} is for tests only and must not be documented",
                    module.name, spec.name
                )),
                Some(doc) => {
                    let have = documented(doc);
                    let want = expected(spec, &have["type"]);
                    if want != have {
                        problems.push(format!(
                            "{}: option {}: the shim declares {want:?}, the docs say {have:?}",
                            module.name, spec.name
                        ));
                    }
                }
            }
            seen.insert(spec.name.clone());
        }
        for name in options.keys().filter_map(Value::as_str) {
            if !seen.contains(name) {
                problems.push(format!(
                    "{}: documented option {name} is not an option of the shim",
                    module.name
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Whether a RETURN entry is a mapping, or a list of mappings, without documented fields.
fn lacks_contains(entry: &Value) -> bool {
    let ty = entry["type"].as_str().unwrap_or_default();
    let elements = entry["elements"].as_str().unwrap_or_default();
    (ty == "dict" || (ty == "list" && elements == "dict")) && entry.get("contains").is_none()
}

fn check_returns(module: &str, path: &str, returns: &Mapping, problems: &mut Vec<String>) {
    // Mappings whose keys are data (label names, ETCD_* variables), not fields.
    const FREE_FORM: &[&str] = &["labels", "env"];
    for (key, entry) in returns {
        let key = key.as_str().unwrap();
        let here = format!("{path}{key}");
        if entry.get("description").is_none() {
            problems.push(format!("{module}: {here} has no description"));
        }
        if lacks_contains(entry) && !FREE_FORM.contains(&key) {
            problems.push(format!("{module}: {here} has no contains"));
        }
        if let Some(Value::Mapping(contains)) = entry.get("contains") {
            check_returns(module, &format!("{here}."), contains, problems);
        } else if entry.get("sample").is_none() {
            problems.push(format!("{module}: {here} has no sample"));
        }
    }
}

#[test]
fn every_module_keeps_the_collections_documentation_conventions() {
    let mut problems = Vec::new();
    for module in MODULES {
        let whole = docs(module.name);
        let doc = &whole["DOCUMENTATION"];
        let name = module.name;
        // A release of the collection (changelogs/changelog.yaml), or the next one
        // (CHANGELOG.md's "Unreleased").
        if !matches!(
            doc["version_added"].as_str(),
            Some("0.1.0" | "0.2.0" | "0.3.0" | "0.4.0" | "0.5.0" | "0.6.0")
        ) {
            problems.push(format!(
                "{name}: version_added is not a release (0.1.0 to 0.5.0) or the next (0.6.0)"
            ));
        }
        let extends: Vec<&str> = doc["extends_documentation_fragment"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for fragment in [
            "ansible.builtin.action_common_attributes",
            "ansible.builtin.action_common_attributes.actiongroups",
            "ansible.builtin.action_common_attributes.flow",
        ] {
            if !extends.contains(&fragment) {
                problems.push(format!("{name}: does not extend {fragment}"));
            }
        }
        let attributes = &doc["attributes"];
        for attribute in [
            "check_mode",
            "diff_mode",
            "platform",
            "action_group",
            "action",
            "async",
        ] {
            let support = attributes[attribute]["support"]
                .as_str()
                .unwrap_or_default();
            if !["full", "partial", "none", "N/A"].contains(&support) {
                problems.push(format!("{name}: attribute {attribute} has no support"));
            }
            if support == "partial" && attributes[attribute].get("details").is_none() {
                problems.push(format!(
                    "{name}: attribute {attribute} is partial without details"
                ));
            }
        }
        if attributes["action_group"]["membership"]
            .as_sequence()
            .map(Vec::len)
            != Some(1)
        {
            problems.push(format!("{name}: action_group names no membership"));
        }
        let requirements = doc["requirements"]
            .as_sequence()
            .cloned()
            .unwrap_or_default();
        let text = serde_yaml_ng::to_string(&requirements).unwrap();
        if module.connection && !(text.contains("3.4") && text.contains("3.6")) {
            problems.push(format!(
                "{name}: requirements do not name the etcd versions"
            ));
        }
        if !text.contains("Python") {
            problems.push(format!(
                "{name}: requirements do not say Python is not needed"
            ));
        }
        if doc["seealso"].as_sequence().is_none_or(Vec::is_empty) {
            problems.push(format!("{name}: no seealso"));
        }
        match whole["RETURN"].as_mapping() {
            Some(returns) => check_returns(name, "", returns, &mut problems),
            None => problems.push(format!("{name}: no RETURN")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every documented return value, as `(path to its mapping, name, docs)`.
fn returns_walk(path: Vec<String>, docs: &Value, out: &mut Vec<(Vec<String>, String, Value)>) {
    let Some(map) = docs.as_mapping() else { return };
    for (key, doc) in map {
        let name = key.as_str().unwrap().to_string();
        out.push((path.clone(), name.clone(), doc.clone()));
        if let Some(contains) = doc.get("contains") {
            let mut inner = path.clone();
            inner.push(name);
            returns_walk(inner, contains, out);
        }
    }
}

/// No return value is named like a method of Python's dict (`{{ r.keys }}` is the method in
/// Jinja), but the renamed ones, documented as deprecated until their removal, each beside its
/// new name; and the collection is not yet at the version that removes them.
#[test]
fn no_return_value_shadows_a_dict_method_but_the_deprecated_ones() {
    use ansible_shim::returns::{DICT_METHODS, RENAMED, RENAMED_REMOVED_IN};
    let mut bad = Vec::new();
    for module in MODULES {
        let mut all = Vec::new();
        returns_walk(Vec::new(), &docs(module.name)["RETURN"], &mut all);
        for (path, name, doc) in &all {
            if !DICT_METHODS.contains(&name.as_str()) {
                continue;
            }
            let renamed = RENAMED.iter().find(|r| {
                r.module == module.name && r.old == name && r.path.iter().eq(path.iter())
            });
            let Some(renamed) = renamed else {
                bad.push(format!("{}: {}.{name}", module.name, path.join(".")));
                continue;
            };
            let description = serde_yaml_ng::to_string(&doc["description"]).unwrap();
            assert!(
                description.contains("Deprecated")
                    && description.contains(RENAMED_REMOVED_IN)
                    && description.contains(renamed.new),
                "{}: {name} is not documented as deprecated in favour of {}",
                module.name,
                renamed.new
            );
            let new_documented = all.iter().any(|(p, n, _)| p == path && n == renamed.new);
            assert!(
                new_documented,
                "{}: {} is not documented",
                module.name, renamed.new
            );
        }
    }
    assert!(
        bad.is_empty(),
        "return values named like a dict method: {bad:?}"
    );
    let galaxy = std::fs::read_to_string(collection().join("galaxy.yml")).unwrap();
    let version = galaxy
        .lines()
        .find_map(|l| l.strip_prefix("version: "))
        .unwrap()
        .trim();
    let parse = |v: &str| -> Vec<u32> { v.split('.').map(|p| p.parse().unwrap()).collect() };
    assert!(
        parse(version) < parse(RENAMED_REMOVED_IN),
        "etcd.core {version}: remove the deprecated return values of returns::RENAMED"
    );
}
