// The plugin's hooks driven directly, the way OpenCode drives them (tool.execute.after, then
// experimental.chat.messages.transform on a fresh copy of the history before every model call),
// against the real concord binary; and the pass-through paths when the binary is missing or hangs.
import { test, describe, after } from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { ConcordBinding, rebuiltSince, type BindingInit } from "../../src/binding.js"
import { BindingBackoffMs, BindingMaxRestarts } from "../../src/wire.js"
import { concordBin, skipWithoutConcord } from "../support/concordbin.js"
import { openCodeRead } from "../support/expected.js"

const tmpRoots: string[] = []
after(() => {
  for (const r of tmpRoots) fs.rmSync(r, { recursive: true, force: true })
})
function tmpdir(): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "concord-ts-binding-")))
  tmpRoots.push(d)
  return d
}

interface Harness {
  binding: ConcordBinding
  hooks: ReturnType<ConcordBinding["hooks"]>
  /** Warnings sent through OpenCode's client (app.log level warn). */
  readonly warnings: string[]
  logged: any[]
  toasts: any[]
  /** What the plugin wrote to its stderr (debug lines only; never warnings). */
  stderr: string[]
  /** Stored tool parts, as OpenCode keeps them (the transform gets a fresh copy each time). */
  parts: any[]
  sessionID: string
  /** Runs a read the way OpenCode does: the tool result, then tool.execute.after. */
  read(callID: string, file: string, offset?: number, limit?: number): Promise<void>
  tool(callID: string, tool: string, args: any, output: string, metadata?: any): Promise<void>
  /** One model call: the transform on a fresh copy; returns the copy's outputs by call id. */
  modelCall(): Promise<Map<string, string>>
}

function harness(dir: string, init: Partial<BindingInit> = {}, sessionID = "ses_test"): Harness {
  const stderr: string[] = []
  const logged: any[] = []
  const toasts: any[] = []
  const client = { app: { log: async (opts: any) => void logged.push(opts) }, tui: { showToast: async (opts: any) => void toasts.push(opts) } }
  const binding = new ConcordBinding({
    directory: dir,
    worktree: dir,
    client,
    stderr: (t) => void stderr.push(t),
    env: { PATH: process.env.PATH, ...(concordBin() ? { CONCORD_BIN: concordBin() } : {}) },
    ...init,
    // The tests of the repairs themselves pin inplace (the default is auto); the placement tests
    // set their own.
    options: { timeoutMs: 5000, placement: "inplace", ...init.options },
  })
  const hooks = binding.hooks()
  const parts: any[] = []
  const h: Harness = {
    binding,
    hooks,
    get warnings() {
      return logged.filter((l) => l.body.level === "warn").map((l) => l.body.message as string)
    },
    logged,
    toasts,
    stderr,
    parts,
    sessionID,
    async read(callID, file, offset, limit) {
      const r = openCodeRead(file, offset, limit)
      parts.push({ id: `prt_${callID}`, sessionID, messageID: "msg_1", type: "tool", tool: "read", callID, state: { status: "completed", input: r.input, output: r.output, metadata: r.metadata, title: "", time: { start: 1, end: 2 } } })
      await hooks["tool.execute.after"]({ tool: "read", sessionID, callID, args: r.input }, { title: "", output: r.output, metadata: r.metadata })
    },
    async tool(callID, tool, args, output, metadata = {}) {
      parts.push({ id: `prt_${callID}`, sessionID, messageID: "msg_1", type: "tool", tool, callID, state: { status: "completed", input: args, output, metadata, title: "", time: { start: 1, end: 2 } } })
      await hooks["tool.execute.after"]({ tool, sessionID, callID, args }, { title: "", output, metadata })
    },
    async modelCall() {
      const messages = [
        { info: { id: "msg_0", sessionID, role: "user" }, parts: [{ id: "prt_u", sessionID, messageID: "msg_0", type: "text", text: "go" }] },
        { info: { id: "msg_1", sessionID, role: "assistant" }, parts: structuredClone(parts) },
      ]
      await hooks["experimental.chat.messages.transform"]({}, { messages })
      return new Map(messages[1]!.parts.map((p: any) => [p.callID, p.state.output]))
    },
  }
  return h
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function waitGone(pid: number, ms = 3000): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (!alive(pid)) return true
    await new Promise((r) => setTimeout(r, 25))
  }
  return !alive(pid)
}

