// The outputs of OpenCode's other content-bearing tools, parsed into Concord sources and rendered
// back in the tool's own format: `grep` (one source per hit), `glob` and a `read` of a directory
// (listing sources), and `bash` commands that plainly read a file (cat, head, tail, sed -n, nl,
// grep -n, rg -n). Formats are those of opencode-ai 1.18.33 (test/fixtures/opencode-1.18.33-tools.json,
// captured by scripts/capture-tools.mjs).
import fs from "node:fs"
import path from "node:path"
import { pathToFileURL } from "node:url"
import type { SourceLink } from "./client.js"
import { splitLines } from "./readformat.js"

/** OpenCode's grep cuts a hit's text at this many characters and appends "...". */
export const GREP_MAX_LINE = 2000

// ---------------------------------------------------------------- grep tool

export interface GrepHit {
  file: string
  line: number
  /** The line as shown, without its line terminator. */
  text: string
  /** The tool showed the line with its terminator (a blank line follows the hit). */
  newline: boolean
  /** The tool cut the line: its text is not the file's, so the hit is shown but not tracked. */
  cut: boolean
}

export interface GrepResult {
  /** "Found N matches" or "Found N matches (more matches available)". */
  head: string
  hits: GrepHit[]
  /** Verbatim text after the hits ("\n\n(Results truncated. …)"), or "". */
  tail: string
}

const HIT = /^ {2}Line (\d+): (.*)$/s

/** Parses the grep tool's output; undefined for "No files found" and anything unknown. */
export function parseGrep(output: string): GrepResult | undefined {
  if (typeof output !== "string" || !/^Found \d+ matches/.test(output)) return undefined
  let body = output
  let tail = ""
  const t = body.lastIndexOf("\n\n(Results truncated.")
  if (t >= 0) {
    tail = body.slice(t)
    body = body.slice(0, t)
  }
  const rows = body.split("\n")
  const head = rows[0]!
  const hits: GrepHit[] = []
  let file: string | undefined
  for (let i = 1; i < rows.length; i++) {
    const row = rows[i]!
    const m = HIT.exec(row)
    if (m && file !== undefined) {
      // rg keeps each line's terminator, so a hit is followed by an empty row unless the line
      // was cut or was the file's unterminated last line. A group separator is one more empty row.
      const next = rows[i + 1]
      const afterNext = rows[i + 2]
      const newline = next === "" && (afterNext === undefined || afterNext === "" || HIT.test(afterNext))
      if (newline) i++
      const text = m[2]!
      const cut = text.length === GREP_MAX_LINE + 3 && text.endsWith("...")
      hits.push({ file, line: Number(m[1]), text, newline, cut })
      continue
    }
    if (row === "") continue
    if (row.endsWith(":") && path.isAbsolute(row.slice(0, -1))) {
      file = row.slice(0, -1)
      continue
    }
    return undefined
  }
  if (hits.length === 0) return undefined
  const g = { head, hits, tail }
  // Blank rows are ambiguous one by one; the result stands only if it prints back exactly.
  return renderGrep(g) === output ? g : undefined
}

/** Renders hits (with possibly new line numbers and text) exactly as the grep tool does. */
export function renderGrep(g: GrepResult): string {
  const rows = [g.head]
  let file = ""
  for (const h of g.hits) {
    if (h.file !== file) {
      if (file !== "") rows.push("")
      file = h.file
      rows.push(`${h.file}:`)
    }
    rows.push(`  Line ${h.line}: ${h.text}${h.newline ? "\n" : ""}`)
  }
  return rows.join("\n") + g.tail
}

// ---------------------------------------------------------------- listings

export interface ListingQuery {
  /** 1 = the directory's own entries; 0 = unlimited depth. */
  depth: number
  hidden: boolean
  ignore: string[]
  glob?: string
}

