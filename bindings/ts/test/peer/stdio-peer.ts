// A small scripted JSON-RPC peer (a real child process speaking Content-Length frames on stdio),
// used to test the client's transport paths the real server cannot be made to take on demand:
// a request that never gets an answer, a server that dies mid-request, a server→client request.
//   echo        -> result: params
//   fail        -> error {code: -32012, message: "no such block", data: params}
//   hang        -> no answer
//   die         -> exits with status 3 at once
//   ask         -> sends request readSource to the client, answers with the client's reply
//   notifyMe    -> sends notification blocksChanged, then result null
//   garbage     -> writes a frame whose body is not JSON, then result "after-garbage"
//   shutdown    -> result null; `exit` notification ends the process with status 0
import { FrameDecoder, encodeFrame } from "../../src/client.js"

const decoder = new FrameDecoder()
const waiting = new Map<number | string, (reply: unknown) => void>()
let nextId = 1000

const send = (msg: unknown) => process.stdout.write(encodeFrame(msg))

process.stdin.on("data", (chunk: Buffer) => {
  for (const msg of decoder.push(chunk) as any[]) {
    if (msg instanceof Error) continue
    if (msg.method === undefined && waiting.has(msg.id)) {
      waiting.get(msg.id)!(msg)
      waiting.delete(msg.id)
      continue
    }
    const reply = (result: unknown) => send({ jsonrpc: "2.0", id: msg.id, result })
    switch (msg.method) {
      case "echo":
        reply(msg.params ?? null)
        break
      case "fail":
        send({ jsonrpc: "2.0", id: msg.id, error: { code: -32012, message: "no such block", data: msg.params } })
        break
      case "hang":
        break
      case "die":
        process.exit(3)
      case "ask": {
        const id = nextId++
        waiting.set(id, (answer) => reply(answer))
        send({ jsonrpc: "2.0", id, method: "readSource", params: { uri: "res://db/users/42" } })
        break
      }
      case "notifyMe":
        send({ jsonrpc: "2.0", method: "blocksChanged", params: { agents: ["main"], generation: 4 } })
        reply(null)
        break
      case "garbage": {
        const body = Buffer.from("{not json", "utf8")
        process.stdout.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]))
        reply("after-garbage")
        break
      }
      case "shutdown":
        reply(null)
        break
      case "exit":
        process.exit(0)
      default:
        if (msg.id !== undefined) send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: `unknown method ${msg.method}` } })
    }
  }
})
process.stdin.on("end", () => process.exit(0))
