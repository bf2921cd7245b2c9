//! NITRO against a running lab daemon, with curl from the client namespace to the
//! engine's management address (on the kernel's stack, on the engine's own port): log in,
//! build a vserver, a service and a binding, send traffic through them, change, rename,
//! unbind, delete, save and restart; and every error case with its status and code,
//! changing nothing.

mod common;
use common::lab::{Lab, VIP, backend_name};

use serde_json::{Value, json};

const MGMT: &str = "198.18.0.3";
const PORT: u16 = 9080;

const BASE: &str = "add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add system user api-admin \"s3cret pass\"
bind system user api-admin superuser 1
add system user viewer look0nly
bind system user viewer read-only 1
add service s1 198.18.0.11 HTTP 80
add lb vserver web HTTP 198.18.0.100 80 -lbMethod ROUNDROBIN
bind lb vserver web s1
";

/// One NITRO request by curl: the status line's code and reason, and the JSON body.
struct Answer {
    status: u16,
    reason: String,
    body: Value,
    headers: String,
}

fn nitro(lab: &Lab, method: &str, path: &str, body: Option<&str>, auth: &[String]) -> Answer {
    nitro_at(
        lab,
        &format!("http://{MGMT}:{PORT}"),
        method,
        path,
        body,
        auth,
    )
}

fn nitro_at(
    lab: &Lab,
    base: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    auth: &[String],
) -> Answer {
    let url = format!("{base}{path}");
    // -k: the HTTPS listener's certificate is self-signed.
    let mut args: Vec<String> = ["curl", "-s", "-k", "-i", "-m", "10", "-X", method]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    for h in auth {
        args.push("-H".into());
        args.push(h.clone());
    }
    if let Some(b) = body {
        args.extend([
            "-H".into(),
            "Content-Type: application/json".into(),
            "--data-binary".into(),
            b.into(),
        ]);
    }
    args.push(url);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = lab.client(&refs);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status_line = head.lines().next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let _version = parts.next();
    let status = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let reason = parts.next().unwrap_or("").trim().to_owned();
    Answer {
        status,
        reason,
        body: serde_json::from_str(body).unwrap_or(Value::Null),
        headers: head.to_owned(),
    }
}

