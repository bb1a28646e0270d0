// The JSON-RPC client: framing, the transport paths (against a scripted peer process), and the
// real `concord serve` (CONCORD_BIN) speaking docs/protocol.md.
import { test, test as realTest, describe, after } from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { ConcordClient, FrameDecoder, RpcError, TransportError, encodeFrame } from "../../src/client.js"
import { concordBin, skipWithoutConcord } from "../support/concordbin.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const PEER = path.join(here, "..", "peer", "stdio-peer.js")

describe("FrameDecoder", () => {
  const msgs = [{ jsonrpc: "2.0", id: 1, result: { text: "naïve ✓ 日本" } }, { jsonrpc: "2.0", method: "blocksChanged", params: {} }]
  const wire = Buffer.concat(msgs.map((m) => encodeFrame(m)))

  test("decodes frames split at every byte boundary", () => {
    for (let cut = 0; cut <= wire.length; cut++) {
      const d = new FrameDecoder()
      const out = [...d.push(wire.subarray(0, cut)), ...d.push(wire.subarray(cut))]
      assert.deepEqual(out, msgs, `cut at ${cut}`)
    }
  })

  test("decodes one byte at a time", () => {
    const d = new FrameDecoder()
    const out: unknown[] = []
    for (const b of wire) out.push(...d.push(Buffer.from([b])))
    assert.deepEqual(out, msgs)
  })

  test("Content-Length counts bytes, not characters", () => {
    const frame = encodeFrame({ s: "日本語" })
    const header = frame.toString("utf8").split("\r\n")[0]
    assert.equal(header, `Content-Length: ${Buffer.byteLength(JSON.stringify({ s: "日本語" }))}`)
  })

  test("a body that is not JSON yields an Error and the stream stays in sync", () => {
    const bad = Buffer.from("{oops", "utf8")
    const d = new FrameDecoder()
    const out = d.push(Buffer.concat([Buffer.from(`Content-Length: ${bad.length}\r\n\r\n`), bad, encodeFrame({ ok: 1 })]))
    assert.equal(out.length, 2)
    assert.ok(out[0] instanceof Error)
    assert.deepEqual(out[1], { ok: 1 })
  })

  test("accepts extra headers and any header case", () => {
    const body = '{"a":1}'
    const d = new FrameDecoder()
    const out = d.push(Buffer.from(`content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`))
    assert.deepEqual(out, [{ a: 1 }])
  })

  test("a header without Content-Length is a transport error", () => {
    assert.throws(() => new FrameDecoder().push(Buffer.from("X-Foo: 1\r\n\r\n{}")), TransportError)
  })

  test("refuses frames above the size limit", () => {
    assert.throws(() => new FrameDecoder(10).push(Buffer.from("Content-Length: 11\r\n\r\n")), /exceeds/)
  })
})

describe("ConcordClient transport (scripted peer process)", () => {
  const peer = (timeoutMs = 2000, onNotification?: (m: string, p: unknown) => void) =>
    new ConcordClient({ bin: process.execPath, args: [PEER], timeoutMs, onNotification })

  test("matches responses to requests by id, also when many are in flight", async () => {
    const c = peer()
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => c.request("echo", { i })))
    assert.deepEqual(results, Array.from({ length: 50 }, (_, i) => ({ i })))
    await c.close()
  })

  test("an error response rejects with RpcError carrying code and data", async () => {
    const c = peer()
    const err = await c.request("fail", { field: "anchor" }).catch((e) => e)
    assert.ok(err instanceof RpcError)
    assert.equal(err.code, -32012)
    assert.deepEqual(err.data, { field: "anchor" })
    await c.close()
  })

  test("a request without an answer times out, and the connection keeps working", async () => {
    const c = peer(200)
    const t0 = Date.now()
    await assert.rejects(c.request("hang"), (e: Error) => e instanceof TransportError && /no answer within 200 ms/.test(e.message))
    assert.ok(Date.now() - t0 < 2000)
    assert.deepEqual(await c.request("echo", [1]), [1])
    await c.close()
  })

  test("a peer that dies rejects pending requests at once and later ones immediately", async () => {
    const c = peer(5000)
    const hanging = c.request("hang")
    const dying = c.request("die")
    await assert.rejects(dying, TransportError)
    await assert.rejects(hanging, /exited \(status 3\)/)
    const info = await c.exited
    assert.equal(info.code, 3)
    assert.equal(c.alive, false)
    await assert.rejects(c.request("echo"), /not running/)
    c.notify("exit") // a notification to a dead peer is dropped, not thrown
  })

  test("a binary that does not exist fails cleanly", async () => {
    const c = new ConcordClient({ bin: "/nonexistent/concord", timeoutMs: 500 })
    await assert.rejects(c.request("initialize", {}), TransportError)
    const info = await c.exited
    assert.match(String(info.error?.message), /ENOENT/)
  })

  test("answers a server request it cannot serve with an error", async () => {
    const c = peer()
    const answer = (await c.request("ask")) as { error?: { code: number } }
    assert.equal(answer.error?.code, -32601)
    await c.close()
  })

  test("delivers notifications and skips a non-JSON frame", async () => {
    const seen: [string, unknown][] = []
    const c = peer(2000, (m, p) => seen.push([m, p]))
    await c.request("notifyMe")
    assert.deepEqual(seen, [["blocksChanged", { agents: ["main"], generation: 4 }]])
    assert.equal(await c.request("garbage"), "after-garbage")
    await c.close()
  })

  test("close() sends shutdown and exit and the peer ends with status 0", async () => {
    const c = peer()
    const info = await c.close()
    assert.equal(info.code, 0)
  })
})

