// Parsers and renderers of OpenCode's grep, glob, directory-read and bash outputs, checked on the
// outputs captured from the pinned opencode-ai (test/fixtures/opencode-1.18.33-tools.json, made by
// scripts/capture-tools.mjs): every capture parses and renders back byte for byte.
import { test, describe, after } from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import {
  canonicalListing,
  fitListing,
  globToRegExp,
  listingUri,
  observeShellRead,
  parseDirectoryRead,
  parseGlob,
  parseGrep,
  parseReadCommand,
  renderGrep,
  renderShellRead,
  rgGlob,
  shellWords,
  walkListing,
} from "../../src/toolformat.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const fixture = JSON.parse(fs.readFileSync(path.join(here, "..", "..", "..", "test", "fixtures", "opencode-1.18.33-tools.json"), "utf8"))
const tools: { tool: string; input: any; output: string; metadata: any }[] = fixture.tools
const byCommand = (cmd: string) => tools.find((t) => t.tool === "bash" && t.input.command === cmd)!

const tmp: string[] = []
after(() => tmp.forEach((d) => fs.rmSync(d, { recursive: true, force: true })))
/** The captured project, written out again (same files, same contents). */
function project(): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "concord-ts-tools-")))
  tmp.push(d)
  for (const [rel, text] of Object.entries(fixture.files as Record<string, string>)) {
    fs.mkdirSync(path.dirname(path.join(d, rel)), { recursive: true })
    fs.writeFileSync(path.join(d, rel), text)
  }
  return d
}

describe("grep tool (captured)", () => {
  const greps = tools.filter((t) => t.tool === "grep")
  test("every captured result with hits parses and renders back byte for byte", () => {
    let n = 0
    for (const t of greps) {
      const g = parseGrep(t.output)
      if (t.metadata.matches === 0) {
        assert.equal(g, undefined, t.output)
        continue
      }
      assert.ok(g, t.output.slice(0, 200))
      assert.equal(g.hits.length, t.metadata.matches)
      assert.equal(renderGrep(g), t.output)
      n++
    }
    assert.ok(n >= 2)
  })
  test("hits carry file, line and text; the line cut at 2000 chars is marked", () => {
    const g = parseGrep(greps[0]!.output)!
    const cfg = g.hits.find((h) => h.file === "/PROJECT/config.yaml")!
    assert.deepEqual(cfg, { file: "/PROJECT/config.yaml", line: 2, text: "port: 8080", newline: true, cut: false })
    const long = g.hits.find((h) => h.file === "/PROJECT/long.txt")!
    assert.equal(long.cut, true)
    assert.equal(long.newline, false)
    const srv = g.hits.filter((h) => h.file === "/PROJECT/src/server.ts").map((h) => [h.line, h.text])
    assert.deepEqual(srv, [[1, "export const port = 8080"], [2, "export function listen() {"], [3, "  return port"]])
  })
  test("moved hits render at their new line numbers", () => {
    const g = parseGrep(greps[1]!.output)!
    const moved = { ...g, hits: g.hits.map((h) => ({ ...h, line: h.line + 2 })) }
    assert.match(renderGrep(moved), /\n {2}Line 3: export const port = 8080\n/)
  })
  test("a truncated result keeps its trailer; unknown text is refused", () => {
    const out = "Found 100 matches (more matches available)\n/a/b.txt:\n  Line 1: x\n\n\n(Results truncated. Consider using a more specific path or pattern.)"
    const g = parseGrep(out)!
    assert.equal(g.hits.length, 1)
    assert.equal(renderGrep(g), out)
    assert.equal(parseGrep("Found 1 matches\nrelative/path:\n  Line 1: x"), undefined)
    assert.equal(parseGrep("No files found"), undefined)
  })
  test("random mutations never throw and whatever parses renders back the same", () => {
    const base = greps[1]!.output
    let seed = 7
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n)
    for (let i = 0; i < 2000; i++) {
      const a = rnd(base.length)
      const b = a + rnd(10)
      const junk = ["", "\n", ":", "  Line 9: z", "\n\n", "x"][rnd(6)]!
      const s = base.slice(0, a) + junk + base.slice(b)
      const g = parseGrep(s)
      if (g) assert.equal(renderGrep(g), s)
    }
  })
})