/// The backend that answers `VIP:port`, asked until it is `want` (a new vserver's service
/// comes UP after its first probe), for 6 s at most.
fn backend_answering(lab: &Lab, port: u16, want: &str) -> String {
    let url = format!("http://{VIP}:{port}/");
    let mut answered = String::new();
    for _ in 0..30 {
        let out = lab.client(&["curl", "-s", "-i", "-m", "2", &url]);
        answered = backend_name(&out.stdout);
        if answered == want {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    answered
}

fn running_config(lab: &Lab) -> String {
    let out = lab.ctl(&["show", "ns", "runningConfig"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

fn start(lab: &mut Lab, config: &str) {
    lab.daemon_args = vec!["--nitro".into(), format!("{MGMT}:{PORT}")];
    lab.start(config, 80);
}

fn lab_with_management_address(name: &str) -> Lab {
    let lab = Lab::up(name, 3);
    let add = std::process::Command::new("ip")
        .args([
            "-n",
            &lab.ns("lb"),
            "addr",
            "add",
            &format!("{MGMT}/24"),
            "dev",
            "fl-lb0",
        ])
        .status()
        .unwrap();
    assert!(add.success());
    lab
}

fn login(lab: &Lab, user: &str, password: &str) -> String {
    let body =
        json!({"login": {"username": user, "password": password, "timeout": 600}}).to_string();
    let a = nitro(lab, "POST", "/nitro/v1/config/login", Some(&body), &[]);
    assert_eq!(
        (a.status, a.reason.as_str()),
        (201, "Created"),
        "{}",
        a.headers
    );
    assert!(
        a.headers.contains("NITRO_AUTH_TOKEN=%23%23"),
        "{}",
        a.headers
    );
    let token = a.body["sessionid"].as_str().unwrap().to_owned();
    format!("Cookie: NITRO_AUTH_TOKEN={}", token.replace('#', "%23"))
}

#[test]
fn nitro_builds_changes_and_saves_what_the_cli_sees() {
    let mut lab = lab_with_management_address("nitro");
    start(&mut lab, BASE);
    let auth = vec![login(&lab, "api-admin", "s3cret pass")];

    // A service, a vserver and a binding, then traffic through them.
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/service",
        Some(
            r#"{"service":{"name":"s2","ip":"198.18.0.12","servicetype":"HTTP","port":80,"maxclient":"100"}}"#,
        ),
        &auth,
    );
    assert_eq!(
        (a.status, a.reason.as_str()),
        (201, "Created"),
        "{:?}",
        a.body
    );
    assert_eq!(a.body["errorcode"], 0);
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/lbvserver",
        Some(&format!(
            r#"{{"lbvserver":{{"name":"api-web","servicetype":"HTTP","ipv46":"{VIP}","port":8080,"lbmethod":"ROUNDROBIN"}}}}"#
        )),
        &auth,
    );
    assert_eq!(a.status, 201, "{:?}", a.body);
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/lbvserver_service_binding",
        Some(
            r#"{"lbvserver_service_binding":{"name":"api-web","servicename":"s2","weight":"20"}}"#,
        ),
        &auth,
    );
    assert_eq!(a.status, 201, "{:?}", a.body);
    let up = lab.wait_service_state("s2", "UP", std::time::Duration::from_secs(15));
    let s2 = String::from_utf8_lossy(&lab.ctl(&["show", "service", "s2"]).stdout).into_owned();
    assert!(up.is_some(), "{s2}");
    let answered = backend_answering(&lab, 8080, "backend-2");
    let stat = String::from_utf8_lossy(&lab.ctl(&["stat", "lb", "vserver"]).stdout).into_owned();
    assert_eq!(
        answered, "backend-2",
        "traffic reaches the service NITRO made: {stat}"
    );
    let show = String::from_utf8_lossy(&lab.ctl(&["show", "lb", "vserver", "api-web"]).stdout)
        .into_owned();
    assert!(
        show.contains("198.18.0.100:8080") && show.contains("s2"),
        "{show}"
    );

    // Reads: one, all, filtered, counted, some attributes.
    let a = nitro(
        &lab,
        "GET",
        "/nitro/v1/config/lbvserver/api-web",
        None,
        &auth,
    );
    assert_eq!((a.status, a.reason.as_str()), (200, "OK"));
    let v = &a.body["lbvserver"][0];
    assert_eq!(
        (
            v["name"].as_str(),
            v["lbmethod"].as_str(),
            v["port"].as_u64()
        ),
        (Some("api-web"), Some("ROUNDROBIN"), Some(8080))
    );
    assert_eq!(v["curstate"], "UP", "{v}");
    let a = nitro(
        &lab,
        "GET",
        "/nitro/v1/config/lbvserver?count=yes",
        None,
        &auth,
    );
    assert_eq!(a.body["lbvserver"][0]["__count"], 2);
    let a = nitro(
        &lab,
        "GET",
        "/nitro/v1/config/service?filter=servicetype:HTTP&attrs=name,svrstate",
        None,
        &auth,
    );
    let names: Vec<&str> = a.body["service"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["s1", "s2"]);
    assert!(
        a.body["service"][0].get("port").is_none(),
        "only the attributes asked for"
    );
    let a = nitro(
        &lab,
        "GET",
        "/nitro/v1/config/lbvserver_service_binding/api-web",
        None,
        &auth,
    );
    assert_eq!(
        a.body["lbvserver_service_binding"][0]["weight"], 20,
        "{:?}",
        a.body
    );

    // Update, disable with a delay, rename, unbind, delete.
    let a = nitro(
        &lab,
        "PUT",
        "/nitro/v1/config/lbvserver",
        Some(r#"{"lbvserver":{"name":"api-web","lbmethod":"LEASTCONNECTION"}}"#),
        &auth,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert!(
        running_config(&lab)
            .contains("add lb vserver api-web HTTP 198.18.0.100 8080 -lbMethod LEASTCONNECTION")
            || running_config(&lab).contains("add lb vserver api-web HTTP 198.18.0.100 8080\n"),
        "{}",
        running_config(&lab)
    );
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/service?action=disable",
        Some(r#"{"service":{"name":"s2","delay":30,"graceful":"NO"}}"#),
        &auth,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    let a = nitro(&lab, "GET", "/nitro/v1/config/service/s2", None, &auth);
    assert_eq!(
        a.body["service"][0]["svrstate"], "GOING OUT OF SERVICE",
        "{:?}",
        a.body
    );
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/service?action=enable",
        Some(r#"{"service":{"name":"s2"}}"#),
        &auth,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/service?action=rename",
        Some(r#"{"service":{"name":"s2","newname":"s2-api"}}"#),
        &auth,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert!(
        running_config(&lab).contains("bind lb vserver api-web s2-api -weight 20"),
        "{}",
        running_config(&lab)
    );
    let a = nitro(
        &lab,
        "DELETE",
        "/nitro/v1/config/lbvserver_service_binding/api-web?args=servicename:s2-api",
        None,
        &auth,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    let a = nitro(
        &lab,
        "GET",
        "/nitro/v1/config/lbvserver_service_binding/api-web",
        None,
        &auth,
    );
    assert_eq!(
        a.body,
        json!({"errorcode": 0, "message": "Done", "severity": "NONE"}),
        "no bindings: no key"
    );
    let a = nitro(
        &lab,
        "DELETE",
        "/nitro/v1/config/service/s2-api",
        None,
        &auth,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    let a = nitro(&lab, "GET", "/nitro/v1/config/service/s2-api", None, &auth);
    assert_eq!(
        (a.status, a.reason.as_str(), a.body["errorcode"].as_u64()),
        (404, "Not Found", Some(258))
    );

    // Save by NITRO, restart: the same configuration comes back.
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/nsconfig?action=save",
        Some(r#"{"nsconfig":{}}"#),
        &auth,
    );
    assert_eq!(a.status, 200, "{:?}", a.body);
    let before = running_config(&lab);
    assert!(before.contains("add lb vserver api-web"), "{before}");
    // The running configuration and whether it is saved, by NITRO too (both ask the control
    // plane from inside a request: once a deadlock).
    let a = nitro(&lab, "GET", "/nitro/v1/config/nsrunningconfig", None, &auth);
    let text = a.body["nsrunningconfig"]["response"].as_str().unwrap_or("");
    assert!(text.contains("add lb vserver api-web"), "{:?}", a.body);
    let a = nitro(&lab, "GET", "/nitro/v1/config/nsconfig", None, &auth);
    assert_eq!(a.body["nsconfig"]["configchanged"], false, "{:?}", a.body);
    let saved = std::fs::read_to_string(lab.dir.join("ns.conf")).unwrap();
    lab.stop();
    start(&mut lab, &saved);
    assert_eq!(running_config(&lab), before);
    let auth = vec![login(&lab, "api-admin", "s3cret pass")];
    let a = nitro(
        &lab,
        "GET",
        "/nitro/v1/config/lbvserver/api-web",
        None,
        &auth,
    );
    assert_eq!(a.body["lbvserver"][0]["lbmethod"], "LEASTCONNECTION");
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/logout",
        Some(r#"{"logout":{}}"#),
        &auth,
    );
    assert_eq!(a.status, 200);
    let a = nitro(&lab, "GET", "/nitro/v1/config/lbvserver", None, &auth);
    assert_eq!((a.status, a.body["errorcode"].as_u64()), (401, Some(444)));
    lab.stop();
}

/// method, path, body, credentials, expected status and NITRO error code.
type Case<'a> = (&'a str, &'a str, Option<&'a str>, &'a Vec<String>, u16, u64);

#[test]
fn nitro_errors_have_their_status_and_code_and_change_nothing() {
    let mut lab = lab_with_management_address("nitroerr");
    start(&mut lab, BASE);
    let admin = vec![
        "X-NITRO-USER: api-admin".to_owned(),
        "X-NITRO-PASS: s3cret pass".to_owned(),
    ];
    let viewer = vec![login(&lab, "viewer", "look0nly")];
    let before = running_config(&lab);
    let cases: Vec<Case> = vec![
        (
            "POST",
            "/nitro/v1/config/service",
            Some("{\"service\": {"),
            &admin,
            400,
            1233,
        ),
        (
            "GET",
            "/nitro/v1/config/frobnicator",
            None,
            &admin,
            400,
            1232,
        ),
        (
            "POST",
            "/nitro/v1/config/service",
            Some(
                r#"{"service":{"name":"x","ip":"198.18.0.12","servicetype":"HTTP","port":80,"colour":"blue"}}"#,
            ),
            &admin,
            400,
            1090,
        ),
        (
            "POST",
            "/nitro/v1/config/lbvserver_service_binding",
            Some(r#"{"lbvserver_service_binding":{"name":"web","servicename":"s1","weight":101}}"#),
            &admin,
            400,
            1097,
        ),
        (
            "POST",
            "/nitro/v1/config/lbvserver_service_binding",
            Some(r#"{"lbvserver_service_binding":{"name":"web","servicename":"nosuch"}}"#),
            &admin,
            404,
            258,
        ),
        (
            "POST",
            "/nitro/v1/config/service",
            Some(r#"{"service":{"name":"s1","ip":"198.18.0.12","servicetype":"HTTP","port":80}}"#),
            &admin,
            409,
            273,
        ),
        // A bulk add is all or nothing: the second object fails, the first is not kept.
        (
            "POST",
            "/nitro/v1/config/service",
            Some(
                r#"{"service":[{"name":"b1","ip":"198.18.0.12","servicetype":"HTTP","port":80},{"name":"b2","ip":"198.18.0.13","servicetype":"HTTP","port":99999}]}"#,
            ),
            &admin,
            400,
            1097,
        ),
        (
            "PUT",
            "/nitro/v1/config/lbvserver",
            Some(r#"{"lbvserver":{"name":"web","port":81}}"#),
            &admin,
            400,
            278,
        ),
        (
            "POST",
            "/nitro/v1/config/service",
            Some(r#"{"service":{"name":"v1","ip":"198.18.0.12","servicetype":"HTTP","port":80}}"#),
            &viewer,
            403,
            2138,
        ),
        (
            "DELETE",
            "/nitro/v1/config/service/s1",
            None,
            &viewer,
            403,
            2138,
        ),
    ];
    for (method, path, body, auth, status, code) in cases {
        let a = nitro(&lab, method, path, body, auth);
        assert_eq!(
            (a.status, a.body["errorcode"].as_u64()),
            (status, Some(code)),
            "{method} {path} {body:?}: {}",
            a.body
        );
        assert_eq!(a.body["severity"], "ERROR");
        assert_eq!(
            running_config(&lab),
            before,
            "{method} {path} changed the configuration"
        );
    }
    // Wrong credentials, every way they come.
    let body = json!({"login": {"username": "api-admin", "password": "wrong"}}).to_string();
    let a = nitro(&lab, "POST", "/nitro/v1/config/login", Some(&body), &[]);
    assert_eq!(
        (a.status, a.reason.as_str(), a.body["errorcode"].as_u64()),
        (401, "Unauthorized", Some(354))
    );
    let a = nitro(
        &lab,
        "GET",
        "/nitro/v1/config/lbvserver",
        None,
        &[
            "X-NITRO-USER: viewer".to_owned(),
            "X-NITRO-PASS: nope".to_owned(),
        ],
    );
    assert_eq!((a.status, a.body["errorcode"].as_u64()), (401, Some(354)));
    let a = nitro(&lab, "GET", "/nitro/v1/config/lbvserver", None, &[]);
    assert_eq!((a.status, a.body["errorcode"].as_u64()), (401, Some(352)));
    // The read-only user reads.
    let a = nitro(&lab, "GET", "/nitro/v1/stat/lbvserver/web", None, &viewer);
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body["lbvserver"][0]["state"], "UP");
    assert!(
        a.body["lbvserver"][0]["tothits"].is_string(),
        "64-bit counters are strings"
    );

    // X-NITRO-ONERROR: a bulk add whose second object exists already.
    let three = r#"{"server":[{"name":"x1","ipaddress":"198.18.0.21"},{"name":"198.18.0.11","ipaddress":"198.18.0.11"},{"name":"x3","ipaddress":"198.18.0.23"}]}"#;
    let with = |mode: &str| {
        let mut h = admin.clone();
        h.push(format!("X-NITRO-ONERROR: {mode}"));
        h
    };
    let has = |name: &str| running_config(&lab).contains(&format!("add server {name} "));
    // exit: stops there, what was added stays; 207 with the objects up to the failure.
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/server",
        Some(three),
        &with("exit"),
    );
    assert_eq!(
        (a.status, a.reason.as_str()),
        (207, "Multi Status"),
        "{:?}",
        a.body
    );
    assert_eq!(a.body["errorcode"], 1243, "{:?}", a.body);
    let codes: Vec<_> = a.body["response"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["errorcode"].as_u64())
        .collect();
    assert_eq!(codes, [Some(0), Some(273)], "{:?}", a.body);
    assert!(has("x1") && !has("x3"));
    // continue: every object is tried; the existing ones are conflicts.
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/server",
        Some(three),
        &with("continue"),
    );
    assert_eq!(a.status, 207, "{:?}", a.body);
    let codes: Vec<_> = a.body["response"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["errorcode"].as_u64())
        .collect();
    assert_eq!(codes, [Some(273), Some(273), Some(0)], "{:?}", a.body);
    assert!(has("x3"));
    // rollback (as without the header): nothing of a failing bulk request is applied.
    let before = running_config(&lab);
    let two = r#"{"server":[{"name":"x4","ipaddress":"198.18.0.24"},{"name":"x1","ipaddress":"198.18.0.21"}]}"#;
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/server",
        Some(two),
        &with("rollback"),
    );
    assert_eq!(
        (a.status, a.body["errorcode"].as_u64()),
        (409, Some(273)),
        "{:?}",
        a.body
    );
    assert_eq!(running_config(&lab), before);
    let a = nitro(
        &lab,
        "POST",
        "/nitro/v1/config/server",
        Some(two),
        &with("sometimes"),
    );
    assert_eq!(
        (a.status, a.body["errorcode"].as_u64()),
        (400, Some(1097)),
        "{:?}",
        a.body
    );
    lab.stop();
}

/// `--nitro-tls` without a certificate: one is made at the first start, kept beside the
/// configuration, and used again by the next start.
#[test]
fn nitro_over_https_makes_its_certificate_once() {
    let mut lab = lab_with_management_address("nitrotls");
    lab.daemon_args = vec!["--nitro-tls".into(), format!("{MGMT}:9443")];
    lab.start(BASE, 80);
    let base = format!("https://{MGMT}:9443");
    let body = json!({"login": {"username": "api-admin", "password": "s3cret pass"}}).to_string();
    let a = nitro_at(
        &lab,
        &base,
        "POST",
        "/nitro/v1/config/login",
        Some(&body),
        &[],
    );
    assert_eq!(a.status, 201, "{}", a.headers);
    let cert = lab.dir.join("nitro-cert.pem");
    let first = std::fs::read_to_string(&cert).unwrap();
    assert!(first.contains("BEGIN CERTIFICATE"));
    let key = std::fs::metadata(lab.dir.join("nitro-key.pem")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(key.permissions().mode() & 0o777, 0o600);
    lab.stop();
    lab.start(BASE, 80);
    let a = nitro_at(
        &lab,
        &base,
        "GET",
        "/nitro/v1/config/lbvserver/web",
        None,
        &[
            "X-NITRO-USER: viewer".into(),
            "X-NITRO-PASS: look0nly".into(),
        ],
    );
    assert_eq!(a.body["lbvserver"][0]["name"], "web", "{:?}", a.body);
    assert_eq!(
        std::fs::read_to_string(&cert).unwrap(),
        first,
        "the same certificate"
    );
    // Plain HTTP on the TLS port gets no answer.
    let plain = nitro_at(
        &lab,
        &format!("http://{MGMT}:9443"),
        "GET",
        "/nitro/v1/config/lbvserver",
        None,
        &[],
    );
    assert_eq!(plain.status, 0);
    lab.stop();
}

#[test]
fn the_dashboard_shows_a_service_go_down_in_a_real_browser() {
    use std::io::BufRead;
    let mut lab = lab_with_management_address("nitroweb");
    // A monitor that measures response times (LRTM), for the page to show them, and a
    // service group behind a second vserver.
    let config = format!(
        "{BASE}add lb monitor web-rt HTTP -LRTM ENABLED -interval 2 -resptimeout 1\nbind service s1 -monitorName web-rt\n\
         add serviceGroup g1 HTTP\nbind serviceGroup g1 198.18.0.12 80 -weight 7\n\
         add lb vserver grp HTTP {VIP} 8080\nbind lb vserver grp g1\n"
    );
    start(&mut lab, &config);
    // The page and its files come from the binary; the API behind it needs a session.
    let page = lab.client(&["curl", "-s", "-i", &format!("http://{MGMT}:{PORT}/")]);
    let page = String::from_utf8_lossy(&page.stdout).into_owned();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.to_ascii_lowercase()
            .contains("content-security-policy: default-src 'self'"),
        "{page}"
    );
    assert!(page.contains("<script src=\"/dashboard.js\">"), "{page}");
    let anonymous = nitro(&lab, "GET", "/nitro/v1/stat/nsdropreason", None, &[]);
    assert_eq!(anonymous.status, 401);
    for _ in 0..5 {
        let out = lab.client(&[
            "curl",
            "-s",
            "-D",
            "-",
            "-o",
            "/dev/null",
            "-m",
            "5",
            &format!("http://{VIP}/"),
        ]);
        assert_eq!(backend_name(&out.stdout), "backend-1");
    }

    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/dashboard.py");
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    let _ = std::fs::remove_file(&shot);
    let mut browser = lab.client_spawn(&[
        "python3",
        &script.to_string_lossy(),
        &format!("http://{MGMT}:{PORT}/"),
        "viewer",
        "look0nly",
        "s1",
        &shot.to_string_lossy(),
    ]);
    let mut said = Vec::new();
    for line in std::io::BufReader::new(browser.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        eprintln!("browser: {line}");
        if line == "UP" {
            // The browser saw s1 UP: now its backend goes away.
            lab.stop_backend(1);
        }
        said.push(line);
    }
    let status = browser.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(browser.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{said:?}\n{stderr}");
    let has = |l: &str| said.iter().any(|s| s == l);
    assert!(has("UP") && has("DOWN"), "{said:?}");
    assert!(has("vservers 2"), "{said:?}");
    assert!(
        has("member-row g1 › 198.18.0.12:80 198.18.0.12:80 grp (7) UP – – – –"),
        "{said:?}"
    );
    // Name, VIP, method and state as the page drew them while s1 was UP.
    assert!(
        said.iter()
            .any(|l| l.starts_with("row web 198.18.0.100:80 ROUNDROBIN UP 100 %")),
        "{said:?}"
    );
    assert!(
        said.iter().any(
            |l| l.starts_with("service-row s1 198.18.0.11:80 web (1) UP") && l.contains(" ms ")
        ),
        "{said:?}"
    );
    assert!(has("charts 4"), "{said:?}");
    assert!(has("errors 0"), "{said:?}");
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{}",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());
    // The API the page read says the same.
    let a = nitro(
        &lab,
        "GET",
        "/nitro/v1/stat/service/s1",
        None,
        &[
            "X-NITRO-USER: viewer".into(),
            "X-NITRO-PASS: look0nly".into(),
        ],
    );
    assert_eq!(a.body["service"][0]["state"], "DOWN", "{:?}", a.body);
    lab.stop();
}

/// `fulcrumctl stat … -format json`: the first object of its JSON line.
fn cli_stat(lab: &Lab, args: &[&str]) -> Value {
    let mut all = vec!["stat"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-format", "json"]);
    let out = lab.ctl(&all);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with('['))
        .unwrap_or_else(|| panic!("{text}"));
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {text}"));
    v[0].clone()
}

/// Whether NITRO's rate `n`, read between the CLI's `a` and `b`, is theirs: rates are the
/// change since the oldest sample of the window, at the moment they are read, so between two
/// reads they move by what a fraction of a second adds (a tenth, and 2 for small counts).
fn rate_agrees(a: u64, n: u64, b: u64) -> bool {
    let slack = a.max(b) / 10 + 2;
    a.min(b).saturating_sub(slack) <= n && n <= a.max(b) + slack
}

/// A counter as either side writes it: NITRO's 64-bit counters are strings.
fn counter(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("not a counter: {v}"))
}

#[test]
fn nitro_stat_agrees_with_the_cli_stat_within_one_sampling_interval() {
    let mut lab = lab_with_management_address("nitrostat");
    start(&mut lab, BASE);
    let viewer = [
        "X-NITRO-USER: viewer".to_owned(),
        "X-NITRO-PASS: look0nly".to_owned(),
    ];
    // New connections for about 20 s (bounded by count and time).
    let load = format!(
        "for i in $(seq 400); do curl -s -o /dev/null -m 2 http://{VIP}/; sleep 0.03; done"
    );
    let mut client = lab.client_spawn(&["timeout", "40", "bash", "-c", &load]);
    std::thread::sleep(std::time::Duration::from_secs(3));
    // (the CLI's name, NITRO's name) for the totals, which only grow, and for the rates.
    let service_totals = [
        ("hits", "vsvrservicehits"),
        ("packets", "totalpktsrecvd"),
        ("bytes", "totalrequestbytes"),
    ];
    let service_rates = [
        ("hitsrate", "vsvrservicehitsrate"),
        ("bytesrate", "requestbytesrate"),
    ];
    let mut rates_seen = 0;
    for round in 0..10 {
        // NITRO's reading between two of the CLI's: a total lies between them, a rate by
        // them (see `rate_agrees`).
        let (s0, v0) = (
            cli_stat(&lab, &["service", "s1"]),
            cli_stat(&lab, &["lb", "vserver", "web"]),
        );
        let service = nitro(&lab, "GET", "/nitro/v1/stat/service/s1", None, &viewer).body;
        let vserver = nitro(&lab, "GET", "/nitro/v1/stat/lbvserver/web", None, &viewer).body;
        let (s1, v1) = (
            cli_stat(&lab, &["service", "s1"]),
            cli_stat(&lab, &["lb", "vserver", "web"]),
        );
        let (service, vserver) = (&service["service"][0], &vserver["lbvserver"][0]);
        for (cli, ours) in service_totals {
            let (lo, n, hi) = (
                counter(&s0[cli]),
                counter(&service[ours]),
                counter(&s1[cli]),
            );
            assert!(
                lo <= n && n <= hi,
                "round {round}: {cli} {lo}..{hi}, NITRO {ours} {n}"
            );
        }
        let (lo, n, hi) = (
            counter(&v0["hits"]),
            counter(&vserver["tothits"]),
            counter(&v1["hits"]),
        );
        assert!(
            lo <= n && n <= hi,
            "round {round}: vserver hits {lo}..{hi}, NITRO {n}"
        );
        for (cli, ours) in service_rates {
            let (a, n, b) = (
                counter(&s0[cli]),
                counter(&service[ours]),
                counter(&s1[cli]),
            );
            assert!(
                rate_agrees(a, n, b),
                "round {round}: {cli} {a}/{b}, NITRO {ours} {n}"
            );
            rates_seen += usize::from(n > 0);
        }
        let (a, n, b) = (
            counter(&v0["hitsrate"]),
            counter(&vserver["hitsrate"]),
            counter(&v1["hitsrate"]),
        );
        assert!(
            rate_agrees(a, n, b),
            "round {round}: vserver hitsrate {a}/{b}, NITRO {n}"
        );
        assert_eq!(vserver["state"], "UP");
        std::thread::sleep(std::time::Duration::from_millis(700));
    }
    assert!(rates_seen >= 10, "the load made rates: {rates_seen}");
    let _ = client.wait();
    // At rest, the two agree exactly, gauges included.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let cli = cli_stat(&lab, &["service", "s1"]);
    let ours = nitro(&lab, "GET", "/nitro/v1/stat/service/s1", None, &viewer).body;
    let ours = &ours["service"][0];
    for (c, n) in service_totals
        .iter()
        .chain(&[("activetransactions", "curclntconnections")])
    {
        assert_eq!(counter(&cli[*c]), counter(&ours[*n]), "{c} / {n}");
    }
    assert!(counter(&cli["hits"]) >= 100, "{cli}");
    // The system's counters too: frames in and out as `stat ns` has them per worker, TCP
    // connections opened as the (only) TCP vserver's hits.
    let workers = lab.ctl(&["stat", "ns", "-format", "json"]);
    let workers: Value = serde_json::from_str(
        String::from_utf8_lossy(&workers.stdout)
            .lines()
            .find(|l| l.starts_with('{'))
            .unwrap_or("{}"),
    )
    .unwrap();
    let sum = |k: &str| -> u64 {
        workers["workers"]
            .as_array()
            .map_or(0, |ws| ws.iter().map(|w| counter(&w[k])).sum())
    };
    let ip = nitro(&lab, "GET", "/nitro/v1/stat/protocolip", None, &viewer).body;
    let (rx, tx) = (
        counter(&ip["protocolip"]["iptotrxpkts"]),
        counter(&ip["protocolip"]["iptottxpkts"]),
    );
    // The workers publish their counts about once a second: one interval apart at most.
    assert!(
        rx >= sum("rx") && rx > 1000 && tx >= sum("tx"),
        "{ip} vs {workers}"
    );
    let tcp = nitro(&lab, "GET", "/nitro/v1/stat/protocoltcp", None, &viewer).body;
    let vserver = cli_stat(&lab, &["lb", "vserver", "web"]);
    assert_eq!(
        counter(&tcp["protocoltcp"]["tcptotclientconnopened"]),
        counter(&vserver["hits"]),
        "{tcp}"
    );
    lab.stop();
}

/// Where `scripts/install-deps.sh` puts the NITRO clients from PyPI.
const NITRO_CLIENTS: &str = "/opt/fulcrum-test/nitro-clients/bin";

/// One tag of `tests/scripts/nitro-ansible.yml`, run by ansible-playbook in the client
/// namespace: whether it passed, and what it printed.
fn ansible(lab: &Lab, tag: &str) -> (bool, String) {
    let playbook =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/nitro-ansible.yml");
    let home = lab.dir.join("ansible");
    let vars = json!({
        "nsip": format!("{MGMT}:{PORT}"),
        "nitro_user": "api-admin",
        "nitro_pass": "s3cret pass",
        "vip": VIP.to_string(),
        "ansible_python_interpreter": format!("{NITRO_CLIENTS}/python"),
    })
    .to_string();
    let out = lab.client(&[
        "env",
        "LC_ALL=C.UTF-8",
        "ANSIBLE_NOCOLOR=1",
        "ANSIBLE_RETRY_FILES_ENABLED=0",
        &format!("ANSIBLE_HOME={}", home.display()),
        &format!("ANSIBLE_LOCAL_TEMP={}/tmp", home.display()),
        &format!("{NITRO_CLIENTS}/ansible-playbook"),
        "-i",
        "localhost,",
        &playbook.to_string_lossy(),
        "--tags",
        tag,
        "-e",
        &vars,
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// check_netscaler (the Nagios/Icinga plugin) as the viewer: its exit code (0 OK, 1
/// WARNING, 2 CRITICAL, 3 UNKNOWN) and its line.
fn check_netscaler(lab: &Lab, args: &[&str]) -> (i32, String) {
    let port = PORT.to_string();
    let mut all = vec!["env", "NETSCALER_USER=viewer", "NETSCALER_PASS=look0nly"];
    let program = format!("{NITRO_CLIENTS}/check_netscaler");
    all.extend_from_slice(&[&program, "-H", MGMT, "-P", &port, "--no-ssl"]);
    all.extend_from_slice(args);
    let out = lab.client(&all);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn ansible_and_a_nagios_check_drive_fulcrum_through_nitro() {
    let mut lab = lab_with_management_address("nitroans");
    start(&mut lab, BASE);

    // Ansible builds a server, a service, a vserver and the binding (and reads them back,
    // asserting what it made); traffic then reaches the new service.
    let (ok, log) = ansible(&lab, "build");
    assert!(ok, "{log}");
    assert!(log.contains("failed=0"), "{log}");
    let up = lab.wait_service_state("s-ansible", "UP", std::time::Duration::from_secs(15));
    assert!(up.is_some());
    let answered = backend_answering(&lab, 8081, "backend-2");
    assert_eq!(answered, "backend-2", "traffic reaches what Ansible made");
    let show = String::from_utf8_lossy(&lab.ctl(&["show", "lb", "vserver", "ansible-web"]).stdout)
        .into_owned();
    assert!(
        show.contains("198.18.0.100:8081") && show.contains("s-ansible"),
        "{show}"
    );

    // The Nagios plugin reads the same state: OK while UP, and unsaved changes are seen.
    let (code, line) = check_netscaler(
        &lab,
        &["-C", "state", "-o", "lbvserver", "-n", "ansible-web"],
    );
    assert_eq!(code, 0, "{line}");
    let (code, line) = check_netscaler(&lab, &["-C", "state", "-o", "service", "-n", "s-ansible"]);
    assert_eq!(code, 0, "{line}");
    let (code, line) = check_netscaler(&lab, &["-C", "nsconfig"]);
    assert_eq!(code, 1, "unsaved changes are a WARNING: {line}");
    let (code, line) = check_netscaler(
        &lab,
        &[
            "-C",
            "perfdata",
            "-o",
            "lbvserver",
            "-n",
            "tothits,curclntconnections",
            "-L",
            "name",
        ],
    );
    assert_eq!(code, 0, "{line}");
    // Nagios perfdata, labelled by vserver: `'ansible-web.tothits'=1.0;;`.
    assert!(line.contains("'ansible-web.tothits'="), "{line}");

    // Ansible changes the method, drains, enables, renames and saves.
    let (ok, log) = ansible(&lab, "change");
    assert!(ok, "{log}");
    let config = running_config(&lab);
    // LEASTCONNECTION is the default: the line no longer names a method.
    assert!(
        config.contains("add lb vserver ansible-web HTTP 198.18.0.100 8081\n"),
        "{config}"
    );
    assert!(
        config.contains("bind lb vserver ansible-web s-ansible-2 -weight 30"),
        "{config}"
    );
    let saved = std::fs::read_to_string(lab.dir.join("ns.conf")).unwrap();
    assert!(
        saved.contains("add service s-ansible-2 srv-ansible HTTP 80"),
        "{saved}"
    );
    let (code, line) = check_netscaler(&lab, &["-C", "nsconfig"]);
    assert_eq!(code, 0, "saved: {line}");

    // Its backend stops: the plugin turns CRITICAL.
    lab.stop_backend(2);
    assert!(
        lab.wait_service_state("s-ansible-2", "DOWN", std::time::Duration::from_secs(30))
            .is_some()
    );
    let (code, line) =
        check_netscaler(&lab, &["-C", "state", "-o", "service", "-n", "s-ansible-2"]);
    assert_eq!(code, 2, "{line}");

    // A restart brings back what Ansible saved; then Ansible takes it all away again.
    let saved = std::fs::read_to_string(lab.dir.join("ns.conf")).unwrap();
    lab.stop();
    start(&mut lab, &saved);
    let after = running_config(&lab);
    assert!(
        after.contains("add lb vserver ansible-web HTTP 198.18.0.100 8081"),
        "{after}"
    );
    let (ok, log) = ansible(&lab, "teardown");
    assert!(ok, "{log}");
    let end = running_config(&lab);
    assert!(!end.contains("ansible"), "{end}");
    assert!(
        !std::fs::read_to_string(lab.dir.join("ns.conf"))
            .unwrap()
            .contains("ansible")
    );
    lab.stop();
}

/// 200 NITRO requests a second, reads and writes, for 30 s, while wrk runs through the VIP
/// (the figures are the README's; the test asserts only what must hold).
#[test]
fn nitro_under_load_answers_every_request_while_wrk_sees_no_error() {
    let mut lab = lab_with_management_address("nitroload");
    lab.use_release_build();
    start(&mut lab, BASE);
    let url = format!("http://{VIP}/");
    // wrk alone first: the baseline of the same run.
    let alone = lab.client(&["wrk", "-t1", "-c16", "-d10s", "--timeout", "5s", &url]);
    let alone = String::from_utf8_lossy(&alone.stdout).into_owned();
    let wrk = lab.client_spawn(&["wrk", "-t1", "-c16", "-d34s", "--timeout", "5s", &url]);
    std::thread::sleep(std::time::Duration::from_secs(2));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/nitro_load.py");
    let out = lab.client(&[
        "timeout",
        "90",
        "python3",
        &script.to_string_lossy(),
        &format!("http://{MGMT}:{PORT}"),
        "api-admin",
        "s3cret pass",
        "200",
        "30",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("nitro: {text}");
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let load: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(load["sent"], 6000, "{load}");
    assert_eq!(load["answered"], 6000, "every request answered: {load}");
    assert_eq!(load["failed"], 0, "every answer the expected one: {load}");
    let wrk = wrk.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&wrk.stdout).into_owned();
    eprintln!("wrk alone: {alone}\nwrk with the NITRO load: {report}");
    let rate = |r: &str| -> f64 {
        r.lines()
            .find_map(|l| l.strip_prefix("Requests/sec:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    eprintln!(
        "wrk: {:.0} req/s alone, {:.0} req/s beside 200 NITRO requests/s ({:.2}x)",
        rate(&alone),
        rate(&report),
        rate(&report) / rate(&alone).max(1.0)
    );
    assert!(wrk.status.success(), "{report}");
    assert!(!report.contains("Socket errors"), "{report}");
    assert!(!report.contains("Non-2xx"), "{report}");
    // What the writes left: the flipped method, and no server of theirs.
    let config = running_config(&lab);
    assert!(!config.contains("load-"), "{config}");
    lab.stop();
}
