// Derived context (issue 36) through the real `opencode` program (pinned opencode-ai) with the
// plugin: the agent reads config.yaml, then a reply overflows the model's context, so OpenCode
// compacts the session; the fake model writes the summary, which restates one line of the file.
// The plugin tells concord which message is the summary and which tool results it replaced
// (`compacted`). The test changes that line: the next request carries a true correction about the
// summary, once; a change to a line the summary never restated adds none. A control run with
// --pure (plugins off) shows the stale summary.
import { test, describe, before } from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import path from "node:path"
import { FakeModel, type ChatMessage, type ChatRequest, type Step } from "./fakemodel.js"
import { OPENCODE_VERSION, PKG_ROOT, fetchedFromNpm, makeWorkspace, opencodeBinary, runOpencode, type PluginMode, type Workspace } from "./harness.js"
import { concordBin, skipWithoutConcord } from "../support/concordbin.js"

const DROPIN: PluginMode = { kind: "dropin", file: path.join(PKG_ROOT, "dist", "concord-opencode.js") }
const skipPlugin = skipWithoutConcord()

const CONFIG = ["name: billing", "port: 8080", "debug: false", "level: info", "mode: fast", "user: admin", "retries: 3", "timeout: 30", "region: eu", "owner: ops", "cache: on", "color: blue"].join("\n") + "\n"
const STALE = "retries: 3"
const FRESH = "retries: 5"
const UNRELATED = ["color: blue", "color: green"] as const // line 12, which the summary never restated
/** What the fake model writes when OpenCode asks for the summary: it restates line 7. */
const SUMMARY = "## Objective\n- Tune the retry policy.\n\n## Important Details\n- config.yaml line 7 says `retries: 3`."

before(() => {
  assert.ok(opencodeBinary(), "opencode-ai is installed (make -C bindings/ts e2e-deps)")
  assert.ok(fs.existsSync(DROPIN.kind === "dropin" ? DROPIN.file : ""), "the drop-in plugin is built (npm run build)")
})

function texts(m: ChatMessage): string[] {
  const c = m.content
  if (typeof c === "string") return [c]
  return Array.isArray(c) ? c.map((p) => (typeof p?.text === "string" ? p.text : "")) : []
}

/** The summary as the model was sent it: the assistant message that starts with the summary's text. */
function summaryOf(req: ChatRequest): string | undefined {
  return req.messages.filter((m) => m.role === "assistant").flatMap(texts).find((t) => t.startsWith(SUMMARY))
}

/** Concord's notes at the tail: appended to a tool result after a blank line, or a text of their own (not the summary's own correction). */
function notesOf(req: ChatRequest): string[] {
  return req.messages.flatMap((m) =>
    texts(m)
      .filter((t) => !t.startsWith(SUMMARY))
      .flatMap((t) => (t.startsWith("[concord]") ? [t] : t.split("\n\n[concord] ").slice(1).map((x) => `[concord] ${x}`))),
  )
}

/** What a request says about the summary beyond its own text: the correction in place after it, and the errata. */
function corrections(req: ChatRequest): string[] {
  const s = summaryOf(req) ?? ""
  return [...(s.length > SUMMARY.length ? [s.slice(SUMMARY.length)] : []), ...notesOf(req)]
}

const step = () => ({ tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] })

/** read config.yaml; a reply that overflows the context (OpenCode compacts); then the changes. */
function steps(ws: Workspace): Step[] {
  const file = path.join(ws.proj, "config.yaml")
  return [
    () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
    () => ({ ...step(), usage: { prompt_tokens: 500_000, completion_tokens: 10 } }),
    (req, m) => {
      m.expect(summaryOf(req) === SUMMARY, `request 3 starts over at the summary: ${JSON.stringify(req.messages.filter((x) => x.role !== "system"))}`)
      m.expect(!req.messages.some((x) => x.role === "tool"), "no tool result survived the compaction")
      fs.writeFileSync(file, CONFIG.replace(STALE, FRESH)) // the line the summary restated
      return step()
    },
    () => {
      fs.writeFileSync(file, CONFIG.replace(STALE, FRESH).replace(...UNRELATED))
      return step()
    },
    () => ({ text: "done" }),
  ]
}