describe("pass-through without a working concord", () => {
  test("missing binary: hooks never throw, outputs untouched, exactly one warning (stderr and app.log)", async () => {
    const dir = tmpdir()
    const file = path.join(dir, "a.txt")
    fs.writeFileSync(file, "one\ntwo\n")
    const h = harness(dir, { env: { PATH: "", CONCORD_BIN: path.join(dir, "no-such-concord") } })
    await h.read("call_1", file)
    const original = h.parts[0].state.output
    fs.writeFileSync(file, "one\nTWO\n")
    for (let i = 0; i < 3; i++) assert.equal((await h.modelCall()).get("call_1"), original)
    // A second session of the same OpenCode instance does not warn again.
    const h2Messages = [{ info: { sessionID: "ses_other" }, parts: structuredClone(h.parts) }]
    await h.hooks["experimental.chat.messages.transform"]({}, { messages: h2Messages })
    assert.equal(h.warnings.length, 1, h.warnings.join("\n"))
    assert.match(h.warnings[0]!, /\[concord\] WARNING: .*no-such-concord.*passed to the model unrepaired/)
    assert.equal(h.logged.length, 1)
    assert.equal(h.logged[0].body.service, "concord")
    assert.equal(h.logged[0].body.level, "warn")
    assert.equal(h.toasts.length, 1, "and one toast")
    assert.equal(h.toasts[0].body.variant, "warning")
    assert.deepEqual(h.stderr, [], "nothing written raw to stderr (the TUI's screen)")
    await h.hooks.dispose()
  })

  test("debug lines carry one [concord] prefix (issue 37: `[concord] concord: 1 erratum at the tail`)", async () => {
    const dir = tmpdir()
    const file = path.join(dir, "a.txt")
    fs.writeFileSync(file, "one\ntwo\n")
    const missing = harness(dir, { env: { PATH: "", CONCORD_BIN: path.join(dir, "no-such-concord"), CONCORD_OPENCODE_DEBUG: "1" } })
    await missing.read("call_1", file)
    await missing.modelCall()
    await missing.hooks.dispose()
    const lines = missing.stderr.join("").split("\n").filter(Boolean)
    assert.ok(lines.some((l) => l.startsWith("[concord] WARNING: ")), lines.join("\n"))
    if (!skipWithoutConcord()) {
      const h = harness(dir, { env: { PATH: process.env.PATH, CONCORD_BIN: concordBin(), CONCORD_OPENCODE_DEBUG: "1" } })
      await h.read("call_2", file)
      await h.modelCall()
      fs.writeFileSync(file, "one\nTWO\n")
      await h.modelCall()
      await h.hooks.dispose()
      assert.deepEqual(h.binding.stats.batches, ["concord: 1 read repaired"], "OpenCode's log keeps its form")
      lines.push(...h.stderr.join("").split("\n").filter(Boolean))
      assert.ok(lines.includes("[concord] 1 read repaired"), lines.join("\n"))
    }
    for (const l of lines) assert.ok(l.startsWith("[concord] ") && !/^\[concord\] (\[concord\]|concord:)/.test(l), `a doubled prefix: ${l}`)
  })

  test("no binary anywhere: the warning says how to provide one", async () => {
    const dir = tmpdir()
    const h = harness(dir, { env: { PATH: dir }, moduleDir: dir })
    await h.modelCall()
    assert.equal(h.warnings.length, 1)
    // Every place looked at is named.
    assert.match(h.warnings[0]!, /concord binary not found; looked at: /)
    for (const place of [path.join(dir, "concord"), path.join(dir, "bin", "concord")]) assert.ok(h.warnings[0]!.includes(place), place)
    assert.match(h.warnings[0]!, /Set CONCORD_BIN/)
    assert.deepEqual(h.stderr, [])
  })

  test("a binary that never answers: initialize times out, the child is killed, one warning", async () => {
    const dir = tmpdir()
    const hang = path.join(dir, "hang-concord")
    fs.writeFileSync(hang, "#!/bin/sh\necho $$ > \"$0.pid\"\nexec sleep 60\n", { mode: 0o755 })
    const h = harness(dir, { env: { PATH: process.env.PATH, CONCORD_BIN: hang }, options: { startTimeoutMs: 300 } })
    const t0 = Date.now()
    await h.modelCall()
    assert.ok(Date.now() - t0 < 3000, "bounded by the start timeout")
    assert.equal(h.warnings.length, 1)
    assert.match(h.warnings[0]!, /no answer within 300 ms/)
    const pid = Number(fs.readFileSync(hang + ".pid", "utf8"))
    assert.ok(await waitGone(pid), "the hung child was killed")
  })

  // A binary that speaks another protocol version: either it answers initialize with its own
  // version, or it refuses ours with -32003 as concord serve does. Named once, never retried.
  for (const [name, answer] of [
    ["answers version 2", `{ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 2, serverInfo: { name: "concord" }, capabilities: {} } }`],
    ["refuses with -32003", `{ jsonrpc: "2.0", id: m.id, error: { code: -32003, message: "unsupported protocol version 1", data: { supported: [2] } } }`],
  ] as const) {
    test(`a binary of another protocol version (${name}): one warning naming both versions, pass-through`, async () => {
      const dir = tmpdir()
      const peer = path.join(dir, "peer.cjs")
      fs.writeFileSync(peer, `let buf = Buffer.alloc(0)
process.stdin.on("data", (c) => {
  buf = Buffer.concat([buf, c])
  for (;;) {
    const h = buf.indexOf("\\r\\n\\r\\n"); if (h < 0) return
    const n = Number(/Content-Length: (\\d+)/i.exec(buf.subarray(0, h).toString())[1])
    if (buf.length < h + 4 + n) return
    const m = JSON.parse(buf.subarray(h + 4, h + 4 + n).toString()); buf = buf.subarray(h + 4 + n)
    if (m.method === "initialize") { const b = Buffer.from(JSON.stringify(${answer})); process.stdout.write("Content-Length: " + b.length + "\\r\\n\\r\\n"); process.stdout.write(b) }
  }
})
process.stdin.on("end", () => process.exit(0))
`)
      const bin = path.join(dir, "concord")
      fs.writeFileSync(bin, `#!/bin/sh\nexec '${process.execPath}' '${peer}'\n`, { mode: 0o755 })
      const file = path.join(dir, "a.txt")
      fs.writeFileSync(file, "one\ntwo\n")
      const h = harness(dir, { env: { PATH: process.env.PATH, CONCORD_BIN: bin } })
      await h.read("call_1", file)
      const original = h.parts[0].state.output
      for (let i = 0; i < 3; i++) assert.equal((await h.modelCall()).get("call_1"), original)
      assert.equal(h.warnings.length, 1, h.warnings.join("\n"))
      assert.match(h.warnings[0]!, /speaks protocol \[2\], concord-opencode \S+ needs 1/)
      assert.deepEqual(h.stderr, [])
      await h.hooks.dispose()
    })
  }

  test("hooks swallow malformed input", async () => {
    const dir = tmpdir()
    const h = harness(dir, { env: { PATH: "" } })
    await h.hooks["experimental.chat.messages.transform"]({}, undefined as any)
    await h.hooks["experimental.chat.messages.transform"]({}, { messages: [null, { info: {}, parts: "x" }] } as any)
    await h.hooks["experimental.chat.messages.transform"]({}, { messages: [{ info: { sessionID: "s" }, parts: [{ type: "tool", tool: "read", callID: 5, state: null }] }] } as any)
    await h.hooks["tool.execute.after"](undefined as any, undefined as any)
    await h.hooks["tool.execute.after"]({ tool: "read", sessionID: "s", callID: "c", args: null } as any, { output: 42 } as any)
    await h.hooks.event(undefined as any)
    await h.hooks.event({ event: { type: "session.deleted", properties: null } } as any)
    await h.hooks.dispose()
  })
})

// changedFiles (which files an edit-type tool wrote) moved into the server's recognizer:
// recognize/writes_test.go TestOpenCodeWrites holds its cases.

/** The server feature of issue 10 bug 4 (CONTRACTS.md): observe of a missing file registers an invalid block. */
async function missingFileRefused(dir: string): Promise<string | false> {
  const { ConcordClient, PROTOCOL_VERSION, RpcError } = await import("../../src/client.js")
  const c = new ConcordClient({ bin: concordBin()!, args: ["serve"] })
  try {
    await c.initialize({ protocolVersion: PROTOCOL_VERSION, clientInfo: { name: "probe", version: "0" }, roots: [dir] })
    await c.observe({ agent: "main", turn: 0, anchor: "p", sources: [{ uri: `file://${dir}/no-such-file.txt`, text: "x" }] })
    return false
  } catch (err) {
    return err instanceof RpcError
      ? `SKIPPED: this concord refuses observe of a missing file (${err.message}); needs the "arch" core feature (invalid block for a missing file)`
      : false
  } finally {
    await c.close(500)
  }
}

