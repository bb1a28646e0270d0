// OpenCode's read format: parsing and re-rendering, checked against outputs captured from the
// pinned opencode-ai (test/fixtures) and against the older shapes.
import { test, describe } from "node:test"
import assert from "node:assert/strict"
import fs from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import {
  CURRENT_SHAPE,
  LINE_TRUNCATED,
  MAX_OUTPUT_BYTES,
  countLines,
  isTruncatedLine,
  observeRead,
  parseRead,
  renderRead,
  splitLines,
  truncateLine,
} from "../support/readformat.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const fixtureFile = path.join(here, "..", "..", "..", "test", "fixtures", "opencode-1.18.33-read.json")
interface Fixture {
  name: string
  input: { filePath: string; offset?: number; limit?: number }
  output: string
  metadata: any
}
const fixtures: Fixture[] = JSON.parse(fs.readFileSync(fixtureFile, "utf8")).reads
const fx = (name: string) => {
  const f = fixtures.find((x) => x.name === name)
  assert.ok(f, `fixture ${name}`)
  return f
}

describe("parseRead on real opencode 1.18.33 outputs", () => {
  test("full file", () => {
    const p = parseRead(fx("hello.txt").output)!
    assert.deepEqual(p.shape, CURRENT_SHAPE)
    assert.equal(p.path, "/PROJECT/hello.txt")
    assert.equal(p.start, 1)
    assert.deepEqual(p.lines, ["line one", "line two", "line three"])
    assert.deepEqual(p.footer, { kind: "eof", total: 3 })
    assert.equal(p.suffix, "")
  })

  test("offset/limit window", () => {
    const p = parseRead(fx("hello.txt@2+1").output)!
    assert.equal(p.start, 2)
    assert.deepEqual(p.lines, ["line two"])
    assert.deepEqual(p.footer, { kind: "more", start: 2, end: 2, total: 3 })
  })

  test("empty file", () => {
    const p = parseRead(fx("empty.txt").output)!
    assert.equal(p.start, 1)
    assert.deepEqual(p.lines, [])
    assert.deepEqual(p.footer, { kind: "eof", total: 0 })
  })

  test("instructions appended after </content> are kept as the suffix", () => {
    const p = parseRead(fx("a.txt").output)!
    assert.deepEqual(p.lines, ["alpha", "beta"])
    assert.match(p.suffix, /^\n\n<system-reminder>\nInstructions from: \/PROJECT\/sub\/AGENTS.md\n/)
    assert.ok(p.suffix.endsWith("</system-reminder>"))
  })

  test("a line cut at 2000 chars is recognised", () => {
    const p = parseRead(fx("long.txt").output)!
    assert.equal(p.lines.length, 2)
    assert.ok(isTruncatedLine(p.lines[0]!))
    assert.ok(!isTruncatedLine(p.lines[1]!))
  })

  test("every fixture parses and its lines match metadata.display.text", () => {
    for (const f of fixtures) {
      const p = parseRead(f.output)
      assert.ok(p, f.name)
      assert.equal(p.lines.join("\n"), f.metadata.display.text, f.name)
      assert.equal(p.start, f.metadata.display.lineStart, f.name)
    }
  })
})