async function play(name: string, env: Record<string, string>, pure = false) {
  const ws = makeWorkspace(name, { "config.yaml": CONFIG })
  const model = new FakeModel(steps(ws), { untooled: () => SUMMARY })
  const port = await model.start()
  let result
  try {
    result = await runOpencode(ws, { port, plugin: DROPIN, env, pure })
  } finally {
    await model.close()
    model.dump(path.join(ws.root, "model-requests.json"))
  }
  const where = `(logs: ${ws.root})`
  assert.deepEqual(model.failures, [], `fake model expectations ${where}`)
  assert.equal(result.code, 0, `opencode exit status ${where}\n${result.stderr.slice(-2000)}`)
  assert.equal(model.requests.length, 5, `model calls ${where}`)
  assert.equal(model.untooledRequests.length, 1, `one summary request ${where}`)
  assert.ok(!result.events.some((e) => e.type === "error"), `no error events ${where}`)
  assert.ok(!fetchedFromNpm(ws), `nothing fetched from npm at run time ${where}`)
  return { ws, model, result, where }
}

/** The per-sync lines the plugin logged ("concord: 1 summary corrected"). */
function batches(stderr: string): string[] {
  return stderr.split("\n").flatMap((l) => {
    const m = l.includes("level=INFO") ? /message="(concord: [^"]*)"/.exec(l) : null
    return m ? [m[1]!] : []
  })
}

describe(`opencode ${OPENCODE_VERSION ?? "?"}: a compaction's summary is corrected when a line it restated changes`, { concurrency: 1 }, () => {
  for (const placement of ["inplace", "auto"] as const) {
    test(`${placement}: the next request carries one true correction about the summary; a change to a line it never restated adds none`, { skip: skipPlugin }, async () => {
      const r = await play(`compaction-${placement}`, { CONCORD_PLACEMENT: placement === "auto" ? "" : placement, CONCORD_BIN: concordBin()! })
      const file = path.join(r.ws.proj, "config.yaml")
      const [, , seen, changed, unrelated] = r.model.requests
      assert.deepEqual(corrections(seen!), [], `nothing to correct when the summary is first sent ${r.where}`)

      const got = corrections(changed!)
      assert.equal(got.length, 1, `one correction after the restated line changed ${r.where}: ${JSON.stringify(got)}`)
      const fix = got[0]!
      assert.ok(fix.includes(file) && fix.includes(FRESH) && /\b7\b/.test(fix), `it names the file and line 7 and says what it says now: ${fix}`)
      // It speaks of the summary, not of the read it replaced (gone from the prompt, released).
      assert.ok(/The summary in msg_\w+ is outdated/.test(fix) && !fix.includes("call_1"), `about the summary: ${fix}`)
      if (placement === "inplace") {
        assert.ok(summaryOf(changed!)!.startsWith(SUMMARY) && notesOf(changed!).length === 0, `in place: the summary's text, then the correction ${r.where}`)
      } else {
        // auto: the summary was sent already; it stays byte-identical, the erratum goes at the tail.
        assert.equal(summaryOf(changed!), SUMMARY, `auto: the summary untouched ${r.where}`)
        assert.deepEqual(notesOf(changed!), [fix], `auto: the erratum at the tail ${r.where}`)
      }

      // Line 12 changed, which the summary never restated: no new correction, the one given not repeated.
      assert.deepEqual(corrections(unrelated!), [fix], `no correction added for line 12 ${r.where}`)
      assert.equal(summaryOf(unrelated!), summaryOf(changed!), `the summary as the previous request had it ${r.where}`)
      assert.ok(batches(r.result.stderr).length >= 1, `the plugin logged the correction ${r.where}`)
    })
  }

  test("control, --pure (no plugin): the summary reaches the model stale after the change", async () => {
    const r = await play("compaction-pure", {}, true)
    const changed = r.model.requests[3]!
    assert.equal(summaryOf(changed), SUMMARY, r.where)
    const all = JSON.stringify(changed.messages)
    assert.ok(all.includes(STALE) && !all.includes(FRESH) && !all.includes("[concord]"), `the stale line only ${r.where}`)
  })
})
