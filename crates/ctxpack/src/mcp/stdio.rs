//! The stdio transport: the client's lines pass the [`Framing`] layer, which answers bad ones
//! itself and hands good ones to the protocol library through an in-memory pipe; one writer
//! owns stdout, so the library's messages and the framing layer's answers never interleave
//! inside a line.

use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::mcp::Server;
use crate::mcp::framing::{Framing, MAX_LINE, Verdict, too_long};

/// Serves `server` over `input` and `output` until the client closes its side.
pub async fn serve<R, W>(server: Server, input: R, mut output: W) -> Result<(), String>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_library, library_input) = tokio::io::duplex(1 << 16);
    let (library_output, from_library) = tokio::io::duplex(1 << 16);
    let (lines, mut outgoing) = mpsc::unbounded_channel::<Vec<u8>>();

    // One writer owns the output: whole lines only.
    let writer = tokio::spawn(async move {
        while let Some(mut line) = outgoing.recv().await {
            line.push(b'\n');
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    // The library's messages, line by line.
    let replies = lines.clone();
    let relay = tokio::spawn(async move {
        let mut reader = BufReader::new(from_library);
        let mut line = Vec::new();
        while matches!(reader.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
            let end = line.len() - usize::from(line.last() == Some(&b'\n'));
            if replies.send(line[..end].to_vec()).is_err() {
                break;
            }
            line.clear();
        }
    });
    // The client's lines through the framing layer.
    let reader = tokio::spawn(read_client(input, to_library, lines));

    let session = server
        .serve((library_input, library_output))
        .await
        .map_err(|e| format!("the MCP session did not start: {e}"));
    let ended = match session {
        Ok(service) => service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP session ended abnormally: {e}")),
        Err(e) => Err(e),
    };
    reader.abort();
    let _ = relay.await;
    let _ = writer.await;
    ended
}

/// Reads the client's lines (each at most [`MAX_LINE`] bytes, longer ones skipped without
/// buffering them), answers the bad ones and forwards the good ones to the library.
async fn read_client<R, W>(input: R, mut library: W, replies: mpsc::UnboundedSender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(1 << 16, input);
    let mut framing = Framing::default();
    let mut line: Vec<u8> = Vec::new();
    let mut overlong = false;
    loop {
        let (used, complete) = match reader.fill_buf().await {
            // The end of input ends the last line, with or without its newline.
            Ok([]) | Err(_) if line.is_empty() || overlong => break,
            Ok([]) | Err(_) => (0, true),
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    if !overlong {
                        line.extend_from_slice(&buf[..i]);
                    }
                    (i + 1, true)
                }
                None => {
                    if !overlong {
                        line.extend_from_slice(buf);
                    }
                    (buf.len(), false)
                }
            },
        };
        reader.consume(used);
        if line.len() > MAX_LINE {
            overlong = true;
            line = Vec::new();
        }
        if !complete {
            continue;
        }
        if overlong {
            let _ = replies.send(too_long().to_string().into_bytes());
            overlong = false;
            continue;
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        match framing.classify(&line) {
            Verdict::Forward => {
                line.push(b'\n');
                if library.write_all(&line).await.is_err() {
                    break;
                }
            }
            Verdict::Reply(reply) => {
                let _ = replies.send(reply.to_string().into_bytes());
            }
            Verdict::Drop => {}
        }
        line.clear();
    }
    // End of input: the library sees its input close and ends the session.
    let _ = library.shutdown().await;
}
