//! The CLI's error paths, which need no CXL-NIC: every error names its
//! errno and the reason, in text and with `--json`.

use std::process::Command;

fn cxlnic(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cxlnic"))
        .args(args)
        .output()
        .expect("run cxlnic");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_missing_device_node_says_so() {
    let (ok, out, err) = cxlnic(&[
        "--dev",
        "/nonexistent/cxlnic",
        "kvs",
        "stats",
        "lo",
        "--json",
    ]);
    assert!(!ok);
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["ok"], false);
    assert_eq!(v["errno"], "ENOENT");
    assert!(err.contains("is cxlnic_drv loaded?"), "{err}");
}

#[test]
fn an_ioctl_error_names_the_errno_and_the_reason() {
    // /dev/null takes no ioctl: ENOTTY, as from a module without these.
    let (ok, out, err) = cxlnic(&["--dev", "/dev/null", "kvs", "put", "lo", "k", "v", "--json"]);
    assert!(!ok);
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["errno"], "ENOTTY", "{out}");
    assert_eq!(v["op"], "put lo k");
    assert!(err.contains("ENOTTY ("), "{err}");
    assert!(err.contains("does not know this ioctl"), "{err}");
}

#[test]
fn bad_arguments_are_refused_before_any_ioctl() {
    let long = "k".repeat(33);
    let (ok, _, err) = cxlnic(&["--dev", "/dev/null", "kvs", "get", "lo", &long]);
    assert!(!ok);
    assert!(err.contains("a key is 1 to 32 bytes"), "{err}");
    let (ok, _, err) = cxlnic(&["--dev", "/dev/null", "kvs", "stats", "no-such-if0"]);
    assert!(!ok);
    assert!(err.contains("no-such-if0: no such interface"), "{err}");
    let (ok, _, _) = cxlnic(&["kvs", "enable", "lo", "--port", "70000"]);
    assert!(!ok, "clap refuses a port above 65535");
}
