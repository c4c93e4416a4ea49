//! The framing layer in front of the protocol library: every line a client sends is checked
//! here first, so each malformed message gets the JSON-RPC error it deserves (with `"id":
//! null` when its id cannot be read) and the server keeps serving the next one.
//!
//! The protocol library drops some bad lines on purpose, answers others with the wrong code,
//! and ends the session on a notification that arrives before `initialize`. It only ever sees
//! lines that passed [`Framing::classify`]: one JSON-RPC 2.0 object per line, with the
//! parameters of the methods ctxpack serves in the shape the protocol defines.

use serde_json::{Map, Value, json};

/// The longest line accepted, in bytes: a longer one is skipped without being buffered past
/// this limit and answered with a parse error.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// JSON-RPC's parse error.
pub const PARSE_ERROR: i64 = -32700;
/// Invalid Request.
pub const INVALID_REQUEST: i64 = -32600;
/// Invalid params.
pub const INVALID_PARAMS: i64 = -32602;

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Hand it to the protocol library.
    Forward,
    /// Answer it with this JSON-RPC error response, and hand the library nothing.
    Reply(Value),
    /// Nothing to do: a blank line, or a notification that cannot be acted on.
    Drop,
}

/// The state the framing layer needs: whether the session was initialized.
#[derive(Debug, Default)]
pub struct Framing {
    initialized: bool,
}

impl Framing {
    /// The framing of a session whose `initialize` was already forwarded.
    pub fn initialized() -> Framing {
        Framing { initialized: true }
    }
}

/// An error response.
pub fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// The answer to a line that was longer than [`MAX_LINE`].
pub fn too_long() -> Value {
    error(
        Value::Null,
        PARSE_ERROR,
        format!("Parse error: the message is longer than {MAX_LINE} bytes and was skipped"),
    )
}

/// An id as JSON-RPC allows it (a string, a number or null); anything else reads as null.
fn id_of(object: &Map<String, Value>) -> Value {
    match object.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

impl Framing {
    /// Classifies one line (without its line ending).
    pub fn classify(&mut self, line: &[u8]) -> Verdict {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Verdict::Drop;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            return Verdict::Reply(error(Value::Null, PARSE_ERROR, "Parse error: not UTF-8"));
        };
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(e) => {
                return Verdict::Reply(error(
                    Value::Null,
                    PARSE_ERROR,
                    format!("Parse error: {e}"),
                ));
            }
        };
        let Value::Object(object) = value else {
            let why = if value.is_array() {
                "Invalid Request: batches are not supported; send one message per line"
            } else {
                "Invalid Request: a message is a JSON object"
            };
            return Verdict::Reply(error(Value::Null, INVALID_REQUEST, why));
        };
        let id = id_of(&object);
        let is_request = object.contains_key("id");
        if object.get("jsonrpc") != Some(&json!("2.0")) {
            return self.refuse(
                is_request,
                id,
                INVALID_REQUEST,
                "Invalid Request: `jsonrpc` must be \"2.0\"",
            );
        }
        if is_request && id.is_null() {
            return Verdict::Reply(error(
                Value::Null,
                INVALID_REQUEST,
                "Invalid Request: `id` must be a string or a number",
            ));
        }
        let Some(method) = object.get("method") else {
            // A response to a request of the server's.
            return if is_request && (object.contains_key("result") || object.contains_key("error"))
            {
                Verdict::Forward
            } else {
                Verdict::Reply(error(id, INVALID_REQUEST, "Invalid Request: no `method`"))
            };
        };
        let Some(method) = method.as_str() else {
            return self.refuse(
                is_request,
                id,
                INVALID_REQUEST,
                "Invalid Request: `method` must be a string",
            );
        };
        let params = object.get("params");
        if let Some(params) = params
            && !params.is_object()
        {
            return self.refuse(
                is_request,
                id,
                INVALID_PARAMS,
                "Invalid params: `params` must be an object",
            );
        }
        if let Err(why) = check_params(method, params.and_then(Value::as_object)) {
            return self.refuse(
                is_request,
                id,
                INVALID_PARAMS,
                format!("Invalid params: {why}"),
            );
        }
        if !self.initialized {
            let inline = params
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
                .is_some();
            match (is_request, method) {
                (true, "initialize") => self.initialized = true,
                (true, "ping" | "server/discover") => {}
                // The inline-metadata lifecycle starts with any request that carries it.
                (true, _) if inline => self.initialized = true,
                (true, _) => {
                    return Verdict::Reply(error(
                        id,
                        INVALID_REQUEST,
                        "Invalid Request: the session is not initialized; send `initialize` first",
                    ));
                }
                (false, _) => return Verdict::Drop,
            }
        }
        Verdict::Forward
    }

    /// A refused message: requests get an error, notifications get nothing (JSON-RPC never
    /// answers a notification).
    fn refuse(
        &self,
        is_request: bool,
        id: Value,
        code: i64,
        message: impl Into<String>,
    ) -> Verdict {
        if is_request {
            Verdict::Reply(error(id, code, message))
        } else {
            Verdict::Drop
        }
    }
}

/// The parameters of the methods ctxpack serves, checked against their protocol shapes.
fn check_params(method: &str, params: Option<&Map<String, Value>>) -> Result<(), String> {
    let get = |key: &str| params.and_then(|p| p.get(key)).filter(|v| !v.is_null());
    match method {
        "initialize" => {
            let params = params.ok_or("`initialize` needs params")?;
            if !params.get("protocolVersion").is_some_and(Value::is_string) {
                return Err("`protocolVersion` must be a string".into());
            }
            for key in ["capabilities", "clientInfo"] {
                if !params.get(key).is_some_and(Value::is_object) {
                    return Err(format!("`{key}` must be an object"));
                }
            }
        }
        "tools/call" => {
            if !get("name").is_some_and(Value::is_string) {
                return Err("`name` must be the name of a tool (a string)".into());
            }
            if get("arguments").is_some_and(|a| !a.is_object()) {
                return Err("`arguments` must be an object (not its JSON text)".into());
            }
        }
        // ctxpack lists every tool in one page, so no cursor it did not give is valid.
        "tools/list" | "resources/list" | "prompts/list" | "resources/templates/list" => {
            if let Some(cursor) = get("cursor") {
                return Err(format!("invalid cursor {cursor}: there is no next page"));
            }
        }
        _ => {}
    }
    if let Some(meta) = get("_meta")
        && !meta.is_object()
    {
        return Err("`_meta` must be an object".into());
    }
    Ok(())
}
