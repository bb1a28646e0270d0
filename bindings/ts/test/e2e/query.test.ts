// Query sources (issue 21) through the real `opencode` program (pinned opencode-ai) with the
// plugin: bash results that are a function of many files (grep -rl, find | grep, grep -c) are
// registered by concord as query sources; files are created and changed under their scope between
// two model calls; the next request carries each command's output as it is now.
import { test, describe, before } from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import path from "node:path"
import { FakeModel, type Step } from "./fakemodel.js"
import { OPENCODE_VERSION, PKG_ROOT, fetchedFromNpm, makeWorkspace, opencodeBinary, runOpencode, type PluginMode } from "./harness.js"
import { concordBin, skipWithoutConcord } from "../support/concordbin.js"

const DROPIN: PluginMode = { kind: "dropin", file: path.join(PKG_ROOT, "dist", "concord-opencode.js") }
const skipPlugin = skipWithoutConcord()
const text = (req: Parameters<Step>[0], id: string) => FakeModel.toolResult(req, id) ?? "<missing tool message>"

before(() => {
  assert.ok(opencodeBinary(), "opencode-ai is installed (make -C bindings/ts e2e-deps)")
  assert.ok(fs.existsSync(DROPIN.kind === "dropin" ? DROPIN.file : ""), "the drop-in plugin is built (npm run build)")
})

describe(`opencode ${OPENCODE_VERSION ?? "?"}: query sources`, { concurrency: 1 }, () => {
  test("grep -rl | sort, find | grep | sort and grep -c are re-run after a change under their scope: the next request shows the new output", { skip: skipPlugin }, async () => {
    const ws = makeWorkspace("query", {
      "src/app.py": "# TODO: flags\nimport sys\n",
      "src/pkg/util.py": "def f():\n    pass  # TODO\n",
      "src/done.py": "print('done')\n",
    })
    const bash = (command: string) => ({ name: "bash", args: { command, description: "query" } })
    const model = new FakeModel([
      () => ({ tools: [bash("grep -rl TODO src | sort"), bash("find src -name '*.py' | grep pkg | sort"), bash("grep -c TODO src/app.py src/done.py")] }),
      (req, m) => {
        m.expect(text(req, "call_1") === "src/app.py\nsrc/pkg/util.py\n", `grep -rl ran: ${text(req, "call_1")}`)
        m.expect(text(req, "call_2") === "src/pkg/util.py\n", `find | grep ran: ${text(req, "call_2")}`)
        m.expect(text(req, "call_3") === "src/app.py:1\nsrc/done.py:0\n", `grep -c ran: ${text(req, "call_3")}`)
        ws.write("src/pkg/new/todo.py", "# TODO: more\n") // a new file in a new directory
        ws.write("src/app.py", "import sys\n") // its TODO done
        ws.write("src/done.py", "# TODO: reopen\nprint('done')\n")
        return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
      },
      (req, m) => {
        m.expect(text(req, "call_1") === "src/done.py\nsrc/pkg/new/todo.py\nsrc/pkg/util.py\n", `grep -rl re-run; got:\n${text(req, "call_1")}`)
        m.expect(text(req, "call_2") === "src/pkg/new/todo.py\nsrc/pkg/util.py\n", `find | grep re-run; got:\n${text(req, "call_2")}`)
        m.expect(text(req, "call_3") === "src/app.py:0\nsrc/done.py:1\n", `grep -c re-run; got:\n${text(req, "call_3")}`)
        m.expect(text(req, "call_4") === "step\n", `echo untouched; got:\n${text(req, "call_4")}`)
        return { text: "done" }
      },
    ])
    const port = await model.start()
    let result
    try {
      const env: Record<string, string> = { CONCORD_PLACEMENT: "inplace", CONCORD_BIN: concordBin()! }
      result = await runOpencode(ws, { port, plugin: DROPIN, env })
    } finally {
      await model.close()
      model.dump(path.join(ws.root, "model-requests.json"))
    }
    const where = `(logs: ${ws.root})`
    assert.deepEqual(model.failures, [], `fake model expectations ${where}`)
    assert.equal(result.code, 0, `opencode exit status ${where}\n${result.stderr.slice(-2000)}`)
    assert.equal(model.requests.length, 3, `model calls ${where}`)
    assert.ok(!result.events.some((e) => e.type === "error"), `no error events ${where}`)
    assert.ok(!fetchedFromNpm(ws), `nothing fetched from npm at run time ${where}`)
  })
})