describe("with the real concord binary", () => {
  const skip = skipWithoutConcord()
  const config = "name: demo\nport: 8080\ndebug: false\nlevel: info\nmode: fast\nuser: admin\nretries: 3\ntimeout: 30\nregion: eu\nowner: ops\n"

  test("an out-of-band local edit: the next model call sees the patched lines in OpenCode's format, on every call", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    await h.read("call_1", file)
    const before = await h.modelCall()
    assert.equal(before.get("call_1"), h.parts[0].state.output, "unchanged file: original output")
    fs.writeFileSync(file, config.replace("port: 8080", "port: 9090"))
    const expected = openCodeRead(file).output
    for (let i = 0; i < 3; i++) {
      const out = await h.modelCall()
      assert.equal(out.get("call_1"), expected, `call ${i + 1}`)
    }
    assert.equal(h.warnings.length, 0, h.warnings.join("\n"))
    await h.hooks.dispose()
  })

  test("a partial read is repaired at its new line numbers with OpenCode's footer", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    await h.read("call_1", file, 3, 4) // lines 3-6: debug, level, mode, user
    fs.writeFileSync(file, "# header\n# more\n" + config.replace("mode: fast", "mode: slow"))
    const out = (await h.modelCall()).get("call_1")!
    assert.equal(out, openCodeRead(file, 5, 4).output)
    assert.match(out, /\n7: mode: slow\n/)
    assert.match(out, /\(Showing lines 5-8 of 12\. Use offset=9 to continue\.\)/)
    await h.hooks.dispose()
  })

  test("a rewritten file: a whole-file read is refreshed (Concord's default), a partial read becomes the re-read notice", { skip }, async (t) => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    t.after(() => h.hooks.dispose())
    await h.read("call_1", file)
    await h.read("call_2", file, 2, 3)
    fs.writeFileSync(file, "totally: different\ncontent: here\n")
    const seen = await h.modelCall()
    assert.equal(seen.get("call_1"), openCodeRead(file).output, "the re-read would return exactly this")
    const out = seen.get("call_2")!
    assert.match(out, /\[concord\]/)
    assert.match(out, /config\.yaml/)
    assert.doesNotMatch(out, /8080/)
  })

  test("annotate: the server's show is applied as given (the read, a blank line, the notice); valid again, the original output is back", { skip }, async (t) => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir, { options: { policy: { global: { local: "annotate", drift: "annotate" } } } })
    t.after(() => h.hooks.dispose())
    await h.read("call_1", file, 2, 3)
    const original = h.parts[0].state.output as string
    fs.writeFileSync(file, config.replace("debug: false", "debug: true"))
    const out = (await h.modelCall()).get("call_1")!
    // The view's trailing newlines trimmed, then "\n\n" and the notice: composed by the server alone.
    assert.ok(out.startsWith(original.trimEnd() + "\n\n[concord] "), out)
    assert.match(out, /config\.yaml/)
    assert.equal(h.binding.stats.notices, 1)
    fs.writeFileSync(file, config)
    assert.equal((await h.modelCall()).get("call_1"), original, "valid again: no show, the original output stands")
  })

  test("the agent's own edit (tool.execute.after on edit) repairs its earlier read", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir, { options: { watch: "hooks" } })
    await h.read("call_1", file)
    await h.modelCall()
    fs.writeFileSync(file, config.replace("retries: 3", "retries: 5"))
    await h.tool("call_2", "edit", { filePath: file, oldString: "retries: 3", newString: "retries: 5" }, "Edit applied successfully.")
    const out = await h.modelCall()
    assert.equal(out.get("call_1"), openCodeRead(file).output)
    assert.equal(out.get("call_2"), "Edit applied successfully.", "the edit result itself is untouched")
    await h.hooks.dispose()
  })

  test("a resumed session: reads only in the history are registered from their stored output", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    const r = openCodeRead(file, 2, 3)
    // Stored by an earlier OpenCode run; this plugin instance never saw tool.execute.after.
    // No metadata: the output is parsed.
    h.parts.push({ type: "tool", tool: "read", callID: "call_old", state: { status: "completed", input: r.input, output: r.output, time: { start: 1, end: 2 } } })
    await h.modelCall()
    fs.writeFileSync(file, config.replace("debug: false", "debug: true"))
    const out = (await h.modelCall()).get("call_old")!
    assert.equal(out, openCodeRead(file, 2, 3).output)
    await h.hooks.dispose()
  })

  test("bash results are events: registered, never rewritten", { skip }, async () => {
    const dir = tmpdir()
    const h = harness(dir)
    await h.tool("call_1", "bash", { command: "echo hi" }, "hi\n")
    const out = await h.modelCall()
    assert.equal(out.get("call_1"), "hi\n")
    assert.equal(h.warnings.length, 0, h.warnings.join("\n"))
    await h.hooks.dispose()
  })

  test("a compacted read is released and not rewritten", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    await h.read("call_1", file)
    await h.modelCall()
    h.parts[0].state.time.compacted = 3
    fs.writeFileSync(file, config.replace("owner: ops", "owner: dev"))
    const out = await h.modelCall()
    assert.equal(out.get("call_1"), h.parts[0].state.output)
    assert.equal(h.warnings.length, 0, h.warnings.join("\n"))
    await h.hooks.dispose()
  })

  test("one concord per session; dispose stops every child; session.deleted stops one", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const a = harness(dir, {}, "ses_a")
    await a.read("call_1", file)
    for (const sid of ["ses_b", "ses_c"]) {
      await a.hooks["experimental.chat.messages.transform"]({}, { messages: [{ info: { sessionID: sid }, parts: [] }] })
    }
    const pids = a.binding.childPids()
    assert.deepEqual([...pids.keys()].sort(), ["ses_a", "ses_b", "ses_c"])
    assert.equal(new Set(pids.values()).size, 3)
    await a.hooks.event({ event: { type: "session.deleted", properties: { info: { id: "ses_b" } } } } as any)
    assert.ok(await waitGone(pids.get("ses_b")!), "session.deleted stopped its concord")
    assert.ok(alive(pids.get("ses_a")!))
    await a.hooks.dispose()
    for (const sid of ["ses_a", "ses_c"]) assert.ok(await waitGone(pids.get(sid)!), `${sid} stopped by dispose`)
    assert.equal(a.warnings.length, 0, a.warnings.join("\n"))
  })

  test("concord killed mid-session: restarted at the next model call, what is in the context registered again, the change made while it was dead repaired", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    await h.read("call_1", file)
    await h.read("call_2", file, 2, 3)
    fs.writeFileSync(file, config.replace("region: eu", "region: us"))
    assert.equal((await h.modelCall()).get("call_1"), openCodeRead(file).output)
    const pid = h.binding.childPids().get(h.sessionID)!
    process.kill(pid, "SIGKILL")
    assert.ok(await waitGone(pid))
    await new Promise((r) => setTimeout(r, 50))
    // Changed while no concord was running: seen by nobody until the restart.
    fs.writeFileSync(file, config.replace("region: eu", "region: ap").replace("debug: false", "debug: true"))
    const out = await h.modelCall()
    const newPid = h.binding.childPids().get(h.sessionID)
    assert.ok(newPid !== undefined && newPid !== pid, "a new concord serves the session")
    assert.equal(out.get("call_1"), openCodeRead(file).output, "the whole-file read shows the change made while concord was dead")
    assert.equal(out.get("call_2"), openCodeRead(file, 2, 3).output, "so does the partial read")
    assert.equal(h.warnings.length, 0, h.warnings.join("\n"))
    assert.equal(h.binding.stats.restarts, 1)
    // Later changes keep being repaired by the new child.
    fs.writeFileSync(file, config.replace("region: eu", "region: sa"))
    assert.equal((await h.modelCall()).get("call_1"), openCodeRead(file).output)
    await h.hooks.dispose()
    assert.ok(await waitGone(newPid!))
  })

  test("concord killed and impossible to restart: bounded retries, then pass-through with one warning and the last views kept", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const flag = path.join(dir, "allow")
    fs.writeFileSync(flag, "")
    const wrapper = path.join(dir, "concord-once")
    fs.writeFileSync(wrapper, `#!/bin/sh\n[ -e '${flag}' ] || { echo 'gone for good' >&2; exit 3; }\nexec '${concordBin()}' "$@"\n`, { mode: 0o755 })
    const h = harness(dir, { env: { PATH: process.env.PATH, CONCORD_BIN: wrapper } })
    await h.read("call_1", file)
    fs.writeFileSync(file, config.replace("region: eu", "region: us"))
    const repaired = (await h.modelCall()).get("call_1")
    assert.equal(repaired, openCodeRead(file).output)
    fs.rmSync(flag)
    const pid = h.binding.childPids().get(h.sessionID)!
    process.kill(pid, "SIGKILL")
    assert.ok(await waitGone(pid))
    const killed = Date.now()
    const until = killed + 10_000
    let calls = 0
    while (h.warnings.length === 0 && Date.now() < until) {
      assert.equal((await h.modelCall()).get("call_1"), repaired, "the last view is still applied")
      calls++
    }
    assert.equal(h.warnings.length, 1, h.warnings.join("\n"))
    assert.match(h.warnings[0]!, new RegExp(`could not be restarted after ${BindingMaxRestarts} tries`))
    // One restart per model call, restart k after BindingBackoffMs * 4^(k-1): 100 + 400 + 1600 ms.
    assert.equal(calls, BindingMaxRestarts + 1, "each call tries one restart; the one after the last gives up")
    assert.ok(Date.now() - killed >= BindingBackoffMs * (1 + 4 + 16), `gave up after ${Date.now() - killed} ms`)
    for (let i = 0; i < 3; i++) assert.equal((await h.modelCall()).get("call_1"), repaired)
    assert.equal(h.warnings.length, 1, "said once")
    assert.deepEqual(h.stderr, [])
    await h.hooks.dispose()
  })

  test("grep hits: one block, repaired in the grep tool's format at the hits' new lines", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const other = path.join(dir, "b.txt")
    fs.writeFileSync(other, "a\nport here\n")
    const h = harness(dir)
    const out = `Found 2 matches\n${file}:\n  Line 2: port: 8080\n\n\n${other}:\n  Line 2: port here\n`
    await h.tool("call_1", "grep", { pattern: "port" }, out, { matches: 2, truncated: false })
    assert.equal((await h.modelCall()).get("call_1"), out, "unchanged: as the tool printed it")
    fs.writeFileSync(file, "# top\n" + config.replace("port: 8080", "port: 9090"))
    const seen = (await h.modelCall()).get("call_1")!
    assert.equal(seen, `Found 2 matches\n${file}:\n  Line 3: port: 9090\n\n\n${other}:\n  Line 2: port here\n`)
    assert.deepEqual(h.binding.stats.batches, ["concord: 1 read repaired"])
    assert.equal(h.toasts.length, 1)
    assert.equal(h.toasts[0].body.message, "concord: 1 read repaired")
    assert.ok(h.logged.some((l) => l.body.level === "info" && l.body.message === "concord: 1 read repaired"))
    await h.hooks.dispose()
  })

  test("bash reads (cat -n, sed -n, a pipeline of one file) are tracked and re-printed; other commands stay events", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    const lines = config.trimEnd().split("\n")
    const catN = lines.map((l, i) => `${String(i + 1).padStart(6)}\t${l}`).join("\n") + "\n"
    await h.tool("call_1", "bash", { command: "cat -n config.yaml", description: "x" }, catN, { exit: 0, truncated: false })
    await h.tool("call_2", "bash", { command: "sed -n '2,3p' config.yaml", description: "x" }, "port: 8080\ndebug: false\n", { exit: 0, truncated: false })
    await h.tool("call_3", "bash", { command: "cat config.yaml | head -n 2", description: "x" }, "name: demo\nport: 8080\n", { exit: 0, truncated: false })
    await h.tool("call_4", "bash", { command: "wc -l config.yaml", description: "x" }, `${lines.length} config.yaml\n`, { exit: 0, truncated: false })
    fs.writeFileSync(file, config.replace("port: 8080", "port: 9090"))
    const out = await h.modelCall()
    assert.equal(out.get("call_1"), catN.replace("port: 8080", "port: 9090"))
    assert.equal(out.get("call_2"), "port: 9090\ndebug: false\n")
    assert.equal(out.get("call_3"), "name: demo\nport: 9090\n", "a read of one file through head: re-printed")
    assert.equal(out.get("call_4"), `${lines.length} config.yaml\n`, "a count is an event: untouched")
    assert.deepEqual(h.binding.stats.batches, ["concord: 3 reads repaired"])
    await h.hooks.dispose()
  })

  test("an @file attachment (synthetic user text) is tracked and repaired", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    const r = openCodeRead(file)
    const user = () => [
      { info: { id: "msg_0", sessionID: h.sessionID, role: "user" }, parts: [
        { id: "prt_a", type: "text", synthetic: true, text: `Called the Read tool with the following input: ${JSON.stringify({ filePath: file })}` },
        { id: "prt_b", type: "text", synthetic: true, text: r.output },
        { id: "prt_c", type: "file", mime: "text/plain", url: `file://${file}` },
        { id: "prt_d", type: "text", text: "look" },
      ] },
    ]
    let messages: any[] = user()
    await h.hooks["experimental.chat.messages.transform"]({}, { messages })
    assert.equal(messages[0].parts[1].text, r.output)
    fs.writeFileSync(file, config.replace("mode: fast", "mode: slow"))
    messages = user()
    await h.hooks["experimental.chat.messages.transform"]({}, { messages })
    assert.equal(messages[0].parts[1].text, openCodeRead(file).output)
    assert.equal(messages[0].parts[3].text, "look", "the user's own text is untouched")
    await h.hooks.dispose()
  })

  test("a read whose file was deleted before the plugin registered it (a resumed session) gets the deleted notice", { skip }, async (t) => {
    const dir = tmpdir()
    const why = await missingFileRefused(dir)
    if (why) return t.skip(why)
    const file = path.join(dir, "gone.txt")
    fs.writeFileSync(file, "one\ntwo\n")
    const h = harness(dir)
    const r = openCodeRead(file)
    fs.rmSync(file)
    h.parts.push({ type: "tool", tool: "read", callID: "call_old", state: { status: "completed", input: r.input, output: r.output, time: { start: 1, end: 2 } } })
    const out = (await h.modelCall()).get("call_old")!
    assert.match(out, /^\[concord\]/, out)
    assert.match(out, /deleted/, out)
    assert.doesNotMatch(out, /1: one/)
    await h.hooks.dispose()
  })

  test("the End of file footer follows the file: lines appended after a read to the end", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    await h.read("call_1", file)
    await h.modelCall()
    fs.writeFileSync(file, config.replace("port: 8080", "port: 9090") + "extra: 1\n")
    const out = (await h.modelCall()).get("call_1")!
    assert.doesNotMatch(out, /End of file - total 10 lines/, "no stale total")
    assert.match(out, /\(End of file - total 11 lines\)|\(Showing lines 1-10 of 11\. Use offset=11 to continue\.\)/, out)
    await h.hooks.dispose()
  })

  test("turn numbers come from the history (a resumed session does not restart at 1)", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, config)
    const seen: any[] = []
    const h = harness(dir)
    const r = openCodeRead(file)
    const messages: any[] = []
    for (let i = 0; i < 7; i++) {
      messages.push({ info: { id: `u${i}`, sessionID: h.sessionID, role: "user" }, parts: [{ type: "text", text: "go" }] })
      messages.push({ info: { id: `a${i}`, sessionID: h.sessionID, role: "assistant" }, parts: i === 5 ? [{ type: "tool", tool: "read", callID: "call_t", state: { status: "completed", input: r.input, output: r.output, time: { start: 1, end: 2 } } }] : [] })
    }
    await h.hooks["experimental.chat.messages.transform"]({}, { messages })
    fs.writeFileSync(file, "entirely\nnew\n")
    const again = structuredClone(messages)
    await h.hooks["experimental.chat.messages.transform"]({}, { messages: again })
    const repaired = again[11].parts[0].state.output as string
    seen.push(repaired)
    // A whole-file read of a rewritten file is refreshed (Concord's default on drift).
    assert.equal(repaired, openCodeRead(file).output)
    // The link's turn is the 8th model request, not 1 or 2.
    assert.equal((h.binding as any).sessions.get(h.sessionID).turn, 8)
    assert.equal((h.binding as any).sessions.get(h.sessionID).tracked.get("call_t").call.turn, 6)
    await h.hooks.dispose()
  })

  test("a read outside the project (external_directory allowed it): the roots are extended and it is repaired", { skip }, async () => {
    const dir = tmpdir()
    const outside = tmpdir()
    const file = path.join(outside, "notes.txt")
    fs.writeFileSync(file, config)
    const h = harness(dir)
    await h.read("call_1", file)
    await h.modelCall()
    fs.writeFileSync(file, config.replace("owner: ops", "owner: dev"))
    const out = (await h.modelCall()).get("call_1")
    assert.equal(out, openCodeRead(file).output)
    assert.equal(h.warnings.length, 0, h.warnings.join("\n"))
    await h.hooks.dispose()
  })
})

