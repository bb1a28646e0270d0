// Captures what the pinned opencode-ai's tools really return (grep, glob, read of a directory,
// bash reads, a file attached with -f) into test/fixtures/opencode-<version>-tools.json, for the
// parser tests. Runs the real program offline against the scripted fake model (test/e2e), with a
// one-hook plugin that writes the message history it is handed. Needs `npm run build` first.
// Usage: node scripts/capture-tools.mjs
import fs from "node:fs"
import path from "node:path"
import { FakeModel } from "../dist/test/e2e/fakemodel.js"
import { OPENCODE_VERSION, PKG_ROOT, makeWorkspace, runOpencode } from "../dist/test/e2e/harness.js"

const files = {
  "config.yaml": "name: demo\nport: 8080\ndebug: false\nlevel: info\nmode: fast\n",
  "src/server.ts": "export const port = 8080\nexport function listen() {\n  return port\n}\n",
  "src/util/strings.ts": "// port helpers\nexport const portName = 'http'\n",
  "src/notes.md": "# Notes\nThe port is configurable.\n",
  "docs/guide.md": "# Guide\n",
  ".hidden/secret.txt": "port: 1\n",
  "node_modules/dep/index.js": "module.exports = { port: 1 }\n",
  "long.txt": "port " + "x".repeat(2500) + "\n",
}
const ws = makeWorkspace("capture", files)
const P = ws.proj
const dumpPlugin = path.join(ws.root, "dump.js")
const dumpFile = path.join(ws.root, "messages.json")
fs.writeFileSync(
  dumpPlugin,
  `import fs from "node:fs"\nexport const Dump = async () => ({ "experimental.chat.messages.transform": async (_i, o) => { fs.writeFileSync(${JSON.stringify(dumpFile)}, JSON.stringify(o.messages)) } })\n`,
)
const calls = [
  ["grep", { pattern: "port" }],
  ["grep", { pattern: "port", path: path.join(P, "src"), include: "*.ts" }],
  ["grep", { pattern: "no-such-thing-anywhere" }],
  ["glob", { pattern: "**/*.ts" }],
  ["glob", { pattern: "*.md", path: path.join(P, "src") }],
  ["glob", { pattern: "**/*" }],
  ["glob", { pattern: "*.nothing" }],
  ["read", { filePath: P }],
  ["read", { filePath: path.join(P, "src") }],
  ["bash", { command: "cat config.yaml", description: "cat" }],
  ["bash", { command: "cat -n config.yaml", description: "cat -n" }],
  ["bash", { command: "head -n 3 config.yaml", description: "head" }],
  ["bash", { command: "tail -n 2 config.yaml", description: "tail" }],
  ["bash", { command: "sed -n '2,4p' config.yaml", description: "sed" }],
  ["bash", { command: "nl -ba src/server.ts", description: "nl" }],
  ["bash", { command: "grep -n port src/server.ts config.yaml", description: "grep" }],
  ["bash", { command: "grep -rn port src", description: "grep -r" }],
  ["bash", { command: "rg -n port src", description: "rg" }],
  ["bash", { command: "ls", description: "ls" }],
  ["bash", { command: "ls -la src", description: "ls -la" }],
  ["bash", { command: "find src", description: "find" }],
  ["bash", { command: "cat missing.txt", description: "missing" }],
]
const steps = calls.map(([name, args]) => () => ({ tools: [{ name, args }] }))
steps.push(() => ({ text: "done" }))
const model = new FakeModel(steps)
const port = await model.start()
const r = await runOpencode(ws, {
  port,
  plugin: { kind: "dropin", file: dumpPlugin },
  prompt: "look at the attached file",
  extraArgs: ["-f", path.join(P, "config.yaml")],
})
await model.close()
if (r.code !== 0) {
  console.error(r.stderr.slice(-3000))
  process.exit(1)
}
const messages = JSON.parse(fs.readFileSync(dumpFile, "utf8"))
const scrub = (v) => JSON.parse(JSON.stringify(v).split(P).join("/PROJECT"))
const tools = []
const user = []
for (const m of messages) {
  for (const p of m.parts) {
    if (p.type === "tool") tools.push({ tool: p.tool, input: p.state.input, status: p.state.status, output: p.state.output, error: p.state.error, metadata: p.state.metadata })
    else if (m.info.role === "user") user.push({ type: p.type, synthetic: p.synthetic, text: p.text, mime: p.mime, filename: p.filename, url: p.url, source: p.source })
  }
}
const out = path.join(PKG_ROOT, "test", "fixtures", `opencode-${OPENCODE_VERSION}-tools.json`)
fs.writeFileSync(
  out,
  JSON.stringify(
    scrub({ opencode: OPENCODE_VERSION, note: `captured by scripts/capture-tools.mjs (project path replaced by /PROJECT)`, files, tools, userParts: user }),
    null,
    1,
  ) + "\n",
)
console.log(`wrote ${out}: ${tools.length} tool results, ${user.length} user parts`)
