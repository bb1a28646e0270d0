// Where the plugin looks for concord: $CONCORD_BIN, next to the plugin file or package, PATH.
import { test, after } from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { findConcord } from "../../src/binary.js"

const roots: string[] = []
after(() => roots.forEach((r) => fs.rmSync(r, { recursive: true, force: true })))

function layout(): { root: string; exe: (rel: string) => string } {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "concord-ts-bin-")))
  roots.push(root)
  const exe = (rel: string) => {
    const f = path.join(root, rel)
    fs.mkdirSync(path.dirname(f), { recursive: true })
    fs.writeFileSync(f, "#!/bin/sh\n", { mode: 0o755 })
    return f
  }
  return { root, exe }
}

test("an explicit option or CONCORD_BIN wins and is used as given", () => {
  assert.equal(findConcord({ CONCORD_BIN: "/x/concord" }, undefined).path, "/x/concord")
  assert.equal(findConcord({ CONCORD_BIN: "/x/concord" }, undefined, "/opt/c").path, "/opt/c")
})

test("the npm package layout: dist/src/ -> <package>/bin/concord", () => {
  const { root, exe } = layout()
  const bin = exe("pkg/bin/concord")
  fs.mkdirSync(path.join(root, "pkg/dist/src"), { recursive: true })
  assert.equal(findConcord({ PATH: "" }, path.join(root, "pkg/dist/src")).path, bin)
})

test("the drop-in layout: concord beside the plugin file comes first", () => {
  const { root, exe } = layout()
  const beside = exe(".opencode/plugins/concord")
  exe("elsewhere/concord")
  assert.equal(findConcord({ PATH: path.join(root, "elsewhere") }, path.join(root, ".opencode/plugins")).path, beside)
})

test("PATH is the last resort; a non-executable file does not count", () => {
  const { root, exe } = layout()
  fs.mkdirSync(path.join(root, "a"))
  fs.writeFileSync(path.join(root, "a/concord"), "not executable", { mode: 0o644 })
  const onPath = exe("b/concord")
  const env = { PATH: [path.join(root, "a"), path.join(root, "b")].join(path.delimiter) }
  assert.equal(findConcord(env, path.join(root, "plugins")).path, onPath)
})

test("nothing found: every place looked at is listed", () => {
  const { root } = layout()
  const r = findConcord({ PATH: path.join(root, "none") }, path.join(root, "p"))
  assert.equal(r.path, undefined)
  assert.deepEqual(r.tried, [path.join(root, "p/concord"), path.join(root, "p/bin/concord"), path.join(root, "none/concord")])
})
