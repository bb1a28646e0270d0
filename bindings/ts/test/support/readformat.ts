// OpenCode's `read` tool output, for the tests (the binding itself leaves formats to concord's recognize): parsing it back into lines and rendering lines in the
// same shape. Everything that depends on how a given OpenCode version formats a read lives here,
// because that format changes between versions (tests: test/unit/readformat.test.ts, with outputs
// captured from the pinned opencode-ai).
//
// Shapes seen so far:
//   1.1.65 … 1.18.x  <path>P</path>\n<type>file</type>\n<content>\n1: a\n2: b\n\n(End of file - total 2 lines)\n</content>
//   early 1.x        the same without the newline after <content>, footer "(File has more lines. …)"
//   ≤ 1.1.27         <file>\n00001| a\n00002| b\n\n(End of file - total 2 lines)\n</file>
// Anything after the closing tag (a <system-reminder> with directory instructions) is kept verbatim.

import path from "node:path"

/** OpenCode cuts lines longer than this many UTF-16 units and appends LINE_TRUNCATED. */
export const MAX_LINE_CHARS = 2000
export const LINE_TRUNCATED = `... (line truncated to ${MAX_LINE_CHARS} chars)`
/** OpenCode stops a read once the numbered lines exceed this many bytes. */
export const MAX_OUTPUT_BYTES = 51200

export interface ReadShape {
  /** `<path>/<type>/<content>` (current) or `<file>` (≤ 1.1.27). */
  wrapper: "content" | "file"
  /** Whether a newline follows the opening `<content>` tag (added in 2026-04). */
  contentNewline: boolean
  /** `12: text` (current) or `00012| text` (≤ 1.1.27). */
  prefix: "colon" | "pipe"
}

export const CURRENT_SHAPE: ReadShape = { wrapper: "content", contentNewline: true, prefix: "colon" }

export type Footer =
  | { kind: "eof"; total: number }
  | { kind: "more"; start: number; end: number; total: number }
  | { kind: "capped"; start: number; end: number }
  | { kind: "more-legacy"; end: number }
  | { kind: "other"; text: string }
  | { kind: "none" }

export interface ParsedRead {
  shape: ReadShape
  /** The `<path>` element (absent in the `<file>` shape). */
  path?: string
  /** First line number shown (1 when no line is shown). */
  start: number
  /** The lines as shown, without their number prefixes. */
  lines: string[]
  footer: Footer
  /** Verbatim text after the closing tag, e.g. "\n\n<system-reminder>…</system-reminder>". */
  suffix: string
}

const HEADER_CONTENT = /^<path>([^\n]*)<\/path>\n<type>([^\n]*)<\/type>\n<content>(\n?)/
const HEADER_FILE = /^<file>\n/
const LINE_COLON = /^(\d+): (.*)$/s
const LINE_COLON_EMPTY = /^(\d+):$/
const LINE_PIPE = /^(\d+)\| ?(.*)$/s

/**
 * Parses a text-file read result. Returns undefined for anything else (directory listings,
 * images, errors, unknown shapes): the caller then leaves that output alone.
 */