describe("ConcordClient against the real concord binary", () => {
  const skip = skipWithoutConcord()
  const test = (name: string, fn: () => Promise<void>) => realTest(name, { skip }, fn)
  const bin = concordBin()!
  const roots: string[] = []
  after(() => roots.forEach((r) => fs.rmSync(r, { recursive: true, force: true })))
  const root = () => {
    const r = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "concord-ts-client-")))
    roots.push(r)
    return r
  }
  const init = (c: ConcordClient, dir: string, watch: "hooks" | "auto" = "hooks") =>
    c.initialize({ protocolVersion: 1, clientInfo: { name: "concord-opencode-test", version: "0" }, roots: [dir], watch })

  test("initialize, observe, out-of-band edit, sync reports the block patched, shutdown + exit", async () => {
    const dir = root()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, "name: demo\nport: 8080\ndebug: false\nlevel: info\nmode: fast\nuser: admin\n")
    const c = new ConcordClient({ bin, timeoutMs: 5000 })
    const res = await init(c, dir)
    assert.equal(res.protocolVersion, 1)
    const uri = pathToFileURL(file).href
    const obs = await c.observe({
      agent: "main",
      turn: 1,
      anchor: "call_1",
      kind: "snapshot",
      sources: [{ uri, range: { start: 1, end: 3 }, text: "name: demo\nport: 8080\ndebug: false" }],
    })
    assert.equal(typeof obs.block, "string")
    assert.ok(obs.block.length > 0)
    assert.equal(obs.status, "valid")
    await c.sync({ agent: "main", turn: 1 })
    fs.writeFileSync(file, "name: demo\nport: 9090\ndebug: false\nlevel: info\nmode: fast\nuser: admin\n")
    const sync = await c.sync({ agent: "main", turn: 2 })
    const b = sync.blocks.find((x) => x.anchor === "call_1")
    assert.ok(b, `sync returned call_1: ${JSON.stringify(sync)}`)
    assert.equal(b.status, "patched")
    assert.equal(b.sources?.[0]?.text, "name: demo\nport: 9090\ndebug: false")
    assert.deepEqual(b.sources?.[0]?.range, { start: 1, end: 3 })
    const info = await c.close(3000)
    assert.equal(info.code, 0)
  })

  test("a rewrite of the file invalidates the block with a re-read notice", async () => {
    const dir = root()
    const file = path.join(dir, "notes.txt")
    const original = Array.from({ length: 12 }, (_, i) => `original line ${i + 1} with some words`).join("\n") + "\n"
    fs.writeFileSync(file, original)
    const c = new ConcordClient({ bin, timeoutMs: 5000 })
    await init(c, dir)
    await c.observe({
      agent: "main",
      turn: 1,
      anchor: "call_9",
      sources: [{ uri: pathToFileURL(file).href, range: { start: 2, end: 6 }, text: original.split("\n").slice(1, 6).join("\n") }],
    })
    await c.sync({ agent: "main", turn: 1 })
    fs.writeFileSync(file, Array.from({ length: 5 }, (_, i) => `completely different ${i}`).join("\n") + "\n")
    const sync = await c.sync({ agent: "main", turn: 2 })
    const b = sync.blocks.find((x) => x.anchor === "call_9")
    assert.ok(b, JSON.stringify(sync))
    assert.equal(b.status, "invalid")
    assert.match(String(b.notice), /notes\.txt/)
    await c.close(3000)
  })

  test("wrong protocol version is refused with -32003", async () => {
    const dir = root()
    const c = new ConcordClient({ bin, timeoutMs: 5000 })
    const err = await c.initialize({ protocolVersion: 99, clientInfo: { name: "t", version: "0" }, roots: [dir] }).catch((e) => e)
    assert.ok(err instanceof RpcError, String(err))
    assert.equal(err.code, -32003)
    c.kill()
  })

  test("a request before initialize is refused with -32002", async () => {
    const c = new ConcordClient({ bin, timeoutMs: 5000 })
    const err = await c.sync({ agent: "main", turn: 1 }).catch((e) => e)
    assert.ok(err instanceof RpcError, String(err))
    assert.equal(err.code, -32002)
    c.kill()
  })

  test("a file outside the roots is refused with -32010", async () => {
    const dir = root()
    const other = root()
    const file = path.join(other, "x.txt")
    fs.writeFileSync(file, "x\n")
    const c = new ConcordClient({ bin, timeoutMs: 5000 })
    await init(c, dir)
    const err = await c
      .observe({ agent: "main", turn: 1, anchor: "a", sources: [{ uri: pathToFileURL(file).href, range: { start: 1, end: 1 }, text: "x" }] })
      .catch((e) => e)
    assert.ok(err instanceof RpcError, String(err))
    assert.equal(err.code, -32010)
    await c.close(3000)
  })

  test("closing stdin ends the server (nothing is left behind when OpenCode dies)", async () => {
    const dir = root()
    const c = new ConcordClient({ bin, timeoutMs: 5000 })
    await init(c, dir, "auto")
    ;(c as any).child.stdin.end()
    const timer = setTimeout(() => c.kill(), 5000)
    const info = await c.exited
    clearTimeout(timer)
    assert.equal(info.signal, null, "exited on its own, not killed")
  })
})
