// The npm tarball as a user gets it: `make dist-test` (repo root) runs this file with
// CONCORD_NPM_TARBALL set to the tarball `make dist` wrote. A fresh OpenCode project installs it
// with `npm install <tarball>` (with no registry reachable: it must need none), enables it with
// one config line, and the model must see a repaired read. No CONCORD_BIN and no concord on
// PATH: the binary comes from inside the package. The normal test run skips this file.
import { test, describe } from "node:test"
import assert from "node:assert/strict"
import { execFileSync } from "node:child_process"
import fs from "node:fs"
import path from "node:path"
import { FakeModel } from "./fakemodel.js"
import { fetchedFromNpm, isExecutable, makeWorkspace, opencodeBinary, runOpencode, PKG_ROOT } from "./harness.js"
import { openCodeRead } from "../support/expected.js"

const TARBALL = process.env.CONCORD_NPM_TARBALL ?? ""
const skip = TARBALL
  ? false
  : "SKIPPED: CONCORD_NPM_TARBALL is not set: this tests the packed tarball (run `make dist-test` in the repo root)"

// The config line the README gives.
const CONFIG_LINE = "./node_modules/concord-opencode"

const CONFIG = ["name: demo", "port: 8080", "debug: false", "level: info", "mode: fast"].join("\n") + "\n"

/** PATH without any directory that holds a concord executable. */
function pathWithoutConcord(): string {
  return (process.env.PATH ?? "/usr/bin:/bin")
    .split(path.delimiter)
    .filter((d) => !isExecutable(path.join(d || ".", "concord")))
    .join(path.delimiter)
}

describe("the concord-opencode npm tarball in a fresh OpenCode project", { concurrency: 1 }, () => {
  test("npm install <tarball> and one config line: the model sees the repaired read", { skip }, async () => {
    assert.ok(opencodeBinary(), "opencode-ai is installed (make -C bindings/ts e2e-deps)")
    const tarball = path.resolve(TARBALL)
    assert.ok(fs.existsSync(tarball), `${tarball} exists (make dist)`)
    const pkgVersion = JSON.parse(fs.readFileSync(path.join(PKG_ROOT, "package.json"), "utf8")).version

    const ws = makeWorkspace("npm-tarball", {
      "config.yaml": CONFIG,
      "package.json": JSON.stringify({ name: "user-project", private: true }, null, 2) + "\n",
    })
    // The user's install, in the project (--prefix: never in a package.json above it), with every
    // registry request bound to fail.
    const npmArgs = ["install", "--prefix", ws.proj, "--no-audit", "--no-fund", "--cache", path.join(ws.root, "npm-cache")]
    execFileSync("npm", [...npmArgs, tarball], {
      cwd: ws.proj,
      env: { ...process.env, HOME: ws.home, npm_config_registry: "http://127.0.0.1:9/", npm_config_update_notifier: "false" },
      stdio: ["ignore", "pipe", "pipe"],
    })
    const installed = path.join(ws.proj, "node_modules", "concord-opencode")
    const bin = path.join(installed, "bin", "concord")
    assert.ok(isExecutable(bin), `${bin} is installed executable`)
    const version = execFileSync(bin, ["version"], { encoding: "utf8" })
    assert.ok(version.startsWith(`concord ${pkgVersion} `), `the packaged binary is this version: ${version}`)

    const file = path.join(ws.proj, "config.yaml")
    const model = new FakeModel([
      () => ({ tools: [{ name: "read", args: { filePath: file } }] }),
      (req, m) => {
        m.expect(FakeModel.toolResult(req, "call_1")?.includes("2: port: 8080") === true, "first read shows the original")
        fs.writeFileSync(file, CONFIG.replace("port: 8080", "port: 9090")) // out of band
        return { tools: [{ name: "bash", args: { command: "echo step", description: "step" } }] }
      },
      (req, m) => {
        const seen = FakeModel.toolResult(req, "call_1") ?? "<missing>"
        m.expect(seen === openCodeRead(file).output, `call_1 repaired in OpenCode's format; got:\n${seen}`)
        m.expect(!seen.includes("8080"), "no stale line")
        return { text: "done" }
      },
    ])
    const port = await model.start()
    let result
    try {
      result = await runOpencode(ws, {
        port,
        plugin: { kind: "config", spec: CONFIG_LINE },
        // This checks an in-place repair (the default placement is auto).
        env: { PATH: pathWithoutConcord(), CONCORD_PLACEMENT: "inplace" },
      })
    } finally {
      await model.close()
      model.dump(path.join(ws.root, "model-requests.json"))
    }
    const where = `(logs: ${ws.root})`
    console.log(`# npm tarball: opencode exit ${result.code} in ${result.ms} ms, ${model.requests.length} model calls`)
    assert.deepEqual(model.failures, [], `fake model expectations ${where}`)
    assert.equal(result.code, 0, `opencode exit status ${where}\n${result.stderr.slice(-2000)}`)
    assert.equal(model.requests.length, 3, `model calls ${where}`)
    assert.ok(!result.stderr.includes("[concord] WARNING"), `no plugin warning ${where}`)
    assert.ok(!fetchedFromNpm(ws), `nothing fetched from npm at run time ${where}`)
  })
})