export function parseRead(output: string): ParsedRead | undefined {
  if (typeof output !== "string") return undefined
  let shape: ReadShape
  let readPath: string | undefined
  let rest: string
  let close: string
  const m = HEADER_CONTENT.exec(output)
  if (m) {
    if (m[2] !== "file") return undefined
    shape = { wrapper: "content", contentNewline: m[3] === "\n", prefix: "colon" }
    readPath = m[1]
    rest = output.slice(m[0].length)
    close = "\n</content>"
  } else if (HEADER_FILE.test(output)) {
    shape = { wrapper: "file", contentNewline: true, prefix: "pipe" }
    rest = output.slice("<file>\n".length)
    close = "\n</file>"
  } else {
    return undefined
  }
  // Every content line carries a number prefix, so the first "\n</content>" is the closing tag.
  const end = rest.indexOf(close)
  if (end < 0) return undefined
  const inner = rest.slice(0, end)
  const suffix = rest.slice(end + close.length)
  const rows = inner.split("\n")
  let footer: Footer = { kind: "none" }
  const last = rows[rows.length - 1]
  if (last !== undefined && last.startsWith("(") && last.endsWith(")")) {
    footer = parseFooter(last)
    rows.pop()
  }
  while (rows.length > 0 && rows[rows.length - 1] === "") rows.pop()
  const lines: string[] = []
  let start = 0
  for (const row of rows) {
    const lm = shape.prefix === "colon" ? (LINE_COLON.exec(row) ?? LINE_COLON_EMPTY.exec(row)) : LINE_PIPE.exec(row)
    if (!lm) return undefined
    const n = Number(lm[1])
    if (lines.length === 0) start = n
    else if (n !== start + lines.length) {
      return undefined
    }
    lines.push(lm[2] ?? "")
  }
  if (lines.length === 0) start = footer.kind === "more" || footer.kind === "capped" ? footer.start : 1
  return { shape, path: readPath, start, lines, footer, suffix }
}

function parseFooter(text: string): Footer {
  let m = /^\(End of file - total (\d+) lines?\)$/.exec(text)
  if (m) return { kind: "eof", total: Number(m[1]) }
  m = /^\(Showing lines (\d+)-(\d+) of (\d+)\. Use offset=\d+ to continue\.\)$/.exec(text)
  if (m) return { kind: "more", start: Number(m[1]), end: Number(m[2]), total: Number(m[3]) }
  m = /^\(Output capped at [^.]*\. Showing lines (\d+)-(\d+)\. Use offset=\d+ to continue\.\)$/.exec(text)
  if (m) return { kind: "capped", start: Number(m[1]), end: Number(m[2]) }
  m = /^\(File has more lines\. Use 'offset' parameter to read beyond line (\d+)\)$/.exec(text)
  if (m) return { kind: "more-legacy", end: Number(m[1]) }
  return { kind: "other", text }
}

/** Whether a shown line is OpenCode's cut-down version of a longer line (not the raw text). */
export function isTruncatedLine(line: string): boolean {
  return line.length === MAX_LINE_CHARS + LINE_TRUNCATED.length && line.endsWith(LINE_TRUNCATED)
}

export function truncateLine(line: string): string {
  return line.length > MAX_LINE_CHARS ? line.substring(0, MAX_LINE_CHARS) + LINE_TRUNCATED : line
}

/** Splits file content into lines the way OpenCode's read does (LF, CRLF or CR; no trailing empty line). */
export function splitLines(text: string): string[] {
  if (text === "") return []
  const lines = text.split(/\r\n|\r|\n/)
  if (lines[lines.length - 1] === "") lines.pop()
  return lines
}

export function countLines(text: string): number {
  return splitLines(text).length
}

export interface RenderInput {
  shape?: ReadShape
  path: string
  /** Line number of lines[0]; 1 for an empty file. */
  start: number
  lines: string[]
  /** Lines in the file now (for the footer). */
  totalLines: number
  suffix?: string
}

