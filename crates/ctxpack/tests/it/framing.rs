//! The MCP framing layer on its own: every kind of malformed line gets its JSON-RPC error,
//! nothing but `initialize` and `ping` passes before the session is initialized, and no line
//! of arbitrary bytes makes it panic.

use ctxpack::mcp::framing::{Framing, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, Verdict};
use proptest::prelude::*;
use serde_json::{Value, json};

fn code(verdict: &Verdict) -> Option<(i64, Value)> {
    match verdict {
        Verdict::Reply(reply) => Some((
            reply["error"]["code"].as_i64().expect("a code"),
            reply["id"].clone(),
        )),
        _ => None,
    }
}

/// A line, and the error code and id it is answered with (`None`: no answer).
type Case<'a> = (&'a [u8], Option<(i64, Value)>);

#[test]
fn each_malformed_message_gets_its_error() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let cases: &[Case<'_>] = &[
        (b"", None),
        (b"hello", Some((PARSE_ERROR, Value::Null))),
        (br#"{"jsonrpc":"2.0","id":1,"method":"#, Some((PARSE_ERROR, Value::Null))),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\xff\"}", Some((PARSE_ERROR, Value::Null))),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\0ng\"}", Some((PARSE_ERROR, Value::Null))),
        (br#"{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}"#, Some((PARSE_ERROR, Value::Null))),
        (deep.as_bytes(), Some((PARSE_ERROR, Value::Null))),
        (br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\ud800"}}"#, Some((PARSE_ERROR, Value::Null))),
        (b"[1, 2]", Some((INVALID_REQUEST, Value::Null))),
        (b"42", Some((INVALID_REQUEST, Value::Null))),
        (br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, Some((INVALID_REQUEST, json!(3)))),
        (br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, Some((INVALID_REQUEST, Value::Null))),
        (br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}"#, Some((INVALID_PARAMS, json!(4)))),
        (br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"status","arguments":"{}"}}"#, Some((INVALID_PARAMS, json!(5)))),
        (br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"status","arguments":[1]}}"#, Some((INVALID_PARAMS, json!(6)))),
        (br#"{"jsonrpc":"2.0","id":"s","method":"tools/list","params":{"cursor":"next"}}"#, Some((INVALID_PARAMS, json!("s")))),
        (br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[]}"#, Some((INVALID_PARAMS, json!(7)))),
        (br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"status","arguments":null}}"#, None),
        (br#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{}}}"#, None),
    ];
    for (line, expected) in cases {
        let verdict = Framing::initialized().classify(line);
        assert_eq!(
            code(&verdict),
            *expected,
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn nothing_but_initialize_and_ping_before_initialize() {
    let mut framing = Framing::default();
    let notification = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(framing.classify(notification), Verdict::Drop);
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let refused = framing.classify(list);
    assert_eq!(code(&refused), Some((INVALID_REQUEST, json!(1))));
    let Verdict::Reply(reply) = refused else {
        unreachable!()
    };
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("send `initialize` first"))
    );
    assert_eq!(
        framing.classify(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#),
        Verdict::Forward
    );
    let init = br#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    assert_eq!(framing.classify(init), Verdict::Forward);
    assert_eq!(framing.classify(notification), Verdict::Forward);
    assert_eq!(framing.classify(list), Verdict::Forward);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    /// Any bytes: no panic, and every reply is a JSON-RPC error with a readable id.
    #[test]
    fn any_line_gets_a_well_formed_verdict(line in prop::collection::vec(any::<u8>(), 0..300), init in any::<bool>()) {
        let mut framing = if init { Framing::initialized() } else { Framing::default() };
        match framing.classify(&line) {
            Verdict::Reply(reply) => {
                prop_assert_eq!(&reply["jsonrpc"], "2.0");
                prop_assert!(reply["id"].is_null() || reply["id"].is_string() || reply["id"].is_number());
                let code = reply["error"]["code"].as_i64().expect("a code");
                prop_assert!((-32700..=-32600).contains(&code));
            }
            Verdict::Forward => {
                let value: Value = serde_json::from_slice(&line).expect("forwarded lines are JSON");
                prop_assert!(value.is_object());
            }
            Verdict::Drop => {}
        }
    }

    /// Messages shaped like JSON-RPC, with arbitrary ids, methods and params.
    #[test]
    fn shaped_messages_keep_their_id(id in prop_oneof![Just(json!(1)), Just(json!("a")), Just(Value::Null), Just(json!([1]))],
                                     method in prop::sample::select(vec!["tools/call", "tools/list", "ping", "x/y", "initialize"]),
                                     params in prop_oneof![Just(Value::Null), Just(json!({})), Just(json!({"name": 1})), Just(json!("p"))]) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        if let Verdict::Reply(reply) = Framing::initialized().classify(line.as_bytes()) {
            let expected = if id.is_string() || id.is_number() { id.clone() } else { Value::Null };
            prop_assert_eq!(&reply["id"], &expected);
        }
    }
}