describe("renderRead reproduces OpenCode byte for byte", () => {
  for (const name of ["hello.txt", "hello.txt@2+1", "empty.txt", "a.txt", "crlf.txt", "nonl.txt", "p.txt"]) {
    test(name, () => {
      const f = fx(name)
      const p = parseRead(f.output)!
      const out = renderRead({
        shape: p.shape,
        path: p.path!,
        start: p.start,
        lines: p.lines,
        totalLines: f.metadata.display.totalLines,
        suffix: p.suffix,
      })
      assert.equal(out, f.output)
    })
  }

  test("long lines are cut the same way", () => {
    const f = fx("long.txt")
    const out = renderRead({ path: "/PROJECT/long.txt", start: 1, lines: ["x".repeat(2100), "short"], totalLines: 2 })
    assert.equal(out, f.output)
  })

  test("a patched window at new line numbers gets OpenCode's own footer", () => {
    const out = renderRead({ path: "/p/f.txt", start: 5, lines: ["a", "b"], totalLines: 10 })
    assert.equal(
      out,
      "<path>/p/f.txt</path>\n<type>file</type>\n<content>\n5: a\n6: b\n\n(Showing lines 5-6 of 10. Use offset=7 to continue.)\n</content>",
    )
    const eof = renderRead({ path: "/p/f.txt", start: 9, lines: ["y", "z"], totalLines: 10 })
    assert.ok(eof.endsWith("9: y\n10: z\n\n(End of file - total 10 lines)\n</content>"))
  })

  test("output above 50 KB is capped like OpenCode caps it", () => {
    const line = "y".repeat(1000)
    const lines = Array.from({ length: 60 }, () => line)
    const out = renderRead({ path: "/p/big", start: 1, lines, totalLines: 60 })
    const p = parseRead(out)!
    assert.equal(p.footer.kind, "capped")
    assert.equal(p.lines.length, Math.floor((MAX_OUTPUT_BYTES + 1) / 1001))
    assert.match(out, /\(Output capped at 50 KB\. Showing lines 1-51\. Use offset=52 to continue\.\)/)
  })

  test("round trip: random content renders and parses back to the same lines", () => {
    let seed = 42
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    const alphabet = ["a", "b", " ", "\t", ":", "1", "2: x", "<content>", "</content>", "(", ")", "é", "日", "|", "\\"]
    for (let i = 0; i < 300; i++) {
      const lines = Array.from({ length: rnd(8) }, () => Array.from({ length: rnd(12) }, () => alphabet[rnd(alphabet.length)]).join(""))
      const start = 1 + rnd(50)
      const total = start + lines.length - 1 + rnd(3)
      const out = renderRead({ path: "/r/x", start, lines, totalLines: total, suffix: rnd(2) ? "\n\n<system-reminder>\nx\n</system-reminder>" : "" })
      const p = parseRead(out)
      assert.ok(p, out)
      assert.deepEqual(p.lines, lines, out)
      if (lines.length > 0) assert.equal(p.start, start, out)
    }
  })
})

describe("robustness", () => {
  test("mutated outputs never make the parser throw, and what it accepts is consistent", () => {
    let seed = 7
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    const pieces = ["\n", "</content>", "<content>", ": ", "(", ")", "0", "9", "x", "\r", ""]
    for (let i = 0; i < 3000; i++) {
      const base = fixtures[rnd(fixtures.length)]!.output
      let s = base
      for (let k = 0, n = 1 + rnd(4); k < n; k++) {
        const at = rnd(s.length + 1)
        s = rnd(2) ? s.slice(0, at) + pieces[rnd(pieces.length)] + s.slice(at) : s.slice(0, at) + s.slice(at + 1 + rnd(5))
      }
      const p = parseRead(s)
      if (p) {
        assert.ok(p.start >= 0, s)
        for (const l of p.lines) assert.ok(!l.includes("\n"), s)
      }
      observeRead({ input: { filePath: "x" }, output: s, metadata: { display: { type: "file", text: s } }, directory: "/p" })
    }
  })
})

describe("older read shapes", () => {
  const legacy = "<file>\n00155| (defn get-visible-tiles\n00156|   [state]\n00157| \n\n(File has more lines. Use 'offset' parameter to read beyond line 157)\n</file>"
  const noNewline = "<path>/x/global.css</path>\n<type>file</type>\n<content>1900: \tbackground: red;\n1901: }\n\n(File has more lines. Use 'offset' parameter to read beyond line 1901)\n</content>"

  test("≤ 1.1.27 <file> with zero-padded pipe prefixes", () => {
    const p = parseRead(legacy)!
    assert.equal(p.shape.wrapper, "file")
    assert.equal(p.shape.prefix, "pipe")
    assert.equal(p.start, 155)
    assert.deepEqual(p.lines, ["(defn get-visible-tiles", "  [state]", ""])
    assert.deepEqual(p.footer, { kind: "more-legacy", end: 157 })
    assert.equal(renderRead({ shape: p.shape, path: "", start: 155, lines: p.lines, totalLines: 400 }), legacy)
  })

  test("<content> without the newline after the tag", () => {
    const p = parseRead(noNewline)!
    assert.equal(p.shape.contentNewline, false)
    assert.equal(p.start, 1900)
    assert.deepEqual(p.lines, ["\tbackground: red;", "}"])
    assert.equal(renderRead({ shape: p.shape, path: "/x/global.css", start: 1900, lines: p.lines, totalLines: 3000 }), noNewline)
  })
})