describe("glob and directory reads (captured)", () => {
  test("glob output: absolute paths; empty; truncated is refused", () => {
    const globs = tools.filter((t) => t.tool === "glob")
    assert.deepEqual(parseGlob(globs[0]!.output, globs[0]!.metadata), ["/PROJECT/src/server.ts", "/PROJECT/src/util/strings.ts"])
    assert.deepEqual(parseGlob("No files found", { count: 0, truncated: false }), [])
    assert.equal(parseGlob("/a\n\n(Results are truncated: showing first 100 results. Consider using a more specific path or pattern.)", { truncated: true }), undefined)
  })
  test("a directory read parses to its entries", () => {
    const reads = tools.filter((t) => t.tool === "read")
    const d = parseDirectoryRead(reads[0]!.output, reads[0]!.metadata)!
    assert.equal(d.dir, "/PROJECT")
    assert.deepEqual(d.entries, reads[0]!.metadata.display.entries)
    assert.equal(parseDirectoryRead(reads[0]!.output, { display: { ...reads[0]!.metadata.display, truncated: true } }), undefined)
    assert.equal(parseDirectoryRead("<path>/a</path>\n<type>file</type>\n<content>\n1: x\n</content>", undefined), undefined)
  })
  test("the server's listing of the captured project matches what glob and read showed", () => {
    const dir = project()
    fs.mkdirSync(path.join(dir, ".git"))
    fs.mkdirSync(path.join(dir, ".opencode/plugins"), { recursive: true })
    for (const f of ["plugins/dump.js", "package.json", "package-lock.json", ".gitignore"]) fs.writeFileSync(path.join(dir, ".opencode", f), "")
    fs.writeFileSync(path.join(dir, "opencode.json"), "{}")
    const sub = (s: string) => s.split("/PROJECT").join(dir)
    for (const t of tools.filter((x) => x.tool === "glob" && x.metadata.count > 0)) {
      const base = t.input.path ? sub(t.input.path) : dir
      const shown = parseGlob(sub(t.output), t.metadata)!.map((f) => path.relative(base, f))
      const q = fitListing(base, shown, { depth: 0, hidden: true, ignore: [".git"], glob: rgGlob(t.input.pattern) })
      assert.ok(q, `glob ${t.input.pattern}: listing reproduced`)
      assert.equal(canonicalListing(walkListing(base, q)!), canonicalListing(shown))
    }
    for (const t of tools.filter((x) => x.tool === "read")) {
      const d = parseDirectoryRead(sub(t.output), t.metadata)!
      const q = fitListing(d.dir, d.entries, { depth: 1, hidden: true, ignore: [] })
      assert.deepEqual(q, { depth: 1, hidden: true, ignore: [] }, `read ${d.dir}`)
    }
  })
  test("entries a tool left out (gitignored) become ignore names in the URI", () => {
    const dir = project()
    fs.mkdirSync(path.join(dir, "dist"))
    fs.writeFileSync(path.join(dir, "dist/out.ts"), "")
    const shown = ["src/server.ts", "src/util/strings.ts"]
    const q = fitListing(dir, shown, { depth: 0, hidden: true, ignore: [".git"], glob: rgGlob("*.ts") })!
    assert.deepEqual(q.ignore.sort(), [".git", "dist"])
    assert.equal(listingUri(dir, q), `file://${dir}?depth=0&hidden=1&ignore=.git,dist&glob=**/*.ts`)
    // An entry the walk cannot find means the listing cannot be reproduced.
    assert.equal(fitListing(dir, [...shown, "src/ghost.ts"], { depth: 0, hidden: true, ignore: [], glob: "**/*.ts" }), undefined)
  })
  test("glob semantics: *, **, ?, {a,b}; rg's slash-less patterns match at any depth", () => {
    const cases: [string, string, boolean][] = [
      ["**/*.ts", "a.ts", true],
      ["**/*.ts", "x/y/a.ts", true],
      ["*.ts", "x/a.ts", false],
      ["src/*.{ts,md}", "src/n.md", true],
      ["src/?.ts", "src/ab.ts", false],
    ]
    for (const [g, p, want] of cases) assert.equal(globToRegExp(g).test(p), want, `${g} ~ ${p}`)
    assert.equal(rgGlob("*.md"), "**/*.md")
    assert.equal(rgGlob("src/*.md"), "src/*.md")
    assert.equal(canonicalListing(["b", "a/", "B", "a/x"]), "B\na/\na/x\nb")
  })
})

