// Capture real OpenCode session exports for `concord audit`'s tests.
//
// The pinned opencode-ai (bindings/ts node_modules) runs without any plugin against the scripted
// fake model of the binding's e2e tests (127.0.0.1), in a project under /tmp/concord-audit/opencode
// with HOME/XDG dirs of its own; then `opencode export <sessionID>` prints the session, which is
// saved as testdata/audit/sessions/opencode/<scenario>.json. OpenCode 1.18 keeps sessions in SQLite
// (opencode.db); the export is the JSON form the audit reads.
//
//   make -C bindings/ts build && node testdata/audit/capture_opencode.mjs
import { execFileSync } from "node:child_process"
import fs from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
const ts = path.resolve(here, "../../bindings/ts")
const { runOpencode, opencodeBinary } = await import(path.join(ts, "dist/test/e2e/harness.js"))
const { FakeModel } = await import(path.join(ts, "dist/test/e2e/fakemodel.js"))

const ROOT = "/tmp/concord-audit/opencode"
const OUT = path.join(here, "sessions", "opencode")
const CONFIG = Array.from({ length: 12 }, (_, i) => `key_${i + 1}: value ${i + 1}`).join("\n") + "\n"

function workspace(name, files) {
  const root = path.join(ROOT, name)
  const proj = path.join(root, "proj")
  const home = path.join(root, "home")
  fs.mkdirSync(proj, { recursive: true })
  fs.mkdirSync(home, { recursive: true })
  const write = (rel, text) => {
    const f = path.join(proj, rel)
    fs.writeFileSync(f, text)
    return f
  }
  for (const [rel, text] of Object.entries(files)) write(rel, text)
  const git = (...a) => execFileSync("git", a, { cwd: proj, stdio: "ignore" })
  git("init", "-q")
  git("-c", "user.email=audit@example.invalid", "-c", "user.name=audit", "add", "-A")
  git("-c", "user.email=audit@example.invalid", "-c", "user.name=audit", "commit", "-q", "-m", "init")
  return { root, proj, home, write }
}

const scenarios = {
  // read, edit, read again: the first read is stale after the agent's own edit.
  "read-edit-read": (ws) => {
    const f = path.join(ws.proj, "config.yaml")
    return [
      () => ({ tools: [{ name: "read", args: { filePath: f } }] }),
      () => ({ tools: [{ name: "edit", args: { filePath: f, oldString: "key_4: value 4", newString: "key_4: value FOUR\nkey_4b: extra" } }] }),
      () => ({ tools: [{ name: "read", args: { filePath: f, offset: 3, limit: 4 } }] }),
      () => ({ text: "done" }),
    ]
  },
  // a window read, then the file changed out of band between two model calls, then read again.
  "changed-outside": (ws) => {
    const f = path.join(ws.proj, "config.yaml")
    return [
      () => ({ tools: [{ name: "read", args: { filePath: f, offset: 3, limit: 4 } }] }),
      () => {
        fs.writeFileSync(f, "# generated\n" + CONFIG.replace("key_5: value 5", "key_5: value five"))
        return { tools: [{ name: "bash", args: { command: `cat ${f}`, description: "show the config" } }] }
      },
      () => ({ tools: [{ name: "write", args: { filePath: f, content: "key_1: only\n" } }] }),
      () => ({ text: "done" }),
    ]
  },
  // read, edit, then a reply larger than the context: OpenCode compacts the session (a summary
  // replaces the history) before its next call, and the stale read leaves the prompt.
  compacted: (ws) => {
    const f = path.join(ws.proj, "config.yaml")
    const step = () => ({ tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] })
    return [
      () => ({ tools: [{ name: "read", args: { filePath: f } }] }),
      () => ({ tools: [{ name: "edit", args: { filePath: f, oldString: "key_2: value 2", newString: "key_2: value two" } }] }),
      () => ({ ...step(), usage: { prompt_tokens: 500_000, completion_tokens: 10 } }),
      () => ({ text: "done" }),
    ]
  },
}

if (!opencodeBinary()) throw new Error("opencode is not installed: make -C bindings/ts deps")
fs.rmSync(ROOT, { recursive: true, force: true })
fs.rmSync(OUT, { recursive: true, force: true })
fs.mkdirSync(OUT, { recursive: true })
for (const [name, steps] of Object.entries(scenarios)) {
  const ws = workspace(name, { "config.yaml": CONFIG })
  const model = new FakeModel(steps(ws))
  const port = await model.start()
  try {
    const r = await runOpencode(ws, { port, plugin: { kind: "none" }, prompt: "Please fix the config." })
    if (r.code !== 0 || model.failures.length) throw new Error(`${name}: exit ${r.code} ${model.failures}\n${r.stderr.slice(-3000)}`)
    const id = r.events.find((e) => e.sessionID)?.sessionID
    if (!id) throw new Error(`${name}: no sessionID in the run's events`)
    const h = ws.home
    const env = { PATH: process.env.PATH, HOME: h, XDG_CONFIG_HOME: path.join(h, "config"), XDG_DATA_HOME: path.join(h, "data"),
      XDG_CACHE_HOME: path.join(h, "cache"), XDG_STATE_HOME: path.join(h, "state"), OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1", OPENCODE_DISABLE_LSP_DOWNLOAD: "1", OPENCODE_DISABLE_DEFAULT_PLUGINS: "1", NO_COLOR: "1", CI: "1" }
    const out = execFileSync(opencodeBinary(), ["export", id], { cwd: ws.proj, env, encoding: "utf8", maxBuffer: 64 << 20 })
    const json = out.slice(out.indexOf("{"))
    JSON.parse(json) // it must be the export, whole
    fs.writeFileSync(path.join(OUT, `${name}.json`), json)
    console.log(name, id)
  } finally {
    await model.close()
  }
}