describe("what is not a text read is left alone", () => {
  const cases: [string, string][] = [
    ["directory", "<path>/p</path>\n<type>directory</type>\n<entries>\na/\nb.txt\n\n(2 entries)\n</entries>"],
    ["image", "Image read successfully"],
    ["error", "File not found: /p/nope.txt"],
    ["numbers out of order", "<path>/p</path>\n<type>file</type>\n<content>\n1: a\n3: b\n\n(End of file - total 3 lines)\n</content>"],
    ["a line without a prefix", "<path>/p</path>\n<type>file</type>\n<content>\n1: a\nb\n\n(End of file - total 2 lines)\n</content>"],
    ["no closing tag", "<path>/p</path>\n<type>file</type>\n<content>\n1: a\n"],
    ["empty", ""],
  ]
  for (const [name, out] of cases) test(name, () => assert.equal(parseRead(out), undefined))
})

describe("observeRead", () => {
  test("a full read is the whole source, from metadata.display", () => {
    const f = fx("hello.txt")
    const o = observeRead({ input: f.input, output: f.output, metadata: f.metadata, directory: "/PROJECT" })
    assert.ok(typeof o !== "string")
    assert.equal(o.path, "/PROJECT/hello.txt")
    assert.equal(o.whole, true)
    assert.equal(o.start, 1)
    assert.deepEqual(o.lines, ["line one", "line two", "line three"])
  })

  test("a window keeps its range", () => {
    const f = fx("hello.txt@2+1")
    const o = observeRead({ input: f.input, output: f.output, metadata: f.metadata, directory: "/PROJECT" })
    assert.ok(typeof o !== "string")
    assert.equal(o.whole, false)
    assert.equal(o.start, 2)
    assert.deepEqual(o.lines, ["line two"])
  })

  test("without metadata (older OpenCode, or a stored part) the output is parsed", () => {
    for (const f of fixtures.filter((x) => x.name !== "long.txt")) {
      const withMeta = observeRead({ input: f.input, output: f.output, metadata: f.metadata, directory: "/PROJECT" })
      const without = observeRead({ input: f.input, output: f.output, directory: "/PROJECT" })
      assert.deepEqual(without, withMeta, f.name)
    }
  })

  test("a relative filePath resolves against the directory when the output has no path", () => {
    const legacy = "<file>\n00001| a\n00002| b\n\n(End of file - total 2 lines)\n</file>"
    const o = observeRead({ input: { filePath: "src/a.ts" }, output: legacy, directory: "/work/proj" })
    assert.ok(typeof o !== "string")
    assert.equal(o.path, "/work/proj/src/a.ts")
    assert.equal(o.whole, true)
  })

  test("a read with a cut line is not tracked (its text is not the file's)", () => {
    const f = fx("long.txt")
    assert.equal(typeof observeRead({ input: f.input, output: f.output, metadata: f.metadata, directory: "/PROJECT" }), "string")
  })

  test("a directory listing is not tracked", () => {
    const out = "<path>/p</path>\n<type>directory</type>\n<entries>\na/\n\n(1 entries)\n</entries>"
    assert.equal(typeof observeRead({ input: { filePath: "/p" }, output: out, directory: "/" }), "string")
  })
})

describe("line helpers", () => {
  test("splitLines and countLines follow OpenCode's line splitting", () => {
    assert.deepEqual(splitLines(""), [])
    assert.deepEqual(splitLines("a"), ["a"])
    assert.deepEqual(splitLines("a\n"), ["a"])
    assert.deepEqual(splitLines("a\r\nb\r\n"), ["a", "b"])
    assert.deepEqual(splitLines("a\n\nb"), ["a", "", "b"])
    assert.equal(countLines("\n"), 1)
    assert.equal(countLines("x\ny\nz\n"), 3)
  })

  test("truncateLine", () => {
    assert.equal(truncateLine("abc"), "abc")
    assert.equal(truncateLine("z".repeat(2000)), "z".repeat(2000))
    assert.equal(truncateLine("z".repeat(2001)), "z".repeat(2000) + LINE_TRUNCATED)
  })
})
