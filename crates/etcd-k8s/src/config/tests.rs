//! Unit tests of key generation, the rotation steps and the file's handling.

use super::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn key(name: &str, byte: u8) -> KeyMaterial {
    KeyMaterial {
        name: name.into(),
        secret: KeySecret::new(base64::engine::general_purpose::STANDARD.encode([byte; 32])),
    }
}

fn request(path: &Path, step: ConfigStep, k: Option<KeyMaterial>) -> EncryptionConfigRequest {
    EncryptionConfigRequest {
        path: path.to_path_buf(),
        step,
        provider: Provider::Aescbc,
        resources: default_resources(),
        key_name: None,
        key: k,
        check_mode: false,
        force: false,
        identity_first: false,
    }
}

fn step(path: &Path, s: ConfigStep, k: KeyMaterial) -> Result<EncryptionConfigResult> {
    let mut r = request(path, s, Some(k.clone()));
    if s != ConfigStep::Generate && s != ConfigStep::AddKey {
        r.key = None;
        r.key_name = Some(k.name);
    }
    encryption_config(&r)
}

#[test]
fn new_keys_are_32_random_bytes() {
    let a = new_encryption_key(&NewKeyRequest::default()).unwrap();
    let b = new_encryption_key(&NewKeyRequest {
        name: Some("k2".into()),
        provider: Provider::Secretbox,
    })
    .unwrap();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(&a.secret)
        .unwrap();
    assert_eq!(raw.len(), 32);
    assert_ne!(a.secret, b.secret);
    assert_eq!(b.name, "k2");
    assert!(a.name.starts_with("key-"));
    assert!(!format!("{a:?}").contains(&a.secret));
    assert!(
        new_encryption_key(&NewKeyRequest {
            name: Some("bad:name".into()),
            ..Default::default()
        })
        .is_err()
    );
}

#[test]
fn rotation_walks_its_steps_in_order_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enc.yaml");
    let (old, new) = (key("old", 1), key("new", 2));

    // Nothing to rotate before generate.
    assert!(step(&path, ConfigStep::AddKey, new.clone()).is_err());
    let generated = step(&path, ConfigStep::Generate, old.clone()).unwrap();
    assert!(generated.changed && generated.written);
    assert_eq!(generated.keys_after, ["old"]);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Generate again with the same key: unchanged; with another key: refused.
    assert!(
        !step(&path, ConfigStep::Generate, old.clone())
            .unwrap()
            .changed
    );
    assert!(step(&path, ConfigStep::Generate, new.clone()).is_err());

    // Out of order before add-key.
    for s in [ConfigStep::Promote, ConfigStep::DropOld] {
        let err = step(&path, s, new.clone()).unwrap_err();
        assert!(matches!(err, K8sError::OutOfOrder { .. }), "{err}");
    }
    let added = step(&path, ConfigStep::AddKey, new.clone()).unwrap();
    assert_eq!(
        (added.keys_before, added.keys_after),
        (
            vec!["old".to_string()],
            vec!["old".to_string(), "new".to_string()]
        )
    );
    assert!(
        !step(&path, ConfigStep::AddKey, new.clone())
            .unwrap()
            .changed
    );
    // A third key while rotating, or the same name with other material: refused.
    assert!(matches!(
        step(&path, ConfigStep::AddKey, key("third", 3)).unwrap_err(),
        K8sError::OutOfOrder { .. }
    ));
    assert!(step(&path, ConfigStep::AddKey, key("new", 9)).is_err());
    // Dropping before promoting: refused.
    assert!(matches!(
        step(&path, ConfigStep::DropOld, new.clone()).unwrap_err(),
        K8sError::OutOfOrder { .. }
    ));

    let promoted = step(&path, ConfigStep::Promote, new.clone()).unwrap();
    assert_eq!(promoted.keys_after, ["new", "old"]);
    assert!(
        !step(&path, ConfigStep::Promote, new.clone())
            .unwrap()
            .changed
    );
    let dropped = step(&path, ConfigStep::DropOld, new.clone()).unwrap();
    assert_eq!(dropped.keys_after, ["new"]);
    assert!(
        !step(&path, ConfigStep::DropOld, new.clone())
            .unwrap()
            .changed
    );
    // The next rotation can start.
    assert!(
        step(&path, ConfigStep::AddKey, key("next", 4))
            .unwrap()
            .changed
    );
}

#[test]
fn identity_first_then_promote_moves_the_provider_to_the_front() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enc.yaml");
    let k1 = key("k1", 1);
    let mut r = request(&path, ConfigStep::Generate, Some(k1.clone()));
    r.identity_first = true;
    let generated = encryption_config(&r).unwrap();
    assert_eq!(generated.keys_after, ["k1"]);
    assert!(
        generated
            .diff
            .after
            .contains("  - identity\n  - aescbc: k1"),
        "{:?}",
        generated.diff
    );
    // Dropping other keys before the provider writes: refused.
    assert!(matches!(
        step(&path, ConfigStep::DropOld, k1.clone()).unwrap_err(),
        K8sError::OutOfOrder { .. }
    ));
    let promoted = step(&path, ConfigStep::Promote, k1.clone()).unwrap();
    assert!(promoted.changed);
    assert!(
        promoted.diff.after.contains("  - aescbc: k1\n  - identity"),
        "{:?}",
        promoted.diff
    );
    assert!(
        !step(&path, ConfigStep::Promote, k1.clone())
            .unwrap()
            .changed
    );
    assert!(!step(&path, ConfigStep::DropOld, k1).unwrap().changed);
}

