//! What Fulcrum refuses on purpose, and the reason given: NetScaler features that need a
//! proxy (L7) or that the engine does not have. Every refusal names the feature, so an
//! operator replaying a saved ns.conf knows why a line was not taken.

use crate::error::{CliError, ErrorKind};

/// Option values that name an absent feature: option, values, what they are.
const ABSENT_VALUES: &[(&str, &[&str], &str)] = &[
    (
        "persistenceType",
        &[
            "COOKIEINSERT",
            "SSLSESSION",
            "RULE",
            "URLPASSIVE",
            "CUSTOMSERVERID",
            "CALLID",
            "RTSPSID",
            "DIAMETER",
            "FIXSESSION",
            "USERSESSION",
        ],
        "persistence is an L7 feature; Fulcrum balances at L4",
    ),
    (
        "serviceType",
        &[
            "SSL",
            "SSL_TCP",
            "DTLS",
            "HTTP_QUIC",
            "QUIC",
            "RTSP",
            "SIP_UDP",
            "SIP_TCP",
            "SIP_SSL",
            "MYSQL",
            "MSSQL",
            "ORACLE",
            "DIAMETER",
            "SSL_DIAMETER",
            "RADIUS",
            "SMPP",
            "MQTT",
            "MQTT_TLS",
            "NNTP",
            "RDP",
            "FTP",
            "TFTP",
            "SNMP",
            "DNS_TCP",
            "ADNS",
            "ADNS_TCP",
            "USER_TCP",
            "USER_SSL_TCP",
            "SYSLOGTCP",
            "SYSLOGUDP",
            "FIX",
            "IPFIX",
            "LOGSTREAM",
            "RTSP",
            "PUSH",
            "SSL_PUSH",
            "HTTP_SSL",
        ],
        "is an L7 service type (it needs a proxy); Fulcrum balances at L4",
    ),
    (
        "lbMethod",
        &[
            "URLHASH",
            "DOMAINHASH",
            "TOKEN",
            "CALLIDHASH",
            "LEASTREQUEST",
            "CUSTOMSERVERID",
        ],
        "is an L7 load-balancing method; Fulcrum balances at L4",
    ),
    (
        "soBackupAction",
        &["REDIRECT"],
        "is an HTTP redirection, an L7 feature; Fulcrum balances at L4",
    ),
    (
        "type",
        &[
            "HTTP2",
            "LDNS-DNS",
            "LDNS-PING",
            "LDNS-TCP",
            "CITRIX-STA-SERVICE",
            "CITRIX-STA-SERVICE-NHOP",
            "CITRIX-XML-SERVICE",
            "CITRIX-WEB-INTERFACE",
            "CITRIX-XD-DDC",
            "CITRIX-WI-EXTENDED",
            "CITRIX-AG",
            "CITRIX-AAC-LOGINPAGE",
            "CITRIX-AAC-LAS",
            "CITRIX-ADC-VPX",
            "STOREFRONT",
            "LDAP",
            "RADIUS",
            "RADIUS_ACCOUNTING",
            "MYSQL",
            "MYSQL-ECV",
            "MSSQL-ECV",
            "ORACLE-ECV",
            "POSTGRESQL",
            "SMTP",
            "SMTP-ECV",
            "POP3",
            "IMAP",
            "NNTP",
            "SIP-UDP",
            "SIP-TCP",
            "SIP-TLS",
            "SNMP",
            "RTSP",
            "ARP",
            "ND6",
            "DIAMETER",
            "SMPP",
            "MQTT",
            "KAFKA-AUTOPROVISION",
            "APPC",
            "DNS-TCP",
        ],
        "is a monitor type Fulcrum does not have (it has PING, TCP, HTTP, TCP-ECV, HTTP-ECV, UDP-ECV, DNS, FTP, USER and LOAD)",
    ),
];

/// NetScaler's own internal entities (the GUI's and RPC's services on the loopback), which
/// every saved configuration tunes with `set service nshttpd-gui-127.0.0.1-80 …`.
pub fn is_internal_name(name: &str) -> bool {
    name.starts_with("ns") && (name.contains("-127.0.0.1-") || name.contains("-::1l-"))
}

const L7: &str = "is an L7 feature; Fulcrum balances at L4";
const CLUSTER: &str = "is a cluster option; Fulcrum runs as a single node";

/// Options of features Fulcrum does not have: option, what it is, why it is absent.
const ABSENT_OPTIONS: &[(&str, &str, &str)] = &[
    ("cookieName", "cookie persistence", L7),
    ("httpOnlyCookieFlag", "cookie persistence", L7),
    ("useEncryptedPersistenceCookie", "cookie persistence", L7),
    ("cookiePassphrase", "cookie persistence", L7),
    ("redirectURL", "HTTP redirection", L7),
    ("redirectFromPort", "HTTP-to-HTTPS redirection", L7),
    ("httpsRedirectUrl", "HTTP-to-HTTPS redirection", L7),
    ("httpProfileName", "HTTP profiles", L7),
    ("policyName", "policies", L7),
    ("rule", "policy expressions", L7),
    ("authentication", "authentication", L7),
    ("authnVsName", "authentication", L7),
    ("push", "push vservers", L7),
    ("cacheable", "integrated caching", L7),
    ("sslProfile", "SSL profiles", L7),
    ("CustomServerID", "custom server ID persistence", L7),
    ("serverID", "server ID persistence", L7),
    ("grpcStatusCode", "gRPC health checks", L7),
    ("sslProfileName", "SSL profiles", L7),
    (
        "netProfile",
        "net profiles",
        "is not implemented: traffic to a service is sourced from the SNIPs of its subnet",
    ),
    ("processLocal", "cluster steering", CLUSTER),
    ("pathMonitor", "cluster path monitoring", CLUSTER),
    ("pathMonitorIndv", "cluster path monitoring", CLUSTER),
    ("ownerNode", "cluster node ownership", CLUSTER),
    ("vrID", "VRRP", "is not implemented"),
];

/// The refusal for `-option value` when it names an absent feature.
pub fn value(option: &str, value: &str) -> Option<CliError> {
    ABSENT_VALUES
        .iter()
        .find(|(o, values, _)| {
            o.eq_ignore_ascii_case(option) && values.iter().any(|v| v.eq_ignore_ascii_case(value))
        })
        .map(|(_, _, what)| {
            CliError::arg_value(ErrorKind::NotSupported, option, value)
                .with_detail(format!("{} {what}", value.to_ascii_uppercase()))
        })
}

/// The refusal for `-option` when it belongs to a feature Fulcrum does not have.
pub fn option(option: &str) -> Option<CliError> {
    ABSENT_OPTIONS
        .iter()
        .find(|(o, _, _)| o.eq_ignore_ascii_case(option))
        .map(|(o, what, why)| {
            CliError::arg(ErrorKind::NotSupported, format!("-{o}"))
                .with_detail(format!("-{o} ({what}) {why}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l7_values_and_options_are_named() {
        let e = value("persistenceType", "cookieinsert").unwrap();
        assert_eq!(
            e.to_string(),
            "ERROR: COOKIEINSERT persistence is an L7 feature; Fulcrum balances at L4 [persistenceType, cookieinsert]"
        );
        assert!(value("persistenceType", "SOURCEIP").is_none());
        assert!(
            option("cookieName")
                .unwrap()
                .to_string()
                .contains("(cookie persistence)")
        );
        assert!(option("weight").is_none());
    }
}
