//! `systemuser` and `systemuser_systemcmdpolicy_binding` through the whole API
//! ([`nitro::Nitro::handle`]) over an appliance that is a configuration in memory: users made,
//! bound, read (never their password), changed and removed by NITRO; only a superuser may.

mod common;
use common::{Memory, call};

use nitro::{Appliance, Nitro};
use serde_json::json;

fn api() -> Nitro<Memory> {
    common::api(
        "add system user admin \"admin pass\"\nbind system user admin superuser 1\n\
         add system user netops \"net pass\"\nbind system user netops network 1\n",
    )
}

const ADMIN: (&str, &str) = ("admin", "admin pass");

/// The status of a read as `who`: 200 when it may log in and read, 401 when not.
fn reads(api: &Nitro<Memory>, who: (&str, &str)) -> u16 {
    call(api, who, "GET", "/nitro/v1/config/lbvserver", None).0
}

#[test]
fn a_superuser_manages_users_through_nitro() {
    let api = api();
    let user =
        json!({"systemuser": {"username": "grafana", "password": "look0nly", "timeout": 900}});
    let (status, body) = call(
        &api,
        ADMIN,
        "POST",
        "/nitro/v1/config/systemuser",
        Some(user),
    );
    assert_eq!(status, 201, "{body}");
    // Without a policy the new user cannot log in; bound read-only it reads.
    let reader = ("grafana", "look0nly");
    const NEW: (&str, &str) = ("grafana", "n3w one");
    assert_eq!(reads(&api, reader), 401);
    let bind = json!({"systemuser_systemcmdpolicy_binding": {"username": "grafana", "policyname": "read-only", "priority": 10}});
    let (status, body) = call(
        &api,
        ADMIN,
        "PUT",
        "/nitro/v1/config/systemuser_systemcmdpolicy_binding",
        Some(bind),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(reads(&api, reader), 200);

    // Read back: the options and the policy, never the password or its hash.
    let (status, body) = call(
        &api,
        ADMIN,
        "GET",
        "/nitro/v1/config/systemuser/grafana",
        None,
    );
    assert_eq!(status, 200, "{body}");
    let u = &body["systemuser"][0];
    assert_eq!(
        (u["username"].as_str(), u["timeout"].as_u64()),
        (Some("grafana"), Some(900)),
        "{u}"
    );
    assert!(
        !body.to_string().contains("$6$") && u.get("password").is_none(),
        "{body}"
    );
    let (_, body) = call(
        &api,
        ADMIN,
        "GET",
        "/nitro/v1/config/systemuser_systemcmdpolicy_binding/grafana",
        None,
    );
    let b = &body["systemuser_systemcmdpolicy_binding"][0];
    assert_eq!(
        (b["policyname"].as_str(), b["priority"].as_u64()),
        (Some("read-only"), Some(10)),
        "{body}"
    );

    // A new password: the old one no longer works.
    let change = json!({"systemuser": {"username": "grafana", "password": "n3w one"}});
    let (status, body) = call(
        &api,
        ADMIN,
        "PUT",
        "/nitro/v1/config/systemuser",
        Some(change),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(reads(&api, reader), 401);
    assert_eq!(reads(&api, NEW), 200);

    // Unbound it cannot log in; removed it is gone.
    let (status, body) = call(
        &api,
        ADMIN,
        "DELETE",
        "/nitro/v1/config/systemuser_systemcmdpolicy_binding/grafana?args=policyname:read-only",
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(reads(&api, NEW), 401);
    let (status, body) = call(
        &api,
        ADMIN,
        "DELETE",
        "/nitro/v1/config/systemuser/grafana",
        None,
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(
        &api,
        ADMIN,
        "GET",
        "/nitro/v1/config/systemuser/grafana",
        None,
    );
    assert_eq!(
        (status, body["errorcode"].as_u64()),
        (404, Some(258)),
        "{body}"
    );
    // What save would write holds the remaining users only, hashed.
    let saved = api.appliance.running_config();
    assert!(
        !saved.contains("grafana") && saved.contains("add system user netops $6$"),
        "{saved}"
    );
}

#[test]
fn only_a_superuser_may_touch_users() {
    let api = api();
    let netops = ("netops", "net pass");
    // netops changes the configuration...
    let server = json!({"server": {"name": "web1", "ipaddress": "198.18.0.11"}});
    assert_eq!(
        call(
            &api,
            netops,
            "POST",
            "/nitro/v1/config/server",
            Some(server)
        )
        .0,
        201
    );
    // ...but neither reads nor makes users, nor gives itself a policy.
    let (status, body) = call(&api, netops, "GET", "/nitro/v1/config/systemuser", None);
    assert_eq!(
        (status, body["errorcode"].as_u64()),
        (403, Some(2138)),
        "{body}"
    );
    let user = json!({"systemuser": {"username": "mine", "password": "x"}});
    assert_eq!(
        call(
            &api,
            netops,
            "POST",
            "/nitro/v1/config/systemuser",
            Some(user)
        )
        .0,
        403
    );
    let bind = json!({"systemuser_systemcmdpolicy_binding": {"username": "netops", "policyname": "superuser", "priority": 1}});
    assert_eq!(
        call(
            &api,
            netops,
            "PUT",
            "/nitro/v1/config/systemuser_systemcmdpolicy_binding",
            Some(bind)
        )
        .0,
        403
    );
    let running = api.appliance.running_config();
    assert!(
        !running.contains("mine") && !running.contains("bind system user netops superuser"),
        "{running}"
    );
}