/** A history of one user message and one assistant message per step, as OpenCode stores it. */
function history(h: Harness, steps: string[][]): any[] {
  const msgs: any[] = [{ info: { id: "msg_u", sessionID: h.sessionID, role: "user" }, parts: [{ id: "prt_u", type: "text", text: "go" }] }]
  steps.forEach((calls, i) => {
    const id = `msg_a${i + 1}`
    msgs.push({
      info: { id, sessionID: h.sessionID, role: "assistant" },
      parts: structuredClone(h.parts.filter((p) => calls.includes(p.callID))).map((p: any) => ({ ...p, messageID: id })),
    })
  })
  return msgs
}
async function call(h: Harness, msgs: any[]): Promise<any[]> {
  await h.hooks["experimental.chat.messages.transform"]({}, { messages: msgs })
  return msgs
}
/** The notes as "<message id>: <text>": appended to a tool result's output, or text parts. */
const notes = (msgs: any[]) =>
  msgs.flatMap((m) =>
    m.parts.flatMap((p: any) => {
      if (p.type === "text" && p.text.startsWith("[concord]")) return [`${m.info.id}: ${p.text}`]
      if (p.type !== "tool" || typeof p.state?.output !== "string") return []
      return p.state.output.split("\n\n[concord] ").slice(1).map((t: string) => `${m.info.id}: [concord] ${t}`)
    }),
  )
