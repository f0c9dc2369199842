//! `etcdops completion bash|zsh|fish` and `etcdops man`, as the release build installs them:
//! the bash script loads in a real bash and completes etcdops' commands, and the manual
//! page renders with man (or, where man is missing, is well-formed roff).

use std::process::Command;

use etcdops_tests::{args, etcdops, etcdops_path};

#[test]
fn the_bash_completion_loads_in_bash_and_completes_commands() {
    let bin = etcdops_path();
    let script = format!(
        r#"source <("{bin}" completion bash) || exit 3
complete -p etcdops || exit 4
COMP_WORDS=(etcdops down); COMP_CWORD=1; COMP_LINE="etcdops down"; COMP_POINT=${{#COMP_LINE}}
_etcdops etcdops down etcdops
printf 'word:%s\n' "${{COMPREPLY[@]}}"
COMP_WORDS=(etcdops downgrade enable 3.5 --max); COMP_CWORD=4
COMP_LINE="etcdops downgrade enable 3.5 --max"; COMP_POINT=${{#COMP_LINE}}
_etcdops etcdops --max 3.5
printf 'flag:%s\n' "${{COMPREPLY[@]}}""#,
        bin = bin.display()
    );
    let out = Command::new("timeout")
        .args(["30", "bash", "--norc", "--noprofile", "-c", &script])
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bash failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("complete ") && l.ends_with("-F _etcdops etcdops")),
        "not registered for etcdops:\n{stdout}"
    );
    assert!(
        stdout.contains("word:downgrade"),
        "does not complete the command:\n{stdout}"
    );
    assert!(
        stdout.contains("flag:--max-backup-age"),
        "does not complete the flag:\n{stdout}"
    );
}

#[test]
fn zsh_and_fish_scripts_are_for_etcdops() {
    let zsh = etcdops(&args(&["completion", "zsh"]), &[]);
    zsh.expect_code(0);
    assert!(zsh.stdout.starts_with("#compdef etcdops"), "{zsh}");
    let fish = etcdops(&args(&["completion", "fish"]), &[]);
    fish.expect_code(0);
    assert!(fish.stdout.contains("complete -c etcdops"), "{fish}");
    let bad = etcdops(&args(&["completion", "tcsh"]), &[]);
    assert_eq!(bad.code, 2, "{bad}");
}

#[test]
fn the_man_page_renders() {
    let page = etcdops(&args(&["man"]), &[]);
    page.expect_code(0);
    assert!(
        page.stdout.starts_with(".ie") || page.stdout.contains(".TH etcdops 1"),
        "{page}"
    );
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(page.stdout.contains(section), "no {section}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("etcdops.1");
    std::fs::write(&file, &page.stdout).unwrap();
    let man = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "command -v man >/dev/null || exit 99; MANWIDTH=100 timeout 30 man -l '{}' | cat",
            file.display()
        ))
        .env("MANPAGER", "cat")
        .output()
        .expect("run sh");
    if man.status.code() == Some(99) {
        // No man here: the roff structure checked above is what can be checked.
        return;
    }
    let text = String::from_utf8_lossy(&man.stdout);
    assert!(
        man.status.success(),
        "man -l failed: {}",
        String::from_utf8_lossy(&man.stderr)
    );
    assert!(text.contains("NAME") && text.contains("etcdops"), "{text}");
    assert!(
        text.contains("downgrade") && text.contains("SUBCOMMANDS"),
        "{text}"
    );
    assert!(!text.contains(".SH"), "roff left unrendered:\n{text}");

    let pages = tempfile::tempdir().unwrap();
    let out_dir = pages.path().display().to_string();
    etcdops(&args(&["man", "--out-dir", &out_dir]), &[]).expect_code(0);
    for name in [
        "etcdops.1",
        "etcdops-downgrade.1",
        "etcdops-snapshot-save.1",
    ] {
        assert!(pages.path().join(name).exists(), "no {name} in {out_dir}");
    }
}

/// Run as `etcdctl` (the drop-in's symlink), the bash script registers `etcdctl` and
/// completes its commands in a real bash; zsh's and fish's name it too.
#[test]
fn run_as_etcdctl_the_scripts_register_etcdctl() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("etcdctl");
    std::os::unix::fs::symlink(etcdops_path(), &link).unwrap();
    let script = format!(
        r#"source <("{bin}" completion bash) || exit 3
complete -p etcdctl || exit 4
COMP_WORDS=(etcdctl snaps); COMP_CWORD=1; COMP_LINE="etcdctl snaps"; COMP_POINT=${{#COMP_LINE}}
_etcdctl etcdctl snaps etcdctl
printf 'word:%s\n' "${{COMPREPLY[@]}}""#,
        bin = link.display()
    );
    let out = Command::new("timeout")
        .args(["30", "bash", "--norc", "--noprofile", "-c", &script])
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bash failed:\n{stdout}\n{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("complete ") && l.ends_with("-F _etcdctl etcdctl")),
        "not registered for etcdctl:\n{stdout}"
    );
    assert!(stdout.contains("word:snapshot"), "{stdout}");
    for (shell, expected) in [("zsh", "#compdef etcdctl"), ("fish", "complete -c etcdctl")] {
        let out = Command::new(&link)
            .args(["completion", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}: {:?}", out.status);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(expected),
            "{shell}:\n{}",
            &text[..200.min(text.len())]
        );
    }
}

/// `completion`/`man` into a pipe closed at once (`| head -0`): no panic, exit 0, as every
/// etcdops command treats a closed pipe.
#[test]
fn completion_and_man_into_a_closed_pipe_exit_0_without_a_panic() {
    for command in [
        &["completion", "bash"][..],
        &["completion", "zsh"],
        &["man"],
    ] {
        let mut child = Command::new(etcdops_path())
            .args(command)
            .env("RUST_BACKTRACE", "0")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{command:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{command:?}: {stderr}");
    }
}