/** The listing source URI (CONTRACTS.md "Directory (listing) sources"): parameters in fixed order. */
export function listingUri(dir: string, q: ListingQuery): string {
  const parts = [`depth=${q.depth}`, `hidden=${q.hidden ? 1 : 0}`]
  if (q.ignore.length > 0) parts.push(`ignore=${[...q.ignore].sort().map(encodeURIComponent).join(",")}`)
  if (q.glob) parts.push(`glob=${encodeURIComponent(q.glob).replace(/%2F/g, "/").replace(/%2A/g, "*")}`)
  return `${pathToFileURL(dir).href}?${parts.join("&")}`
}

/** Canonical listing text: one entry per line, sorted bytewise, no trailing newline. */
export function canonicalListing(entries: Iterable<string>): string {
  return [...new Set(entries)].sort(bytewise).join("\n")
}

function bytewise(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))
}

/** A `read` of a directory: its entries (directories end with "/"), when the whole listing was shown. */
export function parseDirectoryRead(output: string, metadata: unknown): { dir: string; entries: string[] } | undefined {
  const m = /^<path>([^\n]*)<\/path>\n<type>directory<\/type>\n<entries>\n([\s\S]*)\n<\/entries>/.exec(output ?? "")
  if (!m) return undefined
  const display = (metadata as any)?.display
  if (display && (display.truncated === true || (typeof display.offset === "number" && display.offset !== 1))) return undefined
  const rows = m[2]!.split("\n")
  const footer = rows.pop()
  const fm = /^\((\d+) entries\)$/.exec(footer ?? "")
  if (!fm) return undefined
  if (rows[rows.length - 1] === "") rows.pop()
  const entries = rows.filter((r) => r !== "")
  if (entries.length !== Number(fm[1])) return undefined
  return { dir: m[1]!, entries }
}

/** The glob tool's output: absolute file paths, one per line (undefined when cut at the limit). */
export function parseGlob(output: string, metadata: unknown): string[] | undefined {
  if (typeof output !== "string" || (metadata as any)?.truncated === true) return undefined
  if (output === "No files found") return []
  if (output.includes("(Results are truncated")) return undefined
  const rows = output.split("\n").filter((r) => r !== "")
  return rows.every((r) => path.isAbsolute(r)) ? rows : undefined
}

