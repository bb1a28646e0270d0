// The acceptance scenarios, run by opencode.test.ts in the real `opencode` (pinned opencode-ai)
// and by kilo.test.ts in the real `kilo` (pinned @kilocode/cli, an OpenCode fork with the same
// plugin system): the program runs non-interactively with `run --format json` in a temp git repo
// against a scripted fake model on 127.0.0.1, with this plugin enabled. The fake model asks for
// reads, the test changes files between two model calls, and the next request is checked for the
// repaired text and the absence of the stale line. A control run with --pure (plugins off) shows
// the stale text reaching the model.
import { test, describe, before } from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import path from "node:path"
import { pathToFileURL } from "node:url"
import { FakeModel, type Step } from "./fakemodel.js"
import {
  PKG_ROOT,
  fetchedFromNpm,
  makeWorkspace,
  programBinary,
  runOpencode,
  serveOpencode,
  skipWithoutRipgrep,
  type PluginMode,
  type Program,
  type RunOptions,
  type RunResult,
  type Server,
  type Workspace,
} from "./harness.js"
import { concordBin, skipWithoutConcord } from "../support/concordbin.js"
import { openCodeRead } from "../support/expected.js"

const DROPIN: PluginMode = { kind: "dropin", file: path.join(PKG_ROOT, "dist", "concord-opencode.js") }
const CONFIG_LINE: PluginMode = { kind: "config", spec: `file://${path.join(PKG_ROOT, "dist", "src", "index.js")}` }

const CONFIG = [
  "name: demo",
  "port: 8080",
  "debug: false",
  "level: info",
  "mode: fast",
  "user: admin",
  "retries: 3",
  "timeout: 30",
  "region: eu",
  "owner: ops",
  "cache: on",
  "color: blue",
].join("\n") + "\n"

const skipPlugin = skipWithoutConcord()
const text = (req: Parameters<Step>[0], id: string) => FakeModel.toolResult(req, id) ?? "<missing tool message>"

/** Every scenario, in `program`: what opencode.test.ts and kilo.test.ts run. */
export function pluginScenarios(program: Program): void {
  before(() => {
    assert.ok(programBinary(program), `${program.pkg} is installed (make -C bindings/ts e2e-deps)`)
    for (const f of [DROPIN.kind === "dropin" ? DROPIN.file : "", path.join(PKG_ROOT, "dist", "src", "index.js")]) {
      assert.ok(fs.existsSync(f), `${f} is built (npm run build)`)
    }
    console.log(`# ${program.pkg} ${program.version}, concord ${concordBin() ?? "(absent)"}`)
  })
  repairScenarios(program)
  placementScenarios(program)
}

interface Scenario {
  name: string
  files: Record<string, string>
  steps: (ws: Workspace) => Step[]
  run?: Partial<RunOptions>
  /** Put the concord binary next to the drop-in plugin file instead of setting CONCORD_BIN. */
  binNextToPlugin?: boolean
  /** More arguments for `concord serve` (the wrapper appends them). */
  concordArgs?: (ws: Workspace) => string[]
}

async function playIn(program: Program, s: Scenario): Promise<{ ws: Workspace; model: FakeModel; result: RunResult }> {
  const ws = makeWorkspace(s.name, s.files)
  const model = new FakeModel(s.steps(ws))
  const port = await model.start()
  try {
    // The tests of the repairs themselves pin inplace (the default is auto); the placement tests
    // set their own (none: the default).
    const env: Record<string, string> = { CONCORD_PLACEMENT: "inplace", ...s.run?.env }
    if (concordBin() && !env.CONCORD_BIN) {
      if (s.binNextToPlugin) {
        const dir = path.join(ws.proj, program.projectDir, "plugins")
        fs.mkdirSync(dir, { recursive: true })
        fs.copyFileSync(concordWrapper(ws, s.concordArgs?.(ws)), path.join(dir, "concord"))
        fs.chmodSync(path.join(dir, "concord"), 0o755)
      } else {
        env.CONCORD_BIN = concordWrapper(ws, s.concordArgs?.(ws))
      }
    }
    const result = await runOpencode(ws, { program, port, plugin: DROPIN, ...s.run, env })
    console.log(`# ${s.name}: ${program.name} exit ${result.code} in ${result.ms} ms, ${model.requests.length} model calls`)
    return { ws, model, result }
  } finally {
    await model.close()
    model.dump(path.join(ws.root, "model-requests.json"))
  }
}

/**
 * CONCORD_BIN for a run: a wrapper that records each concord child's pid in <root>/concord.pids
 * and execs the real binary (same pid), so tests can kill one and check none outlives OpenCode.
 */
function concordWrapper(ws: Workspace, extra: string[] = []): string {
  const wrapper = path.join(ws.root, "concord-wrapper.sh")
  const q = (x: string) => `'${x.replace(/'/g, `'\\''`)}'`
  const more = extra.map((a) => ` ${q(a)}`).join("")
  fs.writeFileSync(wrapper, `#!/bin/sh\necho $$ >> ${q(path.join(ws.root, "concord.pids"))}\nexec ${q(concordBin()!)} "$@"${more}\n`, {
    mode: 0o755,
  })
  return wrapper
}

function concordPids(ws: Workspace): number[] {
  const file = path.join(ws.root, "concord.pids")
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map(Number) : []
}

/** Asserts that no concord child outlived the OpenCode run (dispose, or stdin closing, ended it). */
async function assertNoOrphans(ws: Workspace): Promise<void> {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0)
      return true
    } catch {
      return false
    }
  }
  const until = Date.now() + 3000
  let left = concordPids(ws).filter(alive)
  while (left.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50))
    left = left.filter(alive)
  }
  assert.deepEqual(left, [], `concord processes left running after OpenCode exited (logs: ${ws.root})`)
}

async function assertClean(r: { ws: Workspace; model: FakeModel; result: RunResult }, calls: number): Promise<void> {
  const where = `(logs: ${r.ws.root})`
  assert.deepEqual(r.model.failures, [], `fake model expectations ${where}`)
  assert.equal(r.result.code, 0, `exit status ${where}\n${r.result.stderr.slice(-2000)}`)
  assert.equal(r.model.requests.length, calls, `model calls ${where}`)
  assert.ok(!r.result.events.some((e) => e.type === "error"), `no error events ${where}`)
  assert.ok(!fetchedFromNpm(r.ws), `nothing fetched from npm at run time ${where}`)
  await assertNoOrphans(r.ws)
}

/** The plugin's warnings as OpenCode logged them (app.log; printed to stderr by --print-logs). */
function warnings(stderr: string): string[] {
  return stderr.split("\n").filter((l) => l.includes("level=WARN") && l.includes("[concord] WARNING"))
}

/** The per-sync repair lines the plugin logged ("concord: 2 reads repaired, 1 re-read notice"). */
function batches(stderr: string): string[] {
  return stderr.split("\n").flatMap((l) => {
    const m = l.includes("level=INFO") ? /message="(concord: [^"]*)"/.exec(l) : null
    return m ? [m[1]!] : []
  })
}

