//! SNMP v1/v2c GET for LOAD monitors: the request, and the numeric values of the reply.
//! STRING values are refused (NetScaler: a load cannot be computed from a string).

use rasn::types::{Integer, ObjectIdentifier, OctetString};

/// Why a reply gives no load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnmpError {
    Malformed,
    /// Not the reply to our request.
    OtherRequest,
    /// `error-status` set by the agent (noSuchName, genErr, …).
    Agent(u32),
    /// The OID holds no value (noSuchObject / noSuchInstance / endOfMibView).
    NoSuchInstance,
    /// The OID holds a string or an OID: no load from that.
    NotNumeric,
}

fn oid(arcs: &[u32]) -> Option<ObjectIdentifier> {
    ObjectIdentifier::new(arcs.to_vec())
}

/// A GET request for `oids` (V1 when `v1`, else v2c).
pub fn get_request(
    v1: bool,
    community: &str,
    request_id: i32,
    oids: &[Vec<u32>],
) -> Option<Vec<u8>> {
    let community = OctetString::from(community.as_bytes().to_vec());
    if v1 {
        use rasn_snmp::v1::{GetRequest, Message, Pdu, Pdus, VarBind};
        let variable_bindings = oids
            .iter()
            .map(|o| {
                Some(VarBind {
                    name: oid(o)?,
                    value: rasn_smi::v1::ObjectSyntax::Simple(rasn_smi::v1::SimpleSyntax::Empty),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let pdu = Pdu {
            request_id: request_id.into(),
            error_status: 0.into(),
            error_index: 0.into(),
            variable_bindings,
        };
        let msg = Message {
            version: Integer::from(0),
            community,
            data: Pdus::GetRequest(GetRequest(pdu)),
        };
        rasn::ber::encode(&msg).ok()
    } else {
        use rasn_snmp::v2::{GetRequest, Pdu, Pdus, VarBind, VarBindValue};
        use rasn_snmp::v2c::Message;
        let variable_bindings = oids
            .iter()
            .map(|o| {
                Some(VarBind {
                    name: oid(o)?,
                    value: VarBindValue::Unspecified,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let pdu = Pdu {
            request_id,
            error_status: 0,
            error_index: 0,
            variable_bindings,
        };
        let msg = Message {
            version: Integer::from(1),
            community,
            data: Pdus::GetRequest(GetRequest(pdu)),
        };
        rasn::ber::encode(&msg).ok()
    }
}

fn integer(i: &Integer) -> Result<u64, SnmpError> {
    u64::try_from(i.clone()).map_err(|_| SnmpError::NotNumeric)
}

/// The numeric values of a GET reply, in request order.
pub fn parse_response(v1: bool, request_id: i32, bytes: &[u8]) -> Result<Vec<u64>, SnmpError> {
    if v1 {
        use rasn_smi::v1::{ApplicationSyntax, ObjectSyntax, SimpleSyntax};
        use rasn_snmp::v1::{Message, Pdus};
        let msg: Message<Pdus> = rasn::ber::decode(bytes).map_err(|_| SnmpError::Malformed)?;
        let Pdus::GetResponse(r) = msg.data else {
            return Err(SnmpError::Malformed);
        };
        let pdu = r.0;
        if pdu.request_id != Integer::from(request_id) {
            return Err(SnmpError::OtherRequest);
        }
        let status = integer(&pdu.error_status)?;
        if status != 0 {
            return Err(SnmpError::Agent(status as u32));
        }
        pdu.variable_bindings
            .iter()
            .map(|vb| match &vb.value {
                ObjectSyntax::Simple(SimpleSyntax::Number(n)) => integer(n),
                ObjectSyntax::Simple(SimpleSyntax::Empty) => Err(SnmpError::NoSuchInstance),
                ObjectSyntax::Simple(_) => Err(SnmpError::NotNumeric),
                ObjectSyntax::ApplicationWide(a) => match a {
                    ApplicationSyntax::Counter(c) => Ok(u64::from(c.0)),
                    ApplicationSyntax::Gauge(g) => Ok(u64::from(g.0)),
                    ApplicationSyntax::Ticks(t) => Ok(u64::from(t.0)),
                    _ => Err(SnmpError::NotNumeric),
                },
            })
            .collect()
    } else {
        use rasn_smi::v2::{ApplicationSyntax, ObjectSyntax, SimpleSyntax};
        use rasn_snmp::v2::{Pdus, VarBindValue};
        use rasn_snmp::v2c::Message;
        let msg: Message<Pdus> = rasn::ber::decode(bytes).map_err(|_| SnmpError::Malformed)?;
        let Pdus::Response(r) = msg.data else {
            return Err(SnmpError::Malformed);
        };
        let pdu = r.0;
        if pdu.request_id != request_id {
            return Err(SnmpError::OtherRequest);
        }
        if pdu.error_status != 0 {
            return Err(SnmpError::Agent(pdu.error_status));
        }
        pdu.variable_bindings
            .iter()
            .map(|vb| match &vb.value {
                VarBindValue::Value(ObjectSyntax::Simple(SimpleSyntax::Integer(n))) => integer(n),
                VarBindValue::Value(ObjectSyntax::Simple(_)) => Err(SnmpError::NotNumeric),
                VarBindValue::Value(ObjectSyntax::ApplicationWide(a)) => match a {
                    ApplicationSyntax::Counter(c) => Ok(u64::from(c.0)),
                    ApplicationSyntax::Unsigned(g) => Ok(u64::from(g.0)),
                    ApplicationSyntax::Ticks(t) => Ok(u64::from(t.0)),
                    ApplicationSyntax::BigCounter(c) => Ok(c.0),
                    _ => Err(SnmpError::NotNumeric),
                },
                _ => Err(SnmpError::NoSuchInstance),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The agent's side, built with the same library (the lab test talks to a real snmpd).
    fn v2_reply(request_id: i32, value: rasn_snmp::v2::VarBindValue) -> Vec<u8> {
        use rasn_snmp::v2::{Pdu, Pdus, Response, VarBind};
        use rasn_snmp::v2c::Message;
        let vb = VarBind {
            name: ObjectIdentifier::new(vec![1, 3, 6, 1, 4, 1, 99999, 2, 0]).unwrap(),
            value,
        };
        let pdu = Pdu {
            request_id,
            error_status: 0,
            error_index: 0,
            variable_bindings: vec![vb],
        };
        rasn::ber::encode(&Message {
            version: Integer::from(1),
            community: OctetString::from(b"public".to_vec()),
            data: Pdus::Response(Response(pdu)),
        })
        .unwrap()
    }

    #[test]
    fn requests_encode_and_replies_decode() {
        use rasn_smi::v2::{ObjectSyntax, SimpleSyntax};
        use rasn_snmp::v2::VarBindValue;
        let oids = vec![vec![1, 3, 6, 1, 4, 1, 99999, 2, 0]];
        assert!(get_request(false, "public", 7, &oids).is_some());
        assert!(get_request(true, "public", 7, &oids).is_some());
        let ok = v2_reply(
            7,
            VarBindValue::Value(ObjectSyntax::Simple(SimpleSyntax::Integer(Integer::from(
                42,
            )))),
        );
        assert_eq!(parse_response(false, 7, &ok), Ok(vec![42]));
        assert_eq!(parse_response(false, 8, &ok), Err(SnmpError::OtherRequest));
        let text = v2_reply(
            7,
            VarBindValue::Value(ObjectSyntax::Simple(SimpleSyntax::String(
                OctetString::from(b"70".to_vec()),
            ))),
        );
        assert_eq!(parse_response(false, 7, &text), Err(SnmpError::NotNumeric));
        assert_eq!(
            parse_response(false, 7, &v2_reply(7, VarBindValue::NoSuchInstance)),
            Err(SnmpError::NoSuchInstance)
        );
        assert_eq!(
            parse_response(false, 7, b"garbage"),
            Err(SnmpError::Malformed)
        );
    }
}