/** A glob pattern as ripgrep applies it: one without a slash matches at any depth (gitignore rules). */
export function rgGlob(pattern: string): string {
  const p = pattern.replace(/^\.\//, "")
  return p.includes("/") ? p.replace(/^\//, "") : `**/${p}`
}

/** Glob matching as in the contract: `*`, `?`, `**`, `{a,b}` over slash paths. */
export function globToRegExp(glob: string): RegExp {
  let re = ""
  let depth = 0
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!
    if (c === "*") {
      if (glob[i + 1] === "*") {
        i++
        if (glob[i + 1] === "/") {
          i++
          re += "(?:.*/)?"
        } else re += ".*"
      } else re += "[^/]*"
    } else if (c === "?") re += "[^/]"
    else if (c === "{") {
      depth++
      re += "(?:"
    } else if (c === "}" && depth > 0) {
      depth--
      re += ")"
    } else if (c === "," && depth > 0) re += "|"
    else re += c.replace(/[.+^$()|[\]\\]/g, "\\$&")
  }
  return new RegExp(`^${re}$`)
}

/**
 * Lists dir as the server would for the query (files and directories, dirs with "/"), or undefined
 * when there are more than `limit` entries (too big to compare cheaply).
 */
export function walkListing(dir: string, q: ListingQuery, limit = 20000): string[] | undefined {
  const out: string[] = []
  const match = q.glob ? globToRegExp(q.glob) : undefined
  const ignore = new Set(q.ignore)
  let seen = 0
  const visit = (rel: string, level: number): boolean => {
    let names: fs.Dirent[]
    try {
      names = fs.readdirSync(path.join(dir, rel), { withFileTypes: true })
    } catch {
      return true
    }
    for (const d of names) {
      if (++seen > limit) return false
      if (!q.hidden && d.name.startsWith(".")) continue
      if (ignore.has(d.name)) continue
      const r = rel ? `${rel}/${d.name}` : d.name
      // As the server lists (fileadapter/listing.go): a symlink is an entry, never followed, so a
      // link to a directory has no "/" (following it made every such listing look out of date).
      if (d.isDirectory()) {
        if (!match) out.push(`${r}/`)
        if ((q.depth === 0 || level + 1 < q.depth) && !visit(r, level + 1)) return false
      } else if (!match || match.test(r)) out.push(r)
    }
    return true
  }
  return visit("", 0) ? out : undefined
}

/**
 * The query under which the server's listing of dir equals the entries the tool showed: starts
 * from `base` and adds to `ignore` the names of whatever the tool left out (a .gitignore'd
 * `dist/`, say), as long as no shown entry has that name. undefined when no such query exists.
 */
export function fitListing(dir: string, shown: string[], base: ListingQuery): ListingQuery | undefined {
  const want = canonicalListing(shown)
  const shownNames = new Set(shown.flatMap((e) => e.replace(/\/$/, "").split("/")))
  let q = base
  for (let round = 0; round < 3; round++) {
    const have = walkListing(dir, q)
    if (!have) return undefined
    if (canonicalListing(have) === want) return q
    const shownSet = new Set(shown)
    const extra = have.filter((e) => !shownSet.has(e))
    if (extra.length === 0) return undefined // the tool showed entries the walk does not find
    const names = new Set<string>()
    for (const e of extra) {
      const comps = e.replace(/\/$/, "").split("/")
      const c = comps.find((x) => !shownNames.has(x))
      if (c === undefined) return undefined
      names.add(c)
    }
    q = { ...q, ignore: [...new Set([...q.ignore, ...names])] }
  }
  return undefined
}

// ---------------------------------------------------------------- bash reads

/** How a shell read printed its lines, to print them again the same way. */
export type ShellStyle =
  | { kind: "plain" } // cat, head, tail, sed -n
  | { kind: "numbered" } // cat -n, nl -ba: "%6d\t"
  | { kind: "hits"; withFile: boolean } // grep -n / rg -n: [path:]line:text

export interface ShellRead {
  /** What the command printed, as sources: one per file window, or one per hit for grep/rg. */
  sources: SourceLink[]
  style: ShellStyle
  /** For hits: the file prefix as printed (relative as typed), per source. */
  labels: string[]
  /** The output ended with a newline. */
  finalNewline: boolean
}

/** Splits a command line into words; undefined unless it is one plain command (no pipes, redirects, chains, substitutions). */
export function shellWords(command: string): string[] | undefined {
  const words: string[] = []
  let cur = ""
  let inWord = false
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!
    if (c === "'") {
      const j = command.indexOf("'", i + 1)
      if (j < 0) return undefined
      cur += command.slice(i + 1, j)
      i = j
      inWord = true
    } else if (c === '"') {
      let j = i + 1
      let s = ""
      for (; j < command.length && command[j] !== '"'; j++) {
        if (command[j] === "$" || command[j] === "`") return undefined
        if (command[j] === "\\" && j + 1 < command.length) j++
        s += command[j]
      }
      if (j >= command.length) return undefined
      cur += s
      i = j
      inWord = true
    } else if (c === "\\") {
      if (i + 1 >= command.length) return undefined
      cur += command[++i]
      inWord = true
    } else if (c === " " || c === "\t") {
      if (inWord) words.push(cur)
      cur = ""
      inWord = false
    } else if ("|&;<>()$`\n\r*?[]{}~#".includes(c)) {
      return undefined
    } else {
      cur += c
      inWord = true
    }
  }
  if (inWord) words.push(cur)
  return words.length > 0 ? words : undefined
}