/** Nothing the plugin printed raw (outside OpenCode's log) — it would land on the TUI's screen. */
function rawPluginLines(stderr: string): string[] {
  return stderr.split("\n").filter((l) => l.startsWith("[concord]"))
}

/** Whether this concord tracks listing sources (CONTRACTS.md): a real listing observed valid. */
async function serverHasListings(): Promise<false | string> {
  const bin = concordBin()
  if (!bin) return skipPlugin || "no concord"
  const { ConcordClient, PROTOCOL_VERSION } = await import("../../src/client.js")
  const dir = fs.mkdtempSync(path.join(PKG_ROOT, ".e2e-probe-"))
  fs.writeFileSync(path.join(dir, "a.txt"), "a\n")
  const c = new ConcordClient({ bin, args: ["serve"] })
  try {
    await c.initialize({ protocolVersion: PROTOCOL_VERSION, clientInfo: { name: "probe", version: "0" }, roots: [dir] })
    const res = await c.observe({ agent: "main", turn: 0, anchor: "p", sources: [{ uri: `${pathToFileURL(dir).href}?depth=1&hidden=1`, text: "a.txt" }] })
    return res.status === "valid" ? false : `SKIPPED: this concord does not track listing sources yet (observe of a directory URI gave status ${res.status}; needs the "fs" core feature)`
  } catch (err) {
    return `SKIPPED: this concord does not track listing sources yet (${(err as Error).message}; needs the "fs" core feature)`
  } finally {
    await c.close(500)
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

function repairScenarios(program: Program): void {
  const play = (s: Scenario) => playIn(program, s)
  describe(`${program.name} ${program.version ?? "?"} with the concord plugin`, { concurrency: 1 }, () => {
    test("out-of-band local edit: the next request carries the patched lines, identical to a fresh read (enabled by one config line)", { skip: skipPlugin }, async () => {
      let repaired = ""
      const r = await play({
        name: "local-edit",
        files: { "config.yaml": CONFIG },
        run: { plugin: CONFIG_LINE },
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
            (req, m) => {
              m.expect(text(req, "call_1").includes("2: port: 8080"), "first read shows the original")
              fs.writeFileSync(file, CONFIG.replace("port: 8080", "port: 9090"))
              return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
            },
            (req, m) => {
              repaired = text(req, "call_1")
              m.expect(repaired === openCodeRead(file).output, `call_1 repaired in OpenCode's format; got:\n${repaired}`)
              m.expect(!repaired.includes("8080"), "no stale line")
              m.expect(text(req, "call_2") === "step\n", "the bash result is untouched")
              return { tools: [{ name: "read", args: { filePath: file } }] }
            },
            (req, m) => {
              m.expect(text(req, "call_3") === repaired, "a fresh read by OpenCode is byte-identical to the repaired one")
              const older = text(req, "call_1")
              m.expect(older.startsWith("[concord]") && older.includes(file), `the older read now points at the newer one; got:\n${older}`)
              m.expect(!older.includes("8080"), "still no stale line once a newer read exists")
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 4)
      assert.deepEqual(warnings(r.result.stderr), [])
    })

    test("control run with --pure (plugin off): the stale text reaches the model", async () => {
      const r = await play({
        name: "control-pure",
        files: { "config.yaml": CONFIG },
        run: { pure: true },
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
            () => {
              fs.writeFileSync(file, CONFIG.replace("port: 8080", "port: 9090"))
              return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
            },
            (req, m) => {
              const seen = text(req, "call_1")
              m.expect(seen.includes("2: port: 8080"), "without the plugin the model still sees the stale line")
              m.expect(!seen.includes("9090"), "and not the current one")
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 3)
    })

    test("whole-file rewrite: a whole-file read is refreshed, a partial read is replaced by Concord's re-read notice (binary found next to the plugin file)", { skip: skipPlugin }, async () => {
      const r = await play({
        name: "rewrite",
        files: { "config.yaml": CONFIG },
        binNextToPlugin: true,
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
            () => ({ tools: [{ name: "read", args: { filePath: file, offset: 2, limit: 3 } }] }),
            () => {
              fs.writeFileSync(file, '{\n  "service": "api",\n  "listen": ":443"\n}\n')
              return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
            },
            (req, m) => {
              // Concord's default on drift: a whole-file read is refreshed (a re-read would return
              // exactly that text); a partial one gets the notice.
              m.expect(text(req, "call_1") === openCodeRead(file).output, `call_1 refreshed; got:\n${text(req, "call_1")}`)
              const seen = text(req, "call_2")
              m.expect(seen.startsWith("[concord]"), `a notice instead of the read; got:\n${seen}`)
              m.expect(seen.includes(file), "the notice names the file")
              m.expect(/re-read/i.test(seen), "the notice asks for a re-read")
              for (const line of CONFIG.trim().split("\n")) m.expect(!seen.includes(line), `stale line ${line} gone`)
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 4)
      assert.equal(concordPids(r.ws).length, 1, "the concord next to the plugin was used")
    })

    test("the agent's own edit repairs its earlier read", { skip: skipPlugin }, async () => {
      const r = await play({
        name: "own-edit",
        files: { "config.yaml": CONFIG },
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
            () => ({ tools: [{ name: "edit", args: { filePath: file, oldString: "retries: 3", newString: "retries: 5" } }] }),
            (req, m) => {
              m.expect(text(req, "call_2").startsWith("Edit applied successfully."), `the edit ran: ${text(req, "call_2")}`)
              m.expect(fs.readFileSync(file, "utf8").includes("retries: 5"), "the file was edited")
              const seen = text(req, "call_1")
              m.expect(seen === openCodeRead(file).output, `call_1 shows the edited file; got:\n${seen}`)
              m.expect(!seen.includes("retries: 3"), "no stale line")
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 3)
    })

    test("the agent's own apply_patch (gpt- model ids get apply_patch) repairs its earlier read", { skip: skipPlugin }, async () => {
      const r = await play({
        name: "own-apply-patch",
        files: { "config.yaml": CONFIG },
        run: { model: "gpt-5-fake" },
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            (req, m) => {
              const tools = ((req.body.tools as any[]) ?? []).map((t) => t.function?.name)
              m.expect(tools.includes("apply_patch") && !tools.includes("edit"), `apply_patch toolset: ${tools}`)
              return { tools: [{ name: "read", args: { filePath: file } }] }
            },
            () => ({
              tools: [
                {
                  name: "apply_patch",
                  args: { patchText: "*** Begin Patch\n*** Update File: config.yaml\n@@\n owner: ops\n-cache: on\n+cache: off\n color: blue\n*** End Patch" },
                },
              ],
            }),
            (req, m) => {
              m.expect(text(req, "call_2").startsWith("Success."), `the patch ran: ${text(req, "call_2")}`)
              const seen = text(req, "call_1")
              m.expect(seen === openCodeRead(file).output, `call_1 shows the patched file; got:\n${seen}`)
              m.expect(!seen.includes("cache: on"), "no stale line")
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 3)
    })

    test("a partial read (offset/limit): repaired at its new line numbers, identical to a fresh read of the moved window", { skip: skipPlugin }, async () => {
      let repaired = ""
      const r = await play({
        name: "partial-read",
        files: { "config.yaml": CONFIG },
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            () => ({ tools: [{ name: "read", args: { filePath: file, offset: 3, limit: 4 } }] }),
            (req, m) => {
              m.expect(text(req, "call_1").includes("(Showing lines 3-6 of 12. Use offset=7 to continue.)"), "a window was read")
              // Two lines inserted above the window move it to 5-8; one line inside it changes.
              fs.writeFileSync(file, "# generated\n# do not edit\n" + CONFIG.replace("mode: fast", "mode: slow"))
              return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
            },
            (req, m) => {
              repaired = text(req, "call_1")
              m.expect(repaired === openCodeRead(file, 5, 4).output, `window repaired at lines 5-8; got:\n${repaired}`)
              m.expect(repaired.includes("7: mode: slow") && !repaired.includes("mode: fast"), "no stale line")
              return { tools: [{ name: "read", args: { filePath: file, offset: 5, limit: 4 } }] }
            },
            (req, m) => {
              m.expect(text(req, "call_3") === repaired, `a fresh read of lines 5-8 is byte-identical; got:\n${text(req, "call_3")}`)
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 4)
    })

    test("a resumed session (--continue): reads the plugin never saw are registered from the history and repaired", { skip: skipPlugin }, async () => {
      const ws = makeWorkspace("resume", { "config.yaml": CONFIG })
      const file = path.join(ws.proj, "config.yaml")
      const first = new FakeModel([() => ({ tools: [{ name: "read", args: { filePath: file, offset: 1, limit: 6 } }] }), () => ({ text: "read it" })])
      const env = { CONCORD_BIN: concordWrapper(ws) }
      let port = await first.start()
      const r1 = await runOpencode(ws, { program, port, plugin: DROPIN, env })
      await first.close()
      assert.equal(r1.code, 0, r1.stderr.slice(-2000))
      assert.deepEqual(first.failures, [])
      fs.writeFileSync(file, CONFIG.replace("user: admin", "user: root"))
      const second = new FakeModel(
        [
          (req, m) => {
            const seen = text(req, "call_1")
            m.expect(seen === openCodeRead(file, 1, 6).output, `the stored read is repaired in the resumed session; got:\n${seen}`)
            m.expect(!seen.includes("user: admin"), "no stale line")
            return { text: "done" }
          },
        ],
        { firstCall: 100 },
      )
      port = await second.start()
      const r2 = await runOpencode(ws, { program, port, plugin: DROPIN, env, continue: true, prompt: "again" })
      await second.close()
      first.dump(path.join(ws.root, "model-requests-1.json"))
      second.dump(path.join(ws.root, "model-requests-2.json"))
      console.log(`# resume: runs of ${r1.ms} + ${r2.ms} ms`)
      assert.deepEqual(second.failures, [], `logs: ${ws.root}`)
      assert.equal(r2.code, 0, r2.stderr.slice(-2000))
      assert.equal(second.requests.length, 1)
      assert.ok(!fetchedFromNpm(ws), "nothing fetched from npm at run time")
      assert.equal(concordPids(ws).length, 2, "one concord per run")
      await assertNoOrphans(ws)
    })

    test("concord binary missing: OpenCode runs as without the plugin, one warning", async () => {
      const r = await play({
        name: "missing-binary",
        files: { "config.yaml": CONFIG },
        run: { env: { CONCORD_BIN: "/nonexistent/concord" } },
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
            () => {
              fs.writeFileSync(file, CONFIG.replace("port: 8080", "port: 9090"))
              return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
            },
            (req, m) => {
              m.expect(text(req, "call_1").includes("2: port: 8080"), "the read passes through unchanged")
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 3)
      const w = warnings(r.result.stderr)
      assert.equal(w.length, 1, r.result.stderr.slice(-3000))
      assert.match(w[0]!, /\/nonexistent\/concord/)
      assert.deepEqual(rawPluginLines(r.result.stderr), [], "the warning goes through OpenCode's log, not raw over the TUI")
    })

    test("concord killed (SIGKILL) mid-session: restarted, the context registered again, the change made while it was dead repaired (repairs lost: 0)", { skip: skipPlugin }, async () => {
      let lost = 0
      const r = await play({
        name: "killed",
        files: { "config.yaml": CONFIG },
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
            (_req, m) => {
              const pids = concordPids(ws)
              m.expect(pids.length === 1, `one concord for the session: ${pids}`)
              for (const pid of pids) process.kill(pid, "SIGKILL")
              // Changed while no concord runs: nothing watches the file until the restart.
              fs.writeFileSync(file, CONFIG.replace("color: blue", "color: red"))
              return { tools: [{ name: "bash", args: { command: "echo one", description: "one" } }] }
            },
            (req, m) => {
              const seen = text(req, "call_1")
              if (seen !== openCodeRead(file).output) lost++
              m.expect(seen === openCodeRead(file).output, `the read is repaired by the restarted concord; got:\n${seen}`)
              m.expect(concordPids(ws).length === 2, `a second concord was started: ${concordPids(ws)}`)
              fs.writeFileSync(file, CONFIG.replace("color: blue", "color: green"))
              return { tools: [{ name: "bash", args: { command: "echo two", description: "two" } }] }
            },
            (req, m) => {
              const seen = text(req, "call_1")
              if (seen !== openCodeRead(file).output) lost++
              m.expect(seen === openCodeRead(file).output, `and kept up to date after it; got:\n${seen}`)
              m.expect(text(req, "call_3") === "two\n", "the session kept going")
              return { text: "done" }
            },
          ]
        },
      })
      console.log(`# killed: repairs lost ${lost}`)
      await assertClean(r, 4)
      assert.equal(lost, 0, "repairs lost")
      assert.deepEqual(warnings(r.result.stderr), [], "a restart that works is not a warning")
      assert.deepEqual(batches(r.result.stderr), ["concord: 1 read repaired", "concord: 1 read repaired"])
      assert.deepEqual(rawPluginLines(r.result.stderr), [], "nothing raw over the TUI")
    })

    test("grep hits are one block: a hit whose line moved and changed is shown at its new line", { skip: skipPlugin || skipWithoutRipgrep() }, async () => {
      const r = await play({
        name: "grep",
        files: { "config.yaml": CONFIG, "src/app.ts": "export const port = 8080\nexport const host = 'x'\n" },
        steps: (ws) => {
          const cfg = path.join(ws.proj, "config.yaml")
          const app = path.join(ws.proj, "src/app.ts")
          return [
            () => ({ tools: [{ name: "grep", args: { pattern: "port", include: "*.{yaml,ts}" } }] }),
            (req, m) => {
              const first = text(req, "call_1")
              m.expect(first.startsWith("Found 3 matches") && first.includes(`${cfg}:\n  Line 2: port: 8080`), `grep ran: ${first}`)
              fs.writeFileSync(cfg, "# generated\n" + CONFIG.replace("port: 8080", "port: 9090"))
              return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
            },
            (req, m) => {
              const seen = text(req, "call_1")
              m.expect(seen.includes(`${cfg}:\n  Line 3: port: 9090\n`), `the hit is repaired at line 3; got:\n${seen}`)
              m.expect(!seen.includes("8080\n\n\n") && !seen.includes("Line 2: port: 8080"), "no stale hit")
              m.expect(seen.includes(`${app}:\n  Line 1: export const port = 8080`), "the other file's hit is unchanged")
              return { tools: [{ name: "grep", args: { pattern: "port", include: "*.{yaml,ts}" } }] }
            },
            (req, m) => {
              // A fresh grep by OpenCode prints the same hits the repair showed.
              const fresh = text(req, "call_3")
              m.expect(fresh.includes(`${cfg}:\n  Line 3: port: 9090`), `fresh grep agrees: ${fresh}`)
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 4)
      assert.ok(batches(r.result.stderr).includes("concord: 1 read repaired"), r.result.stderr.split("\n").filter((l) => l.includes("concord")).join("\n"))
    })

    test("bash file reads (cat -n, sed -n, a pipeline of one file, grep without -n) are repaired in the command's own format; echo is left alone", { skip: skipPlugin }, async () => {
      // The pipeline and sed run a step after cat -n: OpenCode runs the tools of one step at once
      // (in no fixed order: Kilo CLI often finishes the pipeline first), and a window registered
      // before cat -n would be a read that cat's newer whole-file read supersedes.
      const r = await play({
        name: "bash-read",
        files: { "config.yaml": CONFIG },
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            () => ({
              tools: [{ name: "bash", args: { command: "cat -n config.yaml", description: "cat" } }],
            }),
            () => ({
              tools: [
                { name: "bash", args: { command: "cat config.yaml | head -n 3", description: "pipe" } },
                { name: "bash", args: { command: "sed -n '2,4p' config.yaml", description: "sed" } },
                { name: "bash", args: { command: "grep 'debug\\|mode' config.yaml", description: "grep" } },
              ],
            }),
            (req, m) => {
              m.expect(text(req, "call_3") === "port: 8080\ndebug: false\nlevel: info\n", `sed ran: ${text(req, "call_3")}`)
              m.expect(text(req, "call_4") === "debug: false\nmode: fast\n", `grep ran: ${text(req, "call_4")}`)
              fs.writeFileSync(file, CONFIG.replace("debug: false", "debug: true"))
              return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
            },
            (req, m) => {
              const lines = CONFIG.replace("debug: false", "debug: true").trimEnd().split("\n")
              m.expect(text(req, "call_1") === lines.map((l, i) => `${String(i + 1).padStart(6)}\t${l}`).join("\n") + "\n", `cat -n repaired; got:\n${text(req, "call_1")}`)
              m.expect(text(req, "call_3") === "port: 8080\ndebug: true\nlevel: info\n", `sed -n repaired; got:\n${text(req, "call_3")}`)
              m.expect(text(req, "call_2") === "name: demo\nport: 8080\ndebug: true\n", `the pipeline (cat | head) repaired; got:\n${text(req, "call_2")}`)
              m.expect(text(req, "call_4") === "debug: true\nmode: fast\n", `grep without -n repaired; got:\n${text(req, "call_4")}`)
              m.expect(text(req, "call_5") === "step\n", `echo untouched; got:\n${text(req, "call_5")}`)
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 4)
    })

    test("a file attached with -f (OpenCode's synthetic read in the user message) is repaired", { skip: skipPlugin }, async () => {
      const r = await play({
        name: "attachment",
        files: { "config.yaml": CONFIG },
        run: { prompt: "look at it", extraArgs: ["-f", "config.yaml"] },
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          const userText = (req: Parameters<Step>[0]) => req.messages.filter((m) => m.role === "user").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content))).join("\n")
          return [
            (req, m) => {
              m.expect(userText(req).includes("2: port: 8080"), "the attachment reached the model")
              fs.writeFileSync(file, CONFIG.replace("port: 8080", "port: 9090"))
              return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
            },
            (req, m) => {
              const u = userText(req)
              m.expect(u.includes("2: port: 9090") && !u.includes("2: port: 8080"), `the attached read is repaired; got:\n${u.slice(0, 1500)}`)
              return { text: "done" }
            },
          ]
        },
      })
      await assertClean(r, 2)
    })

    test("glob and a directory read are listing sources: a new file makes them out of date", { skip: skipPlugin || skipWithoutRipgrep() }, async (t) => {
      const why = await serverHasListings()
      if (why) return t.skip(why)
      const r = await play({
        name: "listing",
        files: { "config.yaml": CONFIG, "src/a.ts": "a\n" },
        steps: (ws) => [
          () => ({ tools: [{ name: "glob", args: { pattern: "**/*.ts" } }, { name: "read", args: { filePath: path.join(ws.proj, "src") } }] }),
          () => {
            fs.writeFileSync(path.join(ws.proj, "src/b.ts"), "b\n")
            return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
          },
          (req, m) => {
            for (const id of ["call_1", "call_2"]) {
              const seen = text(req, id)
              m.expect(seen.startsWith("[concord]") && seen.includes("b.ts"), `${id}: the listing notice names the new file; got:\n${seen}`)
            }
            return { text: "done" }
          },
        ],
      })
      await assertClean(r, 3)
    })

  })
}

// Placement tail/auto (docs/protocol.md#placement-cache-aware-repair). Every chat request the real
// OpenCode sends is captured; the assertions are on the serialized messages arrays. The plugin
// appends a note to the output of the newest message's last tool result (at a model call in the
// agent loop, the newest message is the previous step's assistant message, and its last tool
// result is the last message on the wire); a newest message without one gets a text part.

const NOTES = ["alpha: 1", "beta: 2", "gamma: 3", "delta: 4"].join("\n") + "\n"
const NOTE_SEP = "\n\n[concord] "

/** The JSON of each message, as the provider received it (system prompt included). */
const wire = (req: { messages: unknown[] }) => req.messages.map((m) => JSON.stringify(m))

/** The notes of a request: { index of the message, text }, in order. */
function notesOf(req: { messages: { role: string; content?: unknown }[] }): { at: number; text: string }[] {
  const texts = (c: unknown): string[] =>
    typeof c === "string" ? [c] : Array.isArray(c) ? c.map((p) => (typeof p?.text === "string" ? p.text : "")) : []
  return req.messages.flatMap((m, at) =>
    texts(m.content).flatMap((t) => {
      if (m.role !== "tool" && t.startsWith("[concord]")) return [{ at, text: t }]
      return t.split(NOTE_SEP).slice(1).map((x) => ({ at, text: `[concord] ${x}` }))
    }),
  )
}

/**
 * (c) Append-only: every message of each request is byte-identical, at the same index, at the
 * start of the next one (the cached prefix is never rewritten).
 */
function assertAppendOnly(reqs: { index: number; messages: unknown[] }[], where: string): void {
  for (let k = 1; k < reqs.length; k++) {
    const prev = wire(reqs[k - 1]!)
    const next = wire(reqs[k]!)
    assert.ok(next.length > prev.length, `request ${k + 1} is longer than request ${k} ${where}`)
    assert.deepEqual(next.slice(0, prev.length), prev, `request ${k}'s messages are the prefix of request ${k + 1}'s ${where}`)
  }
}

/** Where a run's --rpc-trace log goes, and the concord arguments that write it. */
const rpcLog = (ws: Workspace): string => path.join(ws.root, "concord-rpc.log")
const rpcTraceArgs = (ws: Workspace): string[] => ["--rpc-trace", "--log-file", rpcLog(ws)]

/**
 * The compaction scenario: read config.yaml, change it behind the model's back, then answer with
 * more prompt tokens than the model's context holds (the erratum is on the wire by then), so
 * OpenCode compacts before its next call; then finish.
 */
function overflowSteps(ws: Workspace): Step[] {
  const file = path.join(ws.proj, "config.yaml")
  const step = () => ({ tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] })
  return [
    () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
    () => {
      fs.writeFileSync(file, CONFIG.replace("port: 8080", "port: 9090"))
      return step()
    },
    () => ({ ...step(), usage: { prompt_tokens: 500_000, completion_tokens: 10 } }),
    () => ({ text: "done" }),
  ]
}

/** The JSON-RPC messages a concord run read and wrote, from its --rpc-trace log. */
function rpcTrace(log: string): { recv: any[]; sent: any[]; result: (id: unknown) => any } {
  const lines = fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n") : []
  const pick = (dir: string) =>
    lines.flatMap((line) => {
      const m = new RegExp(`msg="rpc ${dir}" json=(".*")$`).exec(line)
      if (!m) return []
      try {
        return [JSON.parse(JSON.parse(m[1]!))]
      } catch {
        return [] // a message over the trace's 64 KB clip (a large result sent to recognize)
      }
    })
  const sent = pick("send")
  return { recv: pick("recv"), sent, result: (id) => sent.find((m) => m.id === id)?.result }
}

/**
 * The compaction scenarios' first three requests: call_1 as the model first saw it (port 8080),
 * untouched after the change, and one erratum naming it at the end of request 3.
 */
function assertErratumBeforeRebuild(reqs: FakeModel["requests"], file: string, where: string): void {
  assert.ok(text(reqs[1]!, "call_1").includes("2: port: 8080"), `the first read as OpenCode made it ${where}`)
  assert.equal(text(reqs[2]!, "call_1"), text(reqs[1]!, "call_1"), `call_1 left byte-identical in request 3 ${where}`)
  const n3 = notesOf(reqs[2]!)
  assert.deepEqual(n3.map((n) => n.at), [reqs[2]!.messages.length - 1], `one note, in the last message of request 3 ${where}`)
  assert.equal(reqs[2]!.messages.at(-1)!.tool_call_id, "call_2")
  const note = n3[0]!.text
  assert.ok(note.includes("call_1") && note.includes(file) && note.includes("port: 9090"), `the note names call_1: ${note}`)
  assertAppendOnly(reqs.slice(0, 3), where)
}

/**
 * Concord's side of a compaction (--rpc-trace): the syncs of requests 1-3 are plain; the last
 * sync (request 4's) says prefixRebuilt; a sync flushed exactly when it said prefixRebuilt; and,
 * when call_1 survived the compaction (`kept`), a flush put its deferred repair in place with the
 * new text, else no flush mentions it. Returns the prefixRebuilt syncs.
 */
function assertFlushed(log: string, where: string, kept = true): any[] {
  const trace = rpcTrace(log)
  const syncs = trace.recv.filter((m) => m.method === "sync")
  const results = syncs.map((m) => trace.result(m.id))
  assert.ok(syncs.length >= 4 && results.every((x) => x !== undefined), `every sync answered ${where}`)
  const rebuilt = syncs.map((m) => m.params.prefixRebuilt === true)
  assert.deepEqual(rebuilt.slice(0, 3), [false, false, false], `no prefixRebuilt before the compaction ${where}`)
  assert.equal(rebuilt.at(-1), true, `request 4's sync says prefixRebuilt ${where}`)
  assert.deepEqual(results.map((x) => x.flushed === true), rebuilt, `flushed exactly on prefixRebuilt ${where}`)
  const call1 = results.flatMap((x) => (x.flushed ? x.blocks : [])).filter((b: any) => b.anchor === "call_1")
  if (!kept) {
    assert.deepEqual(call1, [], `no flush carries call_1, summarized and released ${where}`)
    return syncs.filter((m) => m.params.prefixRebuilt === true)
  }
  assert.equal(call1.length, 1, `one flush carries call_1 ${where}`)
  assert.equal(call1[0].placement, undefined, `in place, not at the tail ${where}`)
  assert.ok(call1[0].sources.some((src: any) => String(src.text).includes("port: 9090")), `with the new text ${where}`)
  return syncs.filter((m) => m.params.prefixRebuilt === true)
}

function placementScenarios(program: Program): void {
  const play = (s: Scenario) => playIn(program, s)
  describe(`${program.name} ${program.version ?? "?"}, placement tail/auto: errata at the tail, the prompt append-only`, { concurrency: 1 }, () => {
    for (const placement of ["tail", "auto"] as const) {
      test(`${placement === "auto" ? "auto (the default)" : placement}: an outside change leaves call_1 byte-identical and adds a sticky erratum at the end of the prompt; every request extends the previous one`, { skip: skipPlugin }, async () => {
        let original = ""
        const r = await play({
          name: `placement-${placement}`,
          files: { "config.yaml": CONFIG, "notes.txt": NOTES },
          // auto: nothing set, the default.
          run: { env: { CONCORD_PLACEMENT: placement === "auto" ? "" : placement } },
          steps: (ws) => {
            const file = path.join(ws.proj, "config.yaml")
            const notes = path.join(ws.proj, "notes.txt")
            const step = () => ({ tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] })
            return [
              () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
              (req) => {
                original = text(req, "call_1")
                fs.writeFileSync(file, CONFIG.replace("port: 8080", "port: 9090"))
                return step()
              },
              // A read the model has not been sent yet, changed before the next call (the sleep
              // keeps the change after the read if OpenCode runs the two calls at once).
              () => ({
                tools: [
                  { name: "read", args: { filePath: notes } },
                  { name: "bash", args: { command: "sleep 1; sed -i 's/beta: 2/beta: 7/' notes.txt", description: "change" } },
                ],
              }),
              step,
              () => ({ text: "done" }),
            ]
          },
        })
        await assertClean(r, 5)
        const where = `(logs: ${r.ws.root})`
        const file = path.join(r.ws.proj, "config.yaml")
        const notes = path.join(r.ws.proj, "notes.txt")
        const reqs = r.model.requests
        assert.ok(original.includes("2: port: 8080"), `the first read as OpenCode made it ${where}`)

        // (a) call_1's tool message is the same bytes on every call after the change.
        const call1 = (k: number) => JSON.stringify(reqs[k]!.messages.find((m) => m.role === "tool" && m.tool_call_id === "call_1"))
        for (const k of [2, 3, 4]) assert.equal(call1(k), call1(1), `call_1's tool message unchanged in request ${k + 1} ${where}`)
        assert.equal(text(reqs[4]!, "call_1"), original)

        // (b) Request 3 (right after the change): one note, at the very end of the prompt: after
        // call_2's own output ("step\n") in its tool message, the last message.
        assert.deepEqual([...notesOf(reqs[0]!), ...notesOf(reqs[1]!)], [], `no note before the change ${where}`)
        const at = reqs[2]!.messages.length - 1
        const n3 = notesOf(reqs[2]!)
        assert.deepEqual(n3.map((n) => n.at), [at], `one note, in the last message of request 3 ${where}`)
        assert.equal(reqs[2]!.messages[at]!.tool_call_id, "call_2")
        assert.equal(text(reqs[2]!, "call_2"), `step\n${NOTE_SEP}${n3[0]!.text.slice("[concord] ".length)}`, "the note follows call_2's output")
        const note = n3[0]!.text
        assert.ok(note.includes("call_1") && note.includes(file), `the note names call_1 and the file: ${note}`)
        assert.ok(note.includes("port: 9090"), `an outside change carries the changed line: ${note}`)
        // Sticky: the same message, same bytes, same index, on every later call.
        for (const k of [3, 4]) assert.equal(wire(reqs[k]!)[at], wire(reqs[2]!)[at], `the note is byte-identical in request ${k + 1} ${where}`)

        // (c) Every request starts with the previous one, byte for byte.
        assertAppendOnly(reqs, where)

        // The read of notes.txt (call_3) changed before it was ever sent. auto rewrites it in place
        // (free: it is not in the cached prefix); tail leaves it and adds a second note, after it.
        const call3 = text(reqs[3]!, "call_3")
        const n4 = notesOf(reqs[3]!)
        if (placement === "auto") {
          assert.equal(call3, openCodeRead(notes).output, `auto: call_3 rewritten in place before it was sent ${where}`)
          assert.deepEqual(n4, n3, `auto: no note for call_3 ${where}`)
        } else {
          assert.ok(call3.includes("2: beta: 2") && !call3.includes("beta: 7"), `tail: call_3 left as read ${where}\n${call3}`)
          const last = reqs[3]!.messages.length - 1
          assert.deepEqual(n4.map((n) => n.at), [at, last], `tail: a second note, in the last message ${where}`)
          assert.equal(reqs[3]!.messages[last]!.tool_call_id, "call_4", "the step's last tool result (after call_3's)")
          const second = n4[1]!.text
          assert.ok(second.includes("call_3") && second.includes("beta: 7"), `the second note names call_3: ${second}`)
          assert.ok(!second.includes("call_1"), "the first note is not repeated")
        }
        assert.equal(text(reqs[4]!, "call_3"), call3, "call_3 unchanged on the next call")
      })
    }

    test("auto (the default): the agent's own edit gives a pointer erratum naming the read and the edit, not the edited text", { skip: skipPlugin }, async () => {
      const r = await play({
        name: "placement-own-edit",
        files: { "config.yaml": CONFIG },
        run: { env: { CONCORD_PLACEMENT: "" } }, // the default: auto
        steps: (ws) => {
          const file = path.join(ws.proj, "config.yaml")
          return [
            () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
            () => ({ tools: [{ name: "edit", args: { filePath: file, oldString: "retries: 3", newString: "retries: 5" } }] }),
            () => ({ tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }),
            () => ({ text: "done" }),
          ]
        },
      })
      await assertClean(r, 4)
      const where = `(logs: ${r.ws.root})`
      const file = path.join(r.ws.proj, "config.yaml")
      const reqs = r.model.requests
      assert.ok(fs.readFileSync(file, "utf8").includes("retries: 5"))
      for (const k of [2, 3]) assert.equal(text(reqs[k]!, "call_1"), text(reqs[1]!, "call_1"), `call_1 left as the model saw it ${where}`)
      assert.ok(text(reqs[3]!, "call_1").includes("7: retries: 3"))
      const at = reqs[2]!.messages.length - 1
      const n = notesOf(reqs[2]!)
      assert.deepEqual(n.map((x) => x.at), [at], `one note, at the end of the edit's tool message ${where}`)
      assert.equal(reqs[2]!.messages[at]!.tool_call_id, "call_2")
      assert.ok(text(reqs[2]!, "call_2").startsWith("Edit applied successfully."), `the edit ran ${where}`)
      const note = n[0]!.text
      assert.ok(note.includes("call_1") && note.includes(file), `the note names the read: ${note}`)
      assert.ok(note.includes("call_2"), `the note names the edit (call_2): ${note}`)
      assert.ok(!note.includes("retries: 5") && !note.includes("retries: 3"), `a pointer, not the edited lines: ${note}`)
      assert.equal(wire(reqs[3]!)[at], wire(reqs[2]!)[at], "the note is sticky")
      assert.deepEqual(notesOf(reqs[3]!), n, "and not repeated")
      assertAppendOnly(reqs, where)
    })
    test("auto with CONCORD_CACHE_PRICE=anthropic: a large read that drifted near the end of the prompt is rewritten in place to the re-read notice, no erratum", { skip: skipPlugin }, async () => {
      // 40 long lines (longer than testdata/rpc/priced.jsonl's: the notice and the erratum carry
      // this run's long path twice, and Concord weighs them against the read's size); the read
      // takes lines 1-38.
      const settings = Array.from({ length: 40 }, (_, i) => {
        const n = String(i + 1).padStart(2, "0")
        return `    setting_${n} = load_setting('section_${n}', default=${i + 1}, help="${"the value of this setting, as read at start-up; ".repeat(3)}")`
      }).join("\n") + "\n"
      let original = ""
      const r = await play({
        name: "placement-priced",
        files: { "near.py": settings },
        run: { env: { CONCORD_PLACEMENT: "", CONCORD_CACHE_PRICE: "anthropic" } },
        steps: (ws) => {
          const file = path.join(ws.proj, "near.py")
          return [
            () => ({ tools: [{ name: "read", args: { filePath: file, offset: 1, limit: 38 } }] }),
            (req) => {
              original = text(req, "call_1")
              fs.writeFileSync(file, Array.from({ length: 40 }, (_, i) => `# rewritten line ${i + 1}`).join("\n") + "\n")
              return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
            },
            () => ({ text: "done" }),
          ]
        },
      })
      await assertClean(r, 3)
      const where = `(logs: ${r.ws.root})`
      const file = path.join(r.ws.proj, "near.py")
      const reqs = r.model.requests
      assert.ok(original.includes("38:     setting_38") && original.length > 2000, `a large ranged read ${where}`)
      const seen = text(reqs[2]!, "call_1")
      assert.match(seen, /^\[concord\] /, `call_1 rewritten in place ${where}\n${seen}`)
      assert.ok(seen.includes(file) && seen.includes("lines 1-38") && /Re-read/.test(seen), `the re-read notice: ${seen}`)
      assert.deepEqual(notesOf(reqs[2]!), [], `no erratum at the tail ${where}`)
      assert.deepEqual(batches(r.result.stderr), ["concord: 1 re-read notice"], where)
    })

    test("auto (the default): OpenCode compacts the session on context overflow; the next sync says prefixRebuilt, Concord flushes, and no erratum outlives the read it spoke for", { skip: skipPlugin }, async () => {
      const r = await play({
        name: "placement-compaction",
        files: { "config.yaml": CONFIG },
        run: { env: { CONCORD_PLACEMENT: "" } },
        concordArgs: rpcTraceArgs,
        steps: overflowSteps,
      })
      await assertClean(r, 4)
      const where = `(logs: ${r.ws.root})`
      const file = path.join(r.ws.proj, "config.yaml")
      const reqs = r.model.requests

      assertErratumBeforeRebuild(reqs, file, where)

      // OpenCode compacted: request 4 starts over at the summary, call_1 is gone with its note.
      const after = reqs[3]!.messages.filter((m) => m.role !== "system")
      assert.ok(!wire(reqs[3]!).includes(wire(reqs[2]!)[1]!), `request 4 no longer starts with the first prompt ${where}`)
      assert.deepEqual(after.map((m) => m.role), ["user", "assistant", "user"], `compaction request, summary, continue ${where}`)
      assert.ok(after.every((m) => m.role !== "tool" && !m.tool_calls), `no tool call survives the compaction ${where}`)
      const all = JSON.stringify(reqs[3]!.messages)
      assert.deepEqual(notesOf(reqs[3]!), [], `no erratum after the rebuild ${where}`)
      assert.ok(!all.includes("[concord]") && !all.includes("call_1") && !all.includes("port: 8080"), `nothing of call_1 nor of its note ${where}\n${all}`)

      // The summary request's copy of the history (all of it here) is the same messages as request
      // 3: only the sync before request 4 says prefixRebuilt, and it is the flush. Before it, the
      // plugin told concord the summary replaced call_1 (compacted), so concord released call_1:
      // the flush has nothing of it to put in place (it is no longer in the prompt), and the summary
      // ("ok", the fake model's) mentions none of the changed lines, so nothing corrects it.
      const rebuilt = assertFlushed(rpcLog(r.ws), where, false)
      assert.equal(rebuilt.length, 1, `one sync with prefixRebuilt ${where}`)
      const trace = rpcTrace(rpcLog(r.ws))
      const compacted = trace.recv.filter((m) => m.method === "compacted")
      assert.equal(compacted.length, 1, `one compacted ${where}`)
      assert.deepEqual(compacted[0].params.replaced, ["call_1"], `the summary replaced call_1 ${where}`)
      assert.equal(compacted[0].params.text, "ok", `the summary's text ${where}`)
      assert.deepEqual(trace.result(compacted[0].id)?.released, ["call_1"], `concord released call_1 ${where}`)
      assert.deepEqual(batches(r.result.stderr), ["concord: 1 erratum at the tail"], where)
    })

    for (const placement of ["tail", "auto"] as const) {
      test(`${placement === "auto" ? "auto (the default)" : placement}: a compaction that keeps the recent messages: call_1 survives it, repaired in place by the flush, its erratum gone`, { skip: skipPlugin }, async () => {
        // OpenCode summarizes the head of the session and keeps a tail of preserve_recent_tokens: a
        // long first prompt (~10k tokens) goes to the summary, the steps after it (~1k) stay.
        const prompt = "go\n" + "Background for this task, to be summarized. ".repeat(900)
        const r = await play({
          name: `placement-compaction-tail-${placement}`,
          files: { "config.yaml": CONFIG },
          run: { env: { CONCORD_PLACEMENT: placement === "auto" ? "" : placement }, prompt, config: { compaction: { preserve_recent_tokens: 4000 } } },
          concordArgs: rpcTraceArgs,
          steps: overflowSteps,
        })
        await assertClean(r, 4)
        const where = `(logs: ${r.ws.root})`
        const file = path.join(r.ws.proj, "config.yaml")
        const reqs = r.model.requests
        assertErratumBeforeRebuild(reqs, file, where)

        // Request 4: the summary, then the kept steps (call_1 to call_3), then OpenCode's "Continue".
        const after = reqs[3]!.messages.filter((m) => m.role !== "system")
        const all = JSON.stringify(reqs[3]!.messages)
        assert.ok(!all.includes("Background for this task"), `the long prompt went into the summary ${where}`)
        assert.deepEqual(
          after.map((m) => m.tool_call_id ?? m.role),
          ["user", "assistant", "assistant", "call_1", "assistant", "call_2", "assistant", "call_3", "user"],
          `summary, the kept tail, continue ${where}`,
        )
        // call_1 survived the compaction: the flush put its repair in place, identical to a fresh read,
        // and the erratum that spoke for it is gone from call_2 (same message id as before).
        assert.equal(text(reqs[3]!, "call_1"), openCodeRead(file).output, `call_1 repaired in place ${where}`)
        assert.equal(text(reqs[3]!, "call_2"), "step\n", `call_2 without its note ${where}`)
        assert.deepEqual(notesOf(reqs[3]!), [], `no erratum after the rebuild ${where}`)
        assert.ok(!all.includes("[concord]") && !all.includes("port: 8080"), `nothing stale ${where}\n${all}`)

        // The summary request's copy of the history is only the long prompt: the plugin's transform
        // sees the kept messages gone already there, so that sync also says prefixRebuilt (and does
        // the flush); request 4's own sync says it again.
        assertFlushed(rpcLog(r.ws), where)
        assert.deepEqual(batches(r.result.stderr), ["concord: 1 erratum at the tail", "concord: 1 read repaired"], where)
      })
    }

    test("auto (the default): the program prunes old tool outputs (compaction.prune) between prompts to one server; the next sync says prefixRebuilt, Concord flushes, and the erratum on a kept message goes", { skip: skipPlugin }, async () => {
      // Pruning runs when a prompt's loop ends and spares the newest 40k tokens of tool output
      // and the last two user turns (Kilo: of those, only the two newest finished steps); it
      // clears only when that frees more than 20k tokens. So: turn 1 reads config.yaml (call_1),
      // then seven ~46 KB files; under OpenCode turn 2 is a plain answer (which keeps turn 1 spared
      // one prompt more; Kilo would prune turn 1 already after it); in the next turn config.yaml
      // changes and the erratum for call_1 goes after call_9; the last turn is after the prune.
      // Its prompts go to one `serve` with `run --attach`: one plugin instance throughout.
      const plain = program.pruneSparesWholeTurns ? 1 : 0
      const prompts = ["go", ...(plain ? ["again"] : []), "more", "last"]
      const big = (k: number) => Array.from({ length: 600 }, (_, i) => `file ${k} line ${i + 1}: ${"lorem ipsum dolor sit amet ".repeat(2)}`).join("\n") + "\n"
      const files: Record<string, string> = { "config.yaml": CONFIG }
      for (let k = 1; k <= 7; k++) files[`big${k}.txt`] = big(k)
      const ws = makeWorkspace("placement-prune", files)
      const file = path.join(ws.proj, "config.yaml")
      const model = new FakeModel([
        () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
        () => ({ tools: Array.from({ length: 7 }, (_, k) => ({ name: "read", args: { filePath: path.join(ws.proj, `big${k + 1}.txt`) } })) }),
        () => ({ text: "turn 1 done" }),
        ...(plain ? [() => ({ text: "turn 2 done" })] : []),
        () => {
          fs.writeFileSync(file, CONFIG.replace("port: 8080", "port: 9090"))
          return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
        },
        () => ({ text: "change done" }),
        () => ({ text: "last turn done" }),
      ])
      // The request after the change (it carries the erratum), and the one after the prune.
      const after = 4 + plain
      const last = after + 1
      const port = await model.start()
      const env: Record<string, string> = {
        CONCORD_PLACEMENT: "",
        CONCORD_BIN: concordWrapper(ws, rpcTraceArgs(ws)),
      }
      const runs: RunResult[] = []
      let server: Server | undefined
      let stopped: Awaited<ReturnType<Server["stop"]>> | undefined
      try {
        server = await serveOpencode(ws, { program, port, plugin: DROPIN, env, config: { compaction: { prune: true } } })
        for (const [i, prompt] of prompts.entries()) {
          runs.push(await runOpencode(ws, { program, port, plugin: DROPIN, attach: server.url, continue: i > 0, prompt, logName: `opencode-${i + 1}` }))
        }
      } finally {
        stopped = await server?.stop()
        await model.close()
        model.dump(path.join(ws.root, "model-requests.json"))
      }
      const where = `(logs: ${ws.root})`
      assert.deepEqual(model.failures, [], `fake model expectations ${where}`)
      for (const [i, run] of runs.entries()) {
        assert.equal(run.code, 0, `prompt ${i + 1}: exit status ${where}\n${run.stderr.slice(-2000)}`)
        assert.ok(!run.events.some((e) => e.type === "error"), `prompt ${i + 1}: no error events ${where}`)
      }
      assert.equal(runs.length, prompts.length, `${prompts.length} prompts ${where}`)
      assert.equal(model.requests.length, last + 1, `model calls ${where}`)
      assert.ok(stopped?.signal === "SIGTERM" || stopped?.code === 0, `serve stopped on SIGTERM ${where}: ${JSON.stringify(stopped && { code: stopped.code, signal: stopped.signal })}`)
      assert.ok(!fetchedFromNpm(ws), `nothing fetched from npm at run time ${where}`)
      await assertNoOrphans(ws)
      const serverLog = stopped!.stderr
      // OpenCode logs "pruned count=5", Kilo "pruned reason=normal count=5"; once, after the change.
      const pruned = serverLog.split("\n").filter((l) => /message=pruned\b/.test(l))
      assert.equal(pruned.length, 1, `one prune ${where}\n${pruned.join("\n")}`)
      assert.match(pruned[0]!, /message=pruned (?:reason=normal )?count=5\b/, `call_1 to call_5 pruned ${where}`)
      const reqs = model.requests

      // The request after the change: call_1 as the model first saw it, and an erratum naming it
      // after call_9's output, the last message.
      const seen = text(reqs[1]!, "call_1")
      assert.ok(seen.includes("2: port: 8080"), `the first read as the program made it ${where}`)
      assert.equal(text(reqs[after]!, "call_1"), seen, `call_1 byte-identical in request ${after + 1} ${where}`)
      const n = notesOf(reqs[after]!)
      assert.deepEqual(n.map((x) => x.at), [reqs[after]!.messages.length - 1], `one note, in the last message of request ${after + 1} ${where}`)
      assert.equal(reqs[after]!.messages.at(-1)!.tool_call_id, "call_9")
      assert.ok(n[0]!.text.includes("call_1") && n[0]!.text.includes(file) && n[0]!.text.includes("port: 9090"), `the note names call_1: ${n[0]!.text}`)
      assertAppendOnly(reqs.slice(after - 1, after + 1), where)

      // The last prompt, after the prune: call_1 to call_5 cleared by the program, call_6 to
      // call_8 kept, and no erratum: not after call_9 (the same message, kept), nor anywhere else.
      for (let k = 1; k <= 5; k++) assert.equal(text(reqs[last]!, `call_${k}`), "[Old tool result content cleared]", `call_${k} pruned ${where}`)
      for (let k = 6; k <= 8; k++) assert.ok(text(reqs[last]!, `call_${k}`).includes(`file ${k - 1} line 600:`), `call_${k} kept ${where}`)
      assert.equal(text(reqs[last]!, "call_9"), "step\n", `call_9 without the note ${where}`)
      assert.deepEqual(notesOf(reqs[last]!), [], `no erratum after the prune ${where}`)
      const all = JSON.stringify(reqs[last]!.messages)
      assert.ok(!all.includes("[concord]") && !all.includes("port: 8080"), `nothing stale ${where}`)

      // Concord's side: the plugin released the pruned reads, then its sync said prefixRebuilt
      // (the only one) and got a flush.
      const trace = rpcTrace(rpcLog(ws))
      const calls = trace.recv.filter((m) => m.method === "sync" || m.method === "release")
      const before = Array<string>(last).fill("sync")
      assert.deepEqual(calls.map((m) => m.method), [...before, "release", "sync"], `one sync per request, the release before the last ${where}`)
      assert.deepEqual(calls[last].params.anchors, ["call_1", "call_2", "call_3", "call_4", "call_5"], `the pruned reads released ${where}`)
      const syncs = calls.filter((m) => m.method === "sync")
      const onLast = syncs.map((_, i) => i === last)
      assert.deepEqual(syncs.map((m) => m.params.prefixRebuilt === true), onLast, `prefixRebuilt on request ${last + 1}'s sync ${where}`)
      assert.deepEqual(syncs.map((m) => trace.result(m.id)?.flushed === true), onLast, `and flushed there ${where}`)
      assert.deepEqual(batches(serverLog), ["concord: 1 erratum at the tail"], where)
    })

  })
}