const out = (msgs: any[], id: string) => msgs.flatMap((m) => m.parts).find((p: any) => p.callID === id)?.state.output

describe("placement tail/auto: errata notes on the newest message", () => {
  const skip = skipWithoutConcord()

  for (const placement of ["tail", "auto"] as const) {
    test(`${placement}: the old read stays byte-identical, the note is sticky, the own edit is named, a flush drops it`, { skip }, async (t) => {
      const dir = tmpdir()
      const file = path.join(dir, "a.txt")
      fs.writeFileSync(file, "one\ntwo\nthree\n")
      const h = harness(dir, { options: { placement, watch: "hooks" } as any })
      t.after(() => h.hooks.dispose())
      await h.read("call_1", file)
      const original = h.parts[0].state.output
      let msgs = await call(h, history(h, [["call_1"]]))
      assert.deepEqual(notes(msgs), [])
      // The agent's own edit, reported with its call id.
      fs.writeFileSync(file, "zero\none\ntwo\nthree\n")
      await h.tool("call_2", "write", { filePath: file, content: "zero\none\ntwo\nthree\n" }, "Wrote file successfully.")
      msgs = await call(h, history(h, [["call_1"], ["call_2"]]))
      assert.equal(out(msgs, "call_1"), original, "the read the model saw is left alone")
      // One note on the newest message, naming the read (call_1), the file and the edit (call_2);
      // the wording is the server's.
      const first = notes(msgs)
      assert.equal(first.length, 1, first.join("\n"))
      assert.ok(first[0]!.startsWith("msg_a2: [concord] "), first[0])
      for (const name of ["call_1", file, "call_2"]) assert.ok(first[0]!.includes(name), `the note names ${name}: ${first[0]}`)
      assert.equal(h.binding.stats.errata, 1)
      // Later calls: the same note on the same message; a new one on the newest message.
      await h.tool("call_3", "bash", { command: "true" }, "")
      fs.writeFileSync(file, "zero\none\nTWO\nthree\n")
      const later = await call(h, history(h, [["call_1"], ["call_2"], ["call_3"]]))
      assert.equal(out(later, "call_1"), original)
      // The pointer to the own edit only warns, so it stays true after the next change: no new
      // note, and the first one is re-attached to msg_a2 unchanged.
      assert.deepEqual(notes(later), notes(msgs), "the note is sticky")
      const again = await call(h, history(h, [["call_1"], ["call_2"], ["call_3"]]))
      assert.deepEqual(JSON.stringify(again), JSON.stringify(later), "a call with nothing new is byte-identical")
      // OpenCode compacted: the history starts elsewhere; prefixRebuilt flushes.
      const compacted = history(h, [["call_1"], ["call_2"], ["call_3"]]).filter((m) => m.info.id !== "msg_a1")
      compacted.splice(1, 0, { info: { id: "msg_a1b", sessionID: h.sessionID, role: "assistant" }, parts: structuredClone(h.parts.filter((p) => p.callID === "call_1")) })
      const flushed = await call(h, compacted)
      assert.deepEqual(notes(flushed), [], "a flush drops every note")
      assert.notEqual(out(flushed, "call_1"), original, "the read repaired in place after the flush")
      await h.hooks.dispose()
    })
  }

  for (const placement of ["tail", "auto"] as const) {
    test(`${placement}: an outside change gives a note on the newest message; a second one is added after it, the first stays`, { skip }, async (t) => {
      const dir = tmpdir()
      const file = path.join(dir, "b.txt")
      const base = ["alpha: 1", "beta: 2", "gamma: 3", "delta: 4", "epsilon: 5", "zeta: 6"].join("\n") + "\n"
      fs.writeFileSync(file, base)
      const h = harness(dir, { options: { placement, watch: "hooks" } as any })
      t.after(() => h.hooks.dispose())
      await h.read("call_1", file)
      const original = h.parts[0].state.output
      await call(h, history(h, [["call_1"]]))
      fs.writeFileSync(file, base.replace("gamma: 3", "gamma: 9"))
      await h.tool("call_2", "bash", { command: "true" }, "")
      const m2 = await call(h, history(h, [["call_1"], ["call_2"]]))
      assert.equal(out(m2, "call_1"), original, "the read the model saw is left alone")
      const n2 = notes(m2)
      assert.equal(n2.length, 1, n2.join("\n"))
      assert.ok(n2[0]!.startsWith("msg_a2: [concord] ") && n2[0]!.includes("call_1"), n2[0])
      assert.ok(n2[0]!.includes("gamma: 9"), `an outside change carries the changed line: ${n2[0]}`)
      // The note ends the output of the newest message's last tool result (call_2), after its own
      // output: on the wire, the last tool message.
      const last = m2[m2.length - 1].parts.at(-1)
      assert.equal(last.callID, "call_2")
      assert.equal(last.state.output, `\n\n${n2[0]!.slice("msg_a2: ".length)}`, "bash printed nothing; the note follows")
      // A second outside change to the same lines: a new note on the newest message, the first
      // one still on msg_a2, byte for byte.
      fs.writeFileSync(file, base.replace("gamma: 3", "gamma: 10"))
      await h.tool("call_3", "bash", { command: "true" }, "")
      const m3 = await call(h, history(h, [["call_1"], ["call_2"], ["call_3"]]))
      const n3 = notes(m3)
      assert.equal(n3.length, 2, n3.join("\n"))
      assert.equal(n3[0], n2[0])
      assert.ok(n3[1]!.startsWith("msg_a3: [concord] ") && n3[1]!.includes("call_1") && n3[1]!.includes("gamma: 10"), n3[1])
      assert.equal(out(m3, "call_1"), original)
    })
  }

  test("tail: a newest message without a tool result (a new user turn) gets the note as a text part", { skip }, async (t) => {
    const dir = tmpdir()
    const file = path.join(dir, "c.txt")
    fs.writeFileSync(file, "one\ntwo\nthree\n")
    const h = harness(dir, { options: { placement: "tail", watch: "hooks" } as any })
    t.after(() => h.hooks.dispose())
    await h.read("call_1", file)
    const turn1 = history(h, [["call_1"]])
    await call(h, turn1)
    fs.writeFileSync(file, "one\nTWO\nthree\n")
    const user2 = { info: { id: "msg_u2", sessionID: h.sessionID, role: "user" }, parts: [{ id: "prt_u2", type: "text", text: "again" }] }
    const m = await call(h, [...history(h, [["call_1"]]), structuredClone(user2)])
    const n = notes(m)
    assert.equal(n.length, 1, n.join("\n"))
    assert.ok(n[0]!.startsWith("msg_u2: [concord] ") && n[0]!.includes("call_1"), n[0])
    assert.equal(m.at(-1).parts.at(-1).type, "text", "a text part after the user's text")
    assert.equal(m.at(-1).parts.at(-1).synthetic, true)
    const again = await call(h, [...history(h, [["call_1"]]), structuredClone(user2)])
    assert.equal(JSON.stringify(again), JSON.stringify(m), "re-attached byte-identical")
  })

  test("tail: two reads of one file changed at once: one note names both, neither read is rewritten", { skip }, async (t) => {
    const dir = tmpdir()
    const file = path.join(dir, "e.txt")
    const base = ["alpha: 1", "beta: 2", "gamma: 3", "delta: 4", "epsilon: 5", "zeta: 6"].join("\n") + "\n"
    fs.writeFileSync(file, base)
    const h = harness(dir, { options: { placement: "tail", watch: "hooks" } as any })
    t.after(() => h.hooks.dispose())
    await h.read("call_1", file, 1, 3)
    await h.read("call_2", file, 4, 3)
    const before = [h.parts[0].state.output, h.parts[1].state.output]
    await call(h, history(h, [["call_1", "call_2"]]))
    fs.writeFileSync(file, base.replace("beta: 2", "beta: 20").replace("epsilon: 5", "epsilon: 50"))
    await h.tool("call_3", "bash", { command: "true" }, "")
    const m = await call(h, history(h, [["call_1", "call_2"], ["call_3"]]))
    assert.deepEqual([out(m, "call_1"), out(m, "call_2")], before, "both reads left as the model saw them")
    const n = notes(m).join("\n")
    for (const want of ["call_1", "call_2", "beta: 20", "epsilon: 50"]) assert.ok(n.includes(want), `the note has ${want}: ${n}`)
    assert.ok(n.startsWith("msg_a2: [concord] "), n)
  })

  test("rebuiltSince: a message of the previous request dropped or moved, not one appended", () => {
    assert.equal(rebuiltSince([], ["a"]), false)
    assert.equal(rebuiltSince(["a", "b"], ["a", "b", "c"]), false)
    assert.equal(rebuiltSince(["a", "b"], ["a", "x", "b"]), false, "an insertion keeps every old message in order")
    assert.equal(rebuiltSince(["a", "b", "c"], ["a", "c"]), true, "b was dropped")
    assert.equal(rebuiltSince(["a", "b"], ["b", "a"]), true, "moved")
    assert.equal(rebuiltSince(["a", "b"], ["s", "b"]), true, "compaction starts at a summary")
  })

  test("auto is the default: a read the model saw is left alone and gets a note", { skip }, async (t) => {
    const dir = tmpdir()
    const file = path.join(dir, "d.txt")
    fs.writeFileSync(file, "one\ntwo\nthree\n")
    const h = harness(dir, { options: { placement: undefined } })
    t.after(() => h.hooks.dispose())
    await h.read("call_1", file)
    const original = h.parts[0].state.output
    await call(h, history(h, [["call_1"]]))
    fs.writeFileSync(file, "one\nTWO\nthree\n")
    await h.tool("call_2", "bash", { command: "true" }, "")
    const m = await call(h, history(h, [["call_1"], ["call_2"]]))
    assert.equal(out(m, "call_1"), original)
    assert.equal(notes(m).length, 1)
  })

  test("inplace: no notes, the read is rewritten", { skip }, async () => {
    const dir = tmpdir()
    const file = path.join(dir, "a.txt")
    const base = ["alpha: 1", "beta: 2", "gamma: 3", "delta: 4", "epsilon: 5", "zeta: 6"].join("\n") + "\n"
    fs.writeFileSync(file, base)
    const h = harness(dir)
    await h.read("call_1", file)
    await call(h, history(h, [["call_1"]]))
    fs.writeFileSync(file, base.replace("gamma: 3", "gamma: 9"))
    const msgs = await call(h, history(h, [["call_1"]]))
    assert.deepEqual(notes(msgs), [])
    assert.equal(out(msgs, "call_1"), openCodeRead(file).output)
    await h.hooks.dispose()
  })
})