interface ReadCommand {
  tool: "cat" | "head" | "tail" | "sed" | "nl" | "grep"
  files: string[]
  numbered: boolean
  /** head/tail count, sed range. */
  count?: number
  from?: number
  to?: number
  /** tail -n +N */
  fromStart?: boolean
  /** grep/rg: always print the file name. */
  withFile?: boolean
}

/** Recognises the plain file reads; undefined for anything else (which stays an event). */
export function parseReadCommand(command: string): ReadCommand | undefined {
  const w = shellWords(command.trim())
  if (!w) return undefined
  const prog = w[0]!
  const args = w.slice(1)
  const files = (xs: string[]) => (xs.length > 0 && xs.every((x) => !x.startsWith("-")) ? xs : undefined)
  switch (prog) {
    case "cat": {
      let numbered = false
      let rest = args
      if (rest[0] === "-n") {
        numbered = true
        rest = rest.slice(1)
      }
      const f = files(rest)
      return f && f.length === 1 ? { tool: "cat", files: f, numbered } : undefined
    }
    case "nl": {
      if (args[0] !== "-ba") return undefined
      const f = files(args.slice(1))
      return f && f.length === 1 ? { tool: "nl", files: f, numbered: true } : undefined
    }
    case "head":
    case "tail": {
      let count = 10
      let fromStart = false
      let rest = args
      if (rest[0] === "-n" && rest[1] !== undefined) {
        const m = /^(\+)?(\d+)$/.exec(rest[1])
        if (!m) return undefined
        fromStart = !!m[1]
        count = Number(m[2])
        rest = rest.slice(2)
      } else if (rest[0] !== undefined && /^-n?\d+$/.test(rest[0])) {
        count = Number(rest[0].replace(/^-n?/, ""))
        rest = rest.slice(1)
      }
      if (fromStart && prog === "head") return undefined
      const f = files(rest)
      if (!f || f.length !== 1 || count < 1) return undefined
      return { tool: prog, files: f, numbered: false, count, fromStart }
    }
    case "sed": {
      if (args[0] !== "-n" || args.length !== 3) return undefined
      const m = /^(\d+)(?:,(\d+))?p$/.exec(args[1]!)
      if (!m) return undefined
      const from = Number(m[1])
      const to = m[2] ? Number(m[2]) : from
      const f = files(args.slice(2))
      if (!f || f.length !== 1 || from < 1 || to < from) return undefined
      return { tool: "sed", files: f, numbered: false, from, to }
    }
    case "grep":
    case "rg": {
      // Only line-numbered searches over named files; flags that add context lines, counts,
      // or change what a line is are not plain reads.
      let numbered = false
      let withFile = false
      let pattern: string | undefined
      const rest: string[] = []
      for (let i = 0; i < args.length; i++) {
        const a = args[i]!
        if (pattern === undefined && a.startsWith("-") && a.length > 1) {
          if (a === "-e" && args[i + 1] !== undefined) {
            pattern = args[++i]!
            continue
          }
          for (const f of a.slice(1)) {
            if (f === "n") numbered = true
            else if (f === "H") withFile = true
            else if (f === "r" || f === "R") continue
            else if (!"iwFEs".includes(f)) return undefined
          }
          continue
        }
        if (pattern === undefined) pattern = a
        else rest.push(a)
      }
      if (!numbered || pattern === undefined || rest.length === 0 || rest.some((x) => x.startsWith("-"))) return undefined
      return { tool: "grep", files: rest, numbered: true, withFile: withFile || rest.length > 1 }
    }
  }
  return undefined
}

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

function readLines(file: string): string[] | undefined {
  try {
    const st = fs.statSync(file)
    if (!st.isFile() || st.size > 16 << 20) return undefined
    return splitLines(fs.readFileSync(file, "utf8"))
  } catch {
    return undefined
  }
}

/**
 * Maps a plain read command and its output to sources. cwd resolves relative paths. Returns a
 * reason string when the command is a read but its output cannot be tied to the file (it changed
 * since, or the output is not the file's text).
 */