/** Renders lines as OpenCode's read tool would show them for the same window. */
export function renderRead(r: RenderInput): string {
  const shape = r.shape ?? CURRENT_SHAPE
  const prefix = (n: number) => (shape.prefix === "colon" ? `${n}: ` : `${String(n).padStart(5, "0")}| `)
  const shown: string[] = []
  let bytes = 0
  let capped = false
  for (let i = 0; i < r.lines.length; i++) {
    const line = truncateLine(r.lines[i]!)
    const size = Buffer.byteLength(line, "utf8") + (shown.length > 0 ? 1 : 0)
    if (bytes + size > MAX_OUTPUT_BYTES) {
      capped = true
      break
    }
    bytes += size
    shown.push(prefix(r.start + i) + line)
  }
  const end = r.start + shown.length - 1
  let footer: string
  if (capped) {
    footer = `(Output capped at ${MAX_OUTPUT_BYTES / 1024} KB. Showing lines ${r.start}-${end}. Use offset=${end + 1} to continue.)`
  } else if (end >= r.totalLines) {
    footer = `(End of file - total ${Math.max(r.totalLines, end)} lines)`
  } else if (shape.wrapper === "content" && shape.contentNewline) {
    footer = `(Showing lines ${r.start}-${end} of ${r.totalLines}. Use offset=${end + 1} to continue.)`
  } else {
    footer = `(File has more lines. Use 'offset' parameter to read beyond line ${end})`
  }
  const head =
    shape.wrapper === "content"
      ? `<path>${r.path}</path>\n<type>file</type>\n<content>${shape.contentNewline ? "\n" : ""}`
      : "<file>\n"
  const close = shape.wrapper === "content" ? "</content>" : "</file>"
  return `${head}${shown.join("\n")}\n\n${footer}\n${close}${r.suffix ?? ""}`
}

/** What a read showed, as Concord needs it: the raw lines and where they sit in the file. */
export interface ReadObservation {
  path: string
  /** First line (1-based); 1 for an empty file. */
  start: number
  lines: string[]
  /** The read started at line 1 and reached the end of the file: the block is the whole source. */
  whole: boolean
  shape: ReadShape
  suffix: string
}

export interface ReadCall {
  /** The tool arguments (filePath, offset?, limit?). */
  input: unknown
  output: string
  metadata?: unknown
  /** Directory that relative file paths resolve against (OpenCode's instance directory). */
  directory: string
}

/**
 * Extracts the observation from one completed read. Prefers metadata.display (OpenCode ≥ 1.17:
 * raw lines, exact window, file length) and falls back to parsing the output. Returns a string
 * saying why a read is left alone (not a text file, lines cut at 2000 chars, unknown shape).
 */
export function observeRead(call: ReadCall): ReadObservation | string {
  const parsed = parseRead(call.output)
  if (!parsed) return "not a text file read in a known format"
  const input = (call.input ?? {}) as Record<string, unknown>
  const display = asDisplay((call.metadata as Record<string, unknown> | undefined)?.display)
  let filePath = display?.path ?? parsed.path
  if (!filePath && typeof input.filePath === "string") filePath = path.resolve(call.directory, input.filePath)
  if (!filePath) return "no file path"
  if (!path.isAbsolute(filePath)) filePath = path.resolve(call.directory, filePath)
  let start: number
  let lines: string[]
  let whole: boolean
  if (display) {
    lines = display.text === "" && display.lineEnd < display.lineStart ? [] : display.text.split("\n")
    start = display.lineStart
    if (lines.length !== Math.max(0, display.lineEnd - display.lineStart + 1)) return "display metadata disagrees with itself"
    whole = start === 1 && !display.truncated && display.lineEnd >= display.totalLines
  } else {
    lines = parsed.lines
    start = parsed.start
    whole = start === 1 && parsed.footer.kind === "eof" && parsed.footer.total === lines.length
  }
  if (lines.some(isTruncatedLine)) return "a line was cut at 2000 chars"
  return { path: filePath, start, lines, whole, shape: parsed.shape, suffix: parsed.suffix }
}

interface Display {
  path?: string
  text: string
  lineStart: number
  lineEnd: number
  totalLines: number
  truncated: boolean
}

function asDisplay(v: unknown): Display | undefined {
  if (!v || typeof v !== "object") return undefined
  const d = v as Record<string, unknown>
  if (d.type !== "file" || typeof d.text !== "string") return undefined
  if (typeof d.lineStart !== "number" || typeof d.lineEnd !== "number" || typeof d.totalLines !== "number") return undefined
  return {
    path: typeof d.path === "string" ? d.path : undefined,
    text: d.text,
    lineStart: d.lineStart,
    lineEnd: d.lineEnd,
    totalLines: d.totalLines,
    truncated: d.truncated === true,
  }
}