/** The params of every `method` request the real concord read, from its --rpc-trace log. */
function traced(log: string, method: string): any[] {
  if (!fs.existsSync(log)) return []
  return fs
    .readFileSync(log, "utf8")
    .split("\n")
    .flatMap((line) => {
      const m = /msg="rpc recv" json=(".*")$/.exec(line)
      if (!m) return []
      const msg = JSON.parse(JSON.parse(m[1]!))
      return msg.method === method ? [msg.params] : []
    })
}

/** A harness whose concord logs every message it reads to <dir>/rpc.log. */
function tracedHarness(dir: string, options: Record<string, unknown>, env: Record<string, string> = {}) {
  const log = path.join(dir, "rpc.log")
  const h = harness(dir, {
    env: { PATH: process.env.PATH, CONCORD_BIN: concordBin(), CONCORD_OPENCODE_DEBUG: "1", ...env },
    options: { watch: "hooks", args: ["--rpc-trace", "--log-file", log], ...options } as any,
  })
  return { h, initialize: () => traced(log, "initialize"), syncs: () => traced(log, "sync") }
}

describe("cachePrice and promptChars (priced rewrites)", () => {
  const skip = skipWithoutConcord()

  // The forms of a price and why one is refused are the server's (protocol TestCachePriceForms,
  // testdata/rpc/priced-string.jsonl): the binding passes the option through.
  const accepted: { name: string; option?: unknown; env?: string; ttl?: number; want: unknown }[] = [
    { name: "option anthropic", option: "anthropic", want: { price: "anthropic" } },
    { name: "option OpenAI", option: " OpenAI ", want: { price: " OpenAI " } },
    { name: "option {write, read}", option: { write: 2, read: 0.25 }, want: { price: { write: 2, read: 0.25 } } },
    { name: "env anthropic", env: "anthropic", want: { price: "anthropic" } },
    { name: "env W,R", env: "1.5,0.2", want: { price: "1.5,0.2" } },
    { name: "the option wins over the env", option: "openai", env: "anthropic", want: { price: "openai" } },
    { name: "with cacheTtlSeconds", option: "anthropic", ttl: 600, want: { ttlSeconds: 600, price: "anthropic" } },
  ]
  for (const c of accepted) {
    test(`initialize carries cache.price: ${c.name}`, { skip }, async (t) => {
      const dir = tmpdir()
      const { h, initialize } = tracedHarness(
        dir,
        { placement: "auto", ...(c.option !== undefined ? { cachePrice: c.option } : {}), ...(c.ttl !== undefined ? { cacheTtlSeconds: c.ttl } : {}) },
        c.env !== undefined ? { CONCORD_CACHE_PRICE: c.env } : {},
      )
      t.after(() => h.hooks.dispose())
      await h.modelCall()
      const init = initialize()
      assert.equal(init.length, 1)
      assert.deepEqual(init[0].cache, c.want)
      assert.ok(h.binding.childPids().has(h.sessionID), "concord accepted it and serves the session")
      assert.equal(h.warnings.length, 0, h.warnings.join("\n"))
    })
  }

  const refused: { name: string; option?: unknown; env?: string }[] = [
    { name: "an unknown preset", option: "bogus" },
    { name: "read above write", option: { write: 0.5, read: 1 } },
    { name: "a string number", option: { write: "1", read: 0.1 } },
    { name: "a bad env pair", env: "1,x" },
    { name: "a number", option: 3 },
  ]
  for (const c of refused) {
    test(`a bad cachePrice (${c.name}) is left off with a debug line; concord still serves`, { skip }, async (t) => {
      const dir = tmpdir()
      const { h, initialize, syncs } = tracedHarness(
        dir,
        { placement: "auto", ...(c.option !== undefined ? { cachePrice: c.option } : {}) },
        c.env !== undefined ? { CONCORD_CACHE_PRICE: c.env } : {},
      )
      t.after(() => h.hooks.dispose())
      await h.modelCall()
      const init = initialize()
      assert.equal(init.length, 2, "refused, then initialize again without the price")
      assert.deepEqual(init[0].cache, { price: c.option ?? c.env })
      assert.equal(init[1].cache, undefined, "no cache hints at all")
      assert.equal(syncs().length, 1, "the session works")
      assert.ok(h.stderr.some((l) => /cachePrice .* refused \(initialize: invalid params: cache\.price: .*\); priced rewrites stay off/.test(l)), h.stderr.join(""))
      assert.equal(h.warnings.length, 0, h.warnings.join("\n"))
    })
  }

  test("no cachePrice, or \"off\": initialize has no cache.price", { skip }, async (t) => {
    for (const opts of [{}, { cachePrice: "Off" }]) {
      const { h, initialize } = tracedHarness(tmpdir(), { placement: "auto", ...opts }, { CONCORD_CACHE_PRICE: "anthropic" })
      t.after(() => h.hooks.dispose())
      await h.modelCall()
      assert.deepEqual(initialize().map((p) => p.cache), [opts.cachePrice ? undefined : { price: "anthropic" }])
    }
  })

  test("every sync carries promptChars: the prompt before this sync, with earlier rewrites counted", { skip }, async (t) => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, "name: demo\nport: 8080\ndebug: false\nlevel: info\nmode: fast\n")
    const { h, syncs } = tracedHarness(dir, { placement: "inplace" })
    t.after(() => h.hooks.dispose())
    await h.read("call_1", file, 2, 3)
    const original = h.parts[0].state.output as string
    await h.modelCall()
    const [p1] = syncs().map((s) => s.promptChars)
    assert.ok(Number.isInteger(p1) && p1 > original.length + "go".length, `promptChars ${p1} covers the read and the user's text`)
    fs.writeFileSync(file, "something: else\n")
    const view = (await h.modelCall()).get("call_1")!
    assert.match(view, /^\[concord\]/, "the partial read became the re-read notice")
    await h.modelCall()
    const [, p2, p3] = syncs().map((s) => s.promptChars)
    assert.equal(p2, p1, "counted before this sync's rewrite")
    assert.equal(p3, p1 - original.length + view.length, "the next sync counts the rewrite as sent")
  })

  /**
   * 40 long lines, longer than testdata/rpc/priced.jsonl's: the notice and the erratum carry the
   * file's path twice, and Concord weighs them against the read's size (a long $TMPDIR).
   */
  const settings = Array.from({ length: 40 }, (_, i) => {
    const n = String(i + 1).padStart(2, "0")
    return `    setting_${n} = load_setting('section_${n}', default=${i + 1}, help="${"the value of this setting, as read at start-up; ".repeat(3)}")`
  }).join("\n") + "\n"
  const rewritten = Array.from({ length: 40 }, (_, i) => `# rewritten line ${i + 1}`).join("\n") + "\n"

  /**
   * OpenCode's calls around a large ranged read: the first request, the read (lines 1-38), the
   * request that sends it, an outside rewrite of the file, one more step, the next request.
   * With `later`, a step with that much output comes between the read and the rewrite.
   */
  async function drift(cachePrice: string | undefined, later = 0) {
    const dir = tmpdir()
    const file = path.join(dir, "near.py")
    fs.writeFileSync(file, settings)
    const { h, syncs } = tracedHarness(dir, { placement: "auto", ...(cachePrice ? { cachePrice } : {}) })
    await call(h, history(h, []))
    await h.read("call_1", file, 1, 38)
    const original = h.parts[0].state.output as string
    await call(h, history(h, [["call_1"]]))
    const steps = [["call_1"]]
    if (later > 0) {
      await h.tool("call_0", "bash", { command: "make" }, "x".repeat(later))
      steps.push(["call_0"])
      await call(h, history(h, steps))
    }
    fs.writeFileSync(file, rewritten)
    await h.tool("call_2", "bash", { command: "true" }, "")
    steps.push(["call_2"])
    const m = await call(h, history(h, steps))
    return { h, file, original, m, syncs }
  }

  test("anthropic price, auto: a large drifted read near the end of the prompt is rewritten in place to the re-read notice", { skip }, async (t) => {
    const { h, file, original, m, syncs } = await drift("anthropic")
    t.after(() => h.hooks.dispose())
    assert.ok(original.length > 6000, `a large read (${original.length} chars)`)
    const seen = out(m, "call_1")
    assert.match(seen, /^\[concord\] /, seen)
    assert.ok(seen.includes(file) && /lines 1-38/.test(seen) && /Re-read/.test(seen), seen)
    assert.ok(seen.length < original.length / 4, "the short notice replaces the copy")
    assert.deepEqual(notes(m), [], "no erratum at the tail")
    assert.equal(h.binding.stats.errata, 0)
    assert.equal(h.binding.stats.notices, 1)
    // Sticky: the next call carries the same bytes, and counts the notice, not the old copy.
    const again = await call(h, history(h, [["call_1"], ["call_2"]]))
    assert.equal(JSON.stringify(again), JSON.stringify(m))
    const p = syncs().map((s) => s.promptChars)
    assert.equal(p.length, 4)
    assert.ok(p.every((n) => Number.isInteger(n) && n > 0), JSON.stringify(p))
    assert.equal(p[3], p[2]! - original.length + seen.length)
  })

  test("no price, auto: the same drifted read stays byte-identical and gets a tail note", { skip }, async (t) => {
    const { h, original, m, syncs } = await drift(undefined)
    t.after(() => h.hooks.dispose())
    assert.equal(out(m, "call_1"), original, "the read the model saw is left alone")
    const n = notes(m)
    assert.equal(n.length, 1, n.join("\n"))
    assert.ok(n[0]!.startsWith("msg_a2: [concord] ") && n[0]!.includes("call_1"), n[0])
    assert.equal(h.binding.stats.errata, 1)
    // The next call counts the sticky note as already in the prompt.
    await call(h, history(h, [["call_1"], ["call_2"]]))
    const p = syncs().map((s) => s.promptChars)
    assert.equal(p.length, 4)
    assert.equal(p[3], p[2]! + `\n\n${n[0]!.slice("msg_a2: ".length)}`.length)
  })

  test("anthropic price, auto: the same drift far back in the prompt (40k chars after the read) gets a tail note", { skip }, async (t) => {
    const { h, original, m } = await drift("anthropic", 40_000)
    t.after(() => h.hooks.dispose())
    assert.equal(out(m, "call_1"), original, "rewriting it would invalidate the 40k chars after it")
    const n = notes(m)
    assert.equal(n.length, 1, n.join("\n"))
    assert.ok(n[0]!.startsWith("msg_a3: [concord] ") && n[0]!.includes("call_1"), n[0])
    assert.equal(h.binding.stats.errata, 1)
  })
})