export function observeShellRead(command: string, output: string, cwd: string): ShellRead | string | undefined {
  const cmd = parseReadCommand(command)
  if (!cmd) return undefined
  if (typeof output !== "string") return "no output"
  const finalNewline = output.endsWith("\n")
  const rows = splitLines(output)
  const uriOf = (f: string) => pathToFileURL(path.resolve(cwd, f)).href
  if (cmd.tool === "grep") {
    const sources: SourceLink[] = []
    const labels: string[] = []
    // One named file prints bare `line:text`; several files or a directory print `path:line:text`.
    const single = !cmd.withFile && isFile(path.resolve(cwd, cmd.files[0]!))
    for (const row of rows) {
      let file: string
      let rest: string
      if (single) {
        file = cmd.files[0]!
        rest = row
      } else {
        // path:line:text; the path is one of the named files or below a named directory
        const m = /^(.*?):(\d+):/.exec(row)
        if (!m) return "unrecognised grep line"
        file = m[1]!
        rest = row.slice(m[1]!.length + 1)
      }
      const m = /^(\d+):(.*)$/s.exec(rest)
      if (!m) return "unrecognised grep line"
      const line = Number(m[1])
      sources.push({ uri: uriOf(file), range: { start: line, end: line }, text: m[2]! })
      labels.push(single ? "" : file)
    }
    if (sources.length === 0) return "no hits"
    return { sources, style: { kind: "hits", withFile: !single }, labels, finalNewline }
  }
  const file = path.resolve(cwd, cmd.files[0]!)
  const uri = pathToFileURL(file).href
  let lines = rows
  if (cmd.numbered) {
    lines = []
    for (const [i, row] of rows.entries()) {
      const m = /^ *(\d+)\t(.*)$/s.exec(row)
      if (!m || Number(m[1]) !== i + 1) return "unrecognised numbered line"
      lines.push(m[2]!)
    }
  }
  const style: ShellStyle = cmd.numbered ? { kind: "numbered" } : { kind: "plain" }
  let start = 1
  let whole = false
  switch (cmd.tool) {
    case "cat":
    case "nl":
      whole = true
      break
    case "head":
      break
    case "sed":
      start = cmd.from!
      break
    case "tail": {
      if (cmd.fromStart) {
        start = cmd.count!
        break
      }
      // tail's window is counted from the end: place it by the file as it is now.
      const all = readLines(file)
      if (!all) return "file not readable"
      start = Math.max(1, all.length - lines.length + 1)
      if (all.slice(start - 1).join("\n") !== lines.join("\n")) return "the file changed since tail ran"
      break
    }
  }
  if (lines.length === 0) return "empty window"
  const text = lines.join("\n")
  const source: SourceLink = whole ? { uri, text } : { uri, range: { start, end: start + lines.length - 1 }, text }
  return { sources: [source], style, labels: [""], finalNewline }
}

/** Prints sources again as the command printed them (the current lines, at their current numbers). */
export function renderShellRead(r: ShellRead, sources: SourceLink[]): string {
  const rows: string[] = []
  if (r.style.kind === "hits") {
    sources.forEach((s, i) => {
      const label = r.labels[i] ?? ""
      const line = s.range?.start ?? 1
      const prefix = r.style.kind === "hits" && r.style.withFile ? `${label}:` : ""
      rows.push(`${prefix}${line}:${(s.text ?? "").split("\n")[0]}`)
    })
  } else {
    for (const s of sources) {
      const lines = s.range ? (s.text ?? "").split("\n") : splitLines(s.text ?? "")
      const start = s.range?.start ?? 1
      lines.forEach((l, i) => rows.push(r.style.kind === "numbered" ? `${String(start + i).padStart(6)}\t${l}` : l))
    }
  }
  return rows.join("\n") + (r.finalNewline && rows.length > 0 ? "\n" : "")
}
