//! `/nitro/v1/stat/…` through the whole API over an in-memory appliance (nothing running:
//! every counter zero): which resources are one object and which a list, counters as
//! strings, and the errors of a bad request.

mod common;
use common::call;

const CONFIG: &str = "add system user viewer look0nly\nbind system user viewer read-only 1\n\
    add service s1 198.18.0.11 HTTP 80\nadd lb vserver web HTTP 198.18.0.100 80\nbind lb vserver web s1\n\
    add serviceGroup g1 HTTP\nbind serviceGroup g1 198.18.0.12 80\n";
const VIEWER: (&str, &str) = ("viewer", "look0nly");

#[test]
fn singletons_are_objects_and_lists_are_lists() {
    let api = common::api(CONFIG);
    for r in ["ns", "protocolip", "protocoltcp"] {
        let (status, body) = call(&api, VIEWER, "GET", &format!("/nitro/v1/stat/{r}"), None);
        assert_eq!(status, 200, "{r}: {body}");
        assert!(body[r].is_object(), "{r}: {body}");
    }
    let (_, body) = call(&api, VIEWER, "GET", "/nitro/v1/stat/protocoltcp", None);
    assert_eq!(body["protocoltcp"]["tcptotclientconnopened"], "0", "{body}");
    let (_, body) = call(&api, VIEWER, "GET", "/nitro/v1/stat/lbvserver", None);
    let v = &body["lbvserver"][0];
    assert_eq!(
        (v["name"].as_str(), v["tothits"].as_str()),
        (Some("web"), Some("0")),
        "{body}"
    );
    let (_, body) = call(
        &api,
        VIEWER,
        "GET",
        "/nitro/v1/stat/servicegroupmember?args=servicegroupname:g1",
        None,
    );
    assert_eq!(
        body["servicegroupmember"][0]["servername"], "198.18.0.12",
        "{body}"
    );
    // Nothing dropped: no list at all, as NITRO answers an empty one.
    let (status, body) = call(&api, VIEWER, "GET", "/nitro/v1/stat/nsdropreason", None);
    assert_eq!(status, 200);
    assert!(body.get("nsdropreason").is_none(), "{body}");
}

#[test]
fn bad_stat_requests_get_nitro_errors() {
    let api = common::api(CONFIG);
    let (status, body) = call(&api, VIEWER, "GET", "/nitro/v1/stat/lbvserver/nosuch", None);
    assert_eq!(
        (status, body["errorcode"].as_u64()),
        (404, Some(258)),
        "{body}"
    );
    let (status, body) = call(
        &api,
        VIEWER,
        "GET",
        "/nitro/v1/stat/servicegroupmember",
        None,
    );
    assert_eq!(
        (status, body["errorcode"].as_u64()),
        (400, Some(1095)),
        "{body}"
    );
    let (status, body) = call(&api, VIEWER, "GET", "/nitro/v1/stat/nosuchthing", None);
    assert_eq!(body["severity"], "ERROR", "{status} {body}");
    let (status, _) = call(&api, VIEWER, "POST", "/nitro/v1/stat/ns", None);
    assert!(status >= 400);
}