/**
 * A compaction as OpenCode 1.18.33 hands it to the transform (test/fixtures/opencode-1.18.33-compaction.json):
 * the compaction request, the summary (an assistant message with summary: true and the model's text),
 * then the synthetic "Continue" prompt, then the steps after it (`after`: one assistant message per
 * step); the tool results before it are gone from the history.
 */
function compactedHistory(h: Harness, summary: string, after: string[][] = []): any[] {
  const sid = h.sessionID
  const msgs: any[] = [
    { info: { id: "msg_c", sessionID: sid, role: "user", agent: "build" }, parts: [{ id: "prt_c", sessionID: sid, messageID: "msg_c", type: "compaction", auto: true, overflow: false }] },
    {
      info: { id: "msg_sum", sessionID: sid, role: "assistant", parentID: "msg_c", mode: "compaction", agent: "compaction", summary: true, finish: "stop" },
      parts: [
        { id: "prt_ss", sessionID: sid, messageID: "msg_sum", type: "step-start" },
        { id: "prt_st", sessionID: sid, messageID: "msg_sum", type: "text", text: summary, time: { start: 1, end: 2 } },
        { id: "prt_sf", sessionID: sid, messageID: "msg_sum", type: "step-finish", reason: "stop" },
      ],
    },
  ]
  msgs.push({ info: { id: "msg_go", sessionID: sid, role: "user" }, parts: [{ id: "prt_go", sessionID: sid, messageID: "msg_go", type: "text", synthetic: true, text: "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed." }] })
  after.forEach((calls, i) => {
    const id = `msg_k${i + 1}`
    msgs.push({ info: { id, sessionID: sid, role: "assistant" }, parts: structuredClone(h.parts.filter((p) => calls.includes(p.callID))).map((p: any) => ({ ...p, messageID: id })) })
  })
  return msgs
}
const summaryText = (msgs: any[]) => msgs.find((m) => m.info.summary === true)!.parts.find((p: any) => p.type === "text").text as string

