// Captures what the pinned opencode-ai's compaction looks like to a plugin: the message history
// `experimental.chat.messages.transform` is handed before each model request (the summary request
// included), the bus events around it, and the requests the model received, into
// test/fixtures/opencode-<version>-compaction.json, for the binding's tests. Runs the real program
// offline against the scripted fake model (test/e2e): a read, then a reply whose usage overflows
// the context, so OpenCode compacts before its next call; the fake model writes the summary.
// Needs `npm run build` first. Usage: node scripts/capture-compaction.mjs
import fs from "node:fs"
import path from "node:path"
import { FakeModel } from "../dist/test/e2e/fakemodel.js"
import { OPENCODE_VERSION, PKG_ROOT, makeWorkspace, runOpencode } from "../dist/test/e2e/harness.js"

const files = { "config.yaml": "name: demo\nport: 8080\nretries: 3\n" }
const SUMMARY = "Summary: config.yaml sets port: 8080 (line 2)."
const ws = makeWorkspace("capture-compaction", files)
const file = path.join(ws.proj, "config.yaml")
const dumpPlugin = path.join(ws.root, "dump.js")
const dumpFile = path.join(ws.root, "transforms.jsonl")
fs.writeFileSync(
  dumpPlugin,
  `import fs from "node:fs"
const out = ${JSON.stringify(dumpFile)}
const put = (kind, value) => fs.appendFileSync(out, JSON.stringify({ kind, value }) + "\\n")
export const Dump = async () => ({
  "experimental.chat.messages.transform": async (_i, o) => put("transform", o.messages),
  "experimental.session.compacting": async (i) => put("compacting", i),
  event: async ({ event }) => { if (/compact|summar/.test(event.type)) put("event", event) },
})
`,
)
const step = () => ({ tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] })
const model = new FakeModel(
  [
    () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
    () => ({ ...step(), usage: { prompt_tokens: 500_000, completion_tokens: 10 } }),
    () => ({ text: "done" }),
  ],
  { untooled: () => SUMMARY },
)
const port = await model.start()
const r = await runOpencode(ws, { port, plugin: { kind: "dropin", file: dumpPlugin } })
await model.close()
if (r.code !== 0) {
  console.error(r.stderr.slice(-3000))
  process.exit(1)
}
const lines = fs.readFileSync(dumpFile, "utf8").trim().split("\n").map((l) => JSON.parse(l))
const scrub = (v) => JSON.parse(JSON.stringify(v).split(ws.proj).join("/PROJECT"))
const slim = (req) => req.messages.filter((m) => m.role !== "system")
const out = path.join(PKG_ROOT, "test", "fixtures", `opencode-${OPENCODE_VERSION}-compaction.json`)
fs.writeFileSync(
  out,
  JSON.stringify(
    scrub({
      opencode: OPENCODE_VERSION,
      note: "captured by scripts/capture-compaction.mjs (project path replaced by /PROJECT): what the plugin hooks were handed, in order, and what the model received",
      files,
      summary: SUMMARY,
      hooks: lines,
      requests: model.requests.map((q) => ({ index: q.index, messages: slim(q) })),
      untooledRequests: model.untooledRequests.map((q) => ({ messages: q.messages.filter((m) => m.role !== "system") })),
    }),
    null,
    1,
  ) + "\n",
)
console.log(`wrote ${out}: ${lines.length} hook calls, ${model.requests.length} requests, ${model.untooledRequests.length} without tools`)
