"""A scriptable JSON-RPC peer on stdio (one JSON message per line, as
`concord serve --framing=newline`), for the client's failure paths that the
real server will not produce on demand (hanging, dying, flooding stderr).

Methods: echo (result = params), flood (1 MiB on stderr, then answer), hang
(never answer), die (exit 3 at once), ask (send the client a `readSource`
request and answer with the client's reply), note (send a notification first).
"""

import json
import sys

out = sys.stdout.buffer


def send(msg):
    out.write(json.dumps(msg).encode() + b"\n")
    out.flush()


asked = {}
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if "method" not in msg:  # the client's answer to our `ask`
        orig = asked.pop(msg["id"])
        send({"jsonrpc": "2.0", "id": orig, "result": msg.get("result", msg.get("error"))})
        continue
    method, rid = msg["method"], msg.get("id")
    if method == "flood":
        sys.stderr.write(("x" * 1023 + "\n") * 1024)
        sys.stderr.flush()
        send({"jsonrpc": "2.0", "id": rid, "result": "flooded"})
    elif method == "hang":
        continue
    elif method == "die":
        sys.exit(3)
    elif method == "ask":
        qid = 1000 + rid
        asked[qid] = rid
        send({"jsonrpc": "2.0", "id": qid, "method": "readSource", "params": msg.get("params")})
    elif method == "note":
        send({"jsonrpc": "2.0", "method": "blocksChanged", "params": {"generation": 7}})
        send({"jsonrpc": "2.0", "id": rid, "result": "noted"})
    elif method == "fail":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "bad", "data": {"field": "x"}}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": msg.get("params")})