describe("bash reads (captured)", () => {
  test("only plain single commands are reads", () => {
    const reads = ["cat a.txt", "cat -n a.txt", "head -n 3 a.txt", "head -5 a.txt", "tail -n 2 a.txt", "tail -n +4 a.txt", "sed -n '2,4p' a.txt", "sed -n 3p a.txt", "nl -ba a.txt", "grep -n port a.txt b.txt", "grep -rn port src", "rg -n port src", "cat 'my file.txt'"]
    for (const c of reads) assert.ok(parseReadCommand(c), c)
    const not = ["cat a.txt | head", "cat a.txt > b", "cat a.txt && ls", "cat a b", "cat $F", "cat `x`", "grep port a.txt", "grep -n -A2 port a.txt", "sed -i 's/a/b/' a.txt", "head -c 10 a.txt", "ls", "cat *.txt", "echo hi; cat a.txt", "rg -c port"]
    for (const c of not) assert.equal(parseReadCommand(c), undefined, c)
    assert.deepEqual(shellWords(`sed -n '2,4p' "a b.txt"`), ["sed", "-n", "2,4p", "a b.txt"])
  })
  test("every captured read command maps to sources and renders back byte for byte", () => {
    const dir = project()
    const cmds = ["cat config.yaml", "cat -n config.yaml", "head -n 3 config.yaml", "tail -n 2 config.yaml", "sed -n '2,4p' config.yaml", "nl -ba src/server.ts", "grep -n port src/server.ts config.yaml", "grep -rn port src", "rg -n port src"]
    for (const c of cmds) {
      const t = byCommand(c)
      const r = observeShellRead(c, t.output, dir)
      assert.ok(r && typeof r !== "string", `${c}: ${r}`)
      assert.equal(renderShellRead(r, r.sources), t.output, c)
    }
    const sed = observeShellRead("sed -n '2,4p' config.yaml", byCommand("sed -n '2,4p' config.yaml").output, dir) as any
    assert.deepEqual(sed.sources, [{ uri: `file://${dir}/config.yaml`, range: { start: 2, end: 4 }, text: "port: 8080\ndebug: false\nlevel: info" }])
    const tail = observeShellRead("tail -n 2 config.yaml", byCommand("tail -n 2 config.yaml").output, dir) as any
    assert.deepEqual(tail.sources[0].range, { start: 4, end: 5 })
    const cat = observeShellRead("cat -n config.yaml", byCommand("cat -n config.yaml").output, dir) as any
    assert.equal(cat.sources[0].range, undefined, "cat is the whole file")
    const rg = observeShellRead("rg -n port src", byCommand("rg -n port src").output, dir) as any
    assert.equal(rg.sources.length, 6)
    assert.deepEqual(rg.sources[0], { uri: `file://${dir}/src/util/strings.ts`, range: { start: 1, end: 1 }, text: "// port helpers" })
  })
  test("moved lines print at their new numbers in the command's own format", () => {
    const dir = project()
    const r = observeShellRead("nl -ba src/server.ts", byCommand("nl -ba src/server.ts").output, dir) as any
    const text = "// header\nexport const port = 9090"
    assert.equal(renderShellRead(r, [{ uri: r.sources[0].uri, text }]), "     1\t// header\n     2\texport const port = 9090\n")
    const g = observeShellRead("grep -n port src/server.ts config.yaml", byCommand("grep -n port src/server.ts config.yaml").output, dir) as any
    const moved = g.sources.map((s: any) => ({ ...s, range: { start: s.range.start + 1, end: s.range.end + 1 } }))
    assert.match(renderShellRead(g, moved), /^src\/server\.ts:2:export const port = 8080\n/)
  })
  test("output that is not the file's (an error, another file's text) is not tied to it", () => {
    const dir = project()
    assert.equal(typeof observeShellRead("tail -n 2 config.yaml", "something\nelse\n", dir), "string")
    assert.equal(typeof observeShellRead("cat -n config.yaml", "not numbered\n", dir), "string")
    assert.equal(observeShellRead("ls", byCommand("ls").output, dir), undefined)
  })
})

describe("@file attachments (captured)", () => {
  test("OpenCode adds a synthetic 'Called the Read tool' part and the read output", () => {
    const parts = fixture.userParts as any[]
    const call = parts.findIndex((p) => p.synthetic && /^Called the Read tool with the following input: /.test(p.text))
    assert.ok(call >= 0)
    assert.equal(parts[call + 1].synthetic, true)
    assert.match(parts[call + 1].text, /^<path>\/PROJECT\/config\.yaml<\/path>\n<type>file<\/type>\n<content>\n1: name: demo\n/)
  })
})

describe("walkListing and symlinks", () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), "concord-walk-"))
  after(() => fs.rmSync(base, { recursive: true, force: true }))
  test("a symlink to a directory is an entry, never followed (as the server lists it)", () => {
    fs.mkdirSync(path.join(base, "sub"))
    fs.writeFileSync(path.join(base, "sub", "a.txt"), "a\n")
    fs.symlinkSync("sub", path.join(base, "link"))
    const got = walkListing(base, { depth: 0, hidden: true, ignore: [] })!
    assert.deepEqual(canonicalListing(got), canonicalListing(["link", "sub/", "sub/a.txt"]))
  })
})