#[test]
fn check_mode_writes_nothing_and_diffs_show_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enc.yaml");
    let old = key("old", 1);
    step(&path, ConfigStep::Generate, old.clone()).unwrap();
    let before = std::fs::read_to_string(&path).unwrap();
    let new = key("new", 2);
    let mut r = request(&path, ConfigStep::AddKey, Some(new.clone()));
    r.check_mode = true;
    let result = encryption_config(&r).unwrap();
    assert!(result.changed && !result.written);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    assert!(
        result.diff.after.contains("aescbc: old, new"),
        "{:?}",
        result.diff
    );
    let json = serde_json::to_string(&result).unwrap();
    for material in [&old.secret.0, &new.secret.0] {
        assert!(!json.contains(material.as_str()));
        assert!(before.contains(old.secret.0.as_str()));
    }
}

#[test]
fn bad_files_and_keys_are_refused_without_echoing_material() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enc.yaml");
    std::fs::write(&path, "apiVersion: v1\nkind: Pod\nresources: []\n").unwrap();
    let err = step(&path, ConfigStep::AddKey, key("k", 1))
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected apiserver.config.k8s.io/v1"), "{err}");
    std::fs::write(&path, "resources: [\n  secret: SUPERSECRETVALUE\n").unwrap();
    let err = step(&path, ConfigStep::AddKey, key("k", 1))
        .unwrap_err()
        .to_string();
    assert!(!err.contains("SUPERSECRETVALUE"), "{err}");

    let fresh = dir.path().join("fresh.yaml");
    let mut short = key("k", 1);
    short.secret = KeySecret::new("AAAA");
    let err = step(&fresh, ConfigStep::Generate, short)
        .unwrap_err()
        .to_string();
    assert!(err.contains("3 bytes"), "{err}");
    let mut garbage = key("k", 1);
    garbage.secret = KeySecret::new("not base64 !!");
    let err = step(&fresh, ConfigStep::Generate, garbage)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not base64") && !err.contains("!!"), "{err}");
    assert!(!fresh.exists());
}

#[test]
fn a_hand_written_file_with_kms_and_identity_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enc.yaml");
    let secret = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
    std::fs::write(
        &path,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [configmaps]\n    providers:\n      - identity: {{}}\n  - resources: [secrets]\n    providers:\n      - aescbc:\n          keys:\n            - name: a\n              secret: {secret}\n      - kms:\n          name: vault\n          endpoint: unix:///tmp/kms.sock\n      - identity: {{}}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let result = step(&path, ConfigStep::AddKey, key("b", 6)).unwrap();
    assert!(
        result.warnings.iter().any(|w| w.contains("mode")),
        "{:?}",
        result.warnings
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("unix:///tmp/kms.sock"), "{text}");
    assert!(text.contains("configmaps"), "{text}");
    assert!(
        result.diff.after.contains("kms: vault"),
        "{:?}",
        result.diff
    );
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // The entry for configmaps has no aescbc: a clear refusal.
    let mut r = request(&path, ConfigStep::AddKey, Some(key("c", 7)));
    r.resources = vec!["configmaps".into()];
    let err = encryption_config(&r).unwrap_err().to_string();
    assert!(err.contains("no aescbc provider"), "{err}");
}

#[test]
fn requests_deserialize_from_module_arguments() {
    let r: EncryptionConfigRequest = serde_json::from_value(serde_json::json!({
        "path": "/etc/kubernetes/enc.yaml",
        "step": "add_key",
        "key": {"name": "k2", "secret": "AAAA"},
    }))
    .unwrap();
    assert_eq!(r.step, ConfigStep::AddKey);
    assert_eq!(r.resources, ["secrets"]);
    assert!(!format!("{r:?}").contains("AAAA"));
    assert!(
        serde_json::from_value::<EncryptionConfigRequest>(serde_json::json!({
            "path": "/x", "step": "generate", "keys": []
        }))
        .is_err()
    );
}

#[test]
fn a_forced_generate_says_which_keys_it_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enc.yaml");
    step(&path, ConfigStep::Generate, key("old", 1)).unwrap();
    let mut forced = request(&path, ConfigStep::Generate, Some(key("new", 2)));
    forced.force = true;
    let done = encryption_config(&forced).unwrap();
    assert_eq!(
        (done.keys_before, done.keys_after),
        (vec!["old".to_string()], vec!["new".to_string()])
    );
    let warning = done.warnings.join("\n");
    assert!(
        warning.contains("forced: replaced")
            && warning.contains("old")
            && warning.contains("unreadable"),
        "{warning}"
    );
    assert!(!warning.contains(&key("old", 1).secret.0), "{warning}");
}