describe("compaction summaries (derived context)", () => {
  const skip = skipWithoutConcord()
  const base = ["name: billing", "port: 8080", "debug: false", "level: info", "mode: fast", "user: admin", "retries: 3", "timeout: 30", "region: eu", "owner: ops", "cache: on", "color: blue"].join("\n") + "\n"
  const SUMMARY = "## Important Details\n- config.yaml line 7 says `retries: 3`."

  test("inplace: compacted names the summary and the results it replaced; a change to a line it restated shows the summary with its correction, once", { skip }, async (t) => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, base)
    const { h, ...trace } = tracedHarness(dir, { placement: "inplace" })
    t.after(() => h.hooks.dispose())
    await h.read("call_1", file)
    await h.tool("call_2", "bash", { command: "echo step" }, "step\n")
    await call(h, history(h, [["call_1"], ["call_2"]]))
    // OpenCode compacted: the summary stands where call_1 and call_2 were.
    let msgs = await call(h, compactedHistory(h, SUMMARY))
    assert.equal(summaryText(msgs), SUMMARY, "nothing to correct yet")
    const log = path.join(dir, "rpc.log")
    const compacted = traced(log, "compacted")
    assert.equal(compacted.length, 1, JSON.stringify(compacted))
    assert.deepEqual({ ...compacted[0], turn: undefined }, { agent: "main", anchor: "msg_sum", text: SUMMARY, replaced: ["call_1"], turn: undefined }, "call_2 (an event) was never tracked")
    assert.deepEqual(traced(log, "release"), [], "the server released call_1, the plugin does not")
    assert.equal(h.binding.stats.summaries, 1)
    // The line the summary restated changes.
    fs.writeFileSync(file, base.replace("retries: 3", "retries: 5"))
    msgs = await call(h, compactedHistory(h, SUMMARY))
    const shown = summaryText(msgs)
    assert.ok(shown.startsWith(`${SUMMARY}\n\n[concord] `), shown)
    const fix = shown.slice(SUMMARY.length)
    for (const want of ["msg_sum", file, "retries: 5"]) assert.ok(fix.includes(want), `the correction names ${want}: ${fix}`)
    assert.equal(h.binding.stats.corrections, 1)
    assert.deepEqual(notes(msgs), [], "in place: no note")
    // A line it never restated: nothing new; the correction stays as it was on every later call.
    fs.writeFileSync(file, base.replace("retries: 3", "retries: 5").replace("color: blue", "color: green"))
    msgs = await call(h, compactedHistory(h, SUMMARY))
    assert.equal(summaryText(msgs), shown)
    assert.equal(h.binding.stats.corrections, 1)
    assert.equal(trace.syncs().length, 4, "one sync per model call")
  })

  test("auto: the summary the model was sent stays byte-identical and the correction is a note at the end, said once", { skip }, async (t) => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, base)
    const h = harness(dir, { options: { placement: "auto", watch: "hooks" } as any })
    t.after(() => h.hooks.dispose())
    await h.read("call_1", file)
    await call(h, history(h, [["call_1"]]))
    await call(h, compactedHistory(h, SUMMARY))
    await h.tool("call_3", "bash", { command: "echo step" }, "step\n")
    fs.writeFileSync(file, base.replace("retries: 3", "retries: 5"))
    let msgs = await call(h, compactedHistory(h, SUMMARY, [["call_3"]]))
    assert.equal(summaryText(msgs), SUMMARY, "the summary as the model was sent it")
    const n = notes(msgs)
    assert.equal(n.length, 1, n.join("\n"))
    assert.ok(n[0]!.startsWith("msg_k1: [concord] "), `after call_3, the newest tool result: ${n[0]}`)
    for (const want of ["msg_sum", file, "retries: 5"]) assert.ok(n[0]!.includes(want), `the note names ${want}: ${n[0]}`)
    fs.writeFileSync(file, base.replace("retries: 3", "retries: 5").replace("color: blue", "color: green"))
    msgs = await call(h, compactedHistory(h, SUMMARY, [["call_3"]]))
    assert.deepEqual(notes(msgs), n, "the note is sticky and not repeated")
    assert.equal(summaryText(msgs), SUMMARY)
  })

  test("a second compaction summarizes the first summary: compacted replaces it, its sources carry on to the new one", { skip }, async (t) => {
    const dir = tmpdir()
    const file = path.join(dir, "config.yaml")
    fs.writeFileSync(file, base)
    const { h } = tracedHarness(dir, { placement: "inplace" })
    t.after(() => h.hooks.dispose())
    await h.read("call_1", file)
    await call(h, history(h, [["call_1"]]))
    await call(h, compactedHistory(h, SUMMARY))
    // OpenCode compacts again: the history now starts at a second summary (its own message id).
    const again = (text: string) => {
      const msgs = compactedHistory(h, text)
      msgs[0]!.info.id = "msg_c2"
      msgs[1]!.info.id = "msg_sum2"
      for (const p of msgs[1]!.parts) p.messageID = "msg_sum2"
      return msgs
    }
    const SECOND = "## Important Details\n- Still: `retries: 3` (config.yaml)."
    await call(h, again(SECOND))
    const compacted = traced(path.join(dir, "rpc.log"), "compacted")
    assert.deepEqual(compacted.map((c) => [c.anchor, c.replaced]), [["msg_sum", ["call_1"]], ["msg_sum2", ["msg_sum"]]])
    assert.equal(h.binding.stats.summaries, 2)
    fs.writeFileSync(file, base.replace("retries: 3", "retries: 5"))
    const shown = summaryText(await call(h, again(SECOND)))
    assert.ok(shown.startsWith(`${SECOND}\n\n[concord] The summary in msg_sum2 is outdated`), shown)
    assert.ok(shown.includes(file) && shown.includes("retries: 5"), shown)
  })

  test("a summary met with nothing tracked gone (a resumed session's) is not told to the server", { skip }, async (t) => {
    const dir = tmpdir()
    const { h } = tracedHarness(dir, { placement: "inplace" })
    t.after(() => h.hooks.dispose())
    await call(h, compactedHistory(h, SUMMARY))
    await call(h, compactedHistory(h, SUMMARY))
    assert.deepEqual(traced(path.join(dir, "rpc.log"), "compacted"), [])
    assert.equal(h.binding.stats.summaries, 0)
  })
})
