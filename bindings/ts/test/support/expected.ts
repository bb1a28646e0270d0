// What OpenCode 1.18's read tool returns for a file and window, computed from the file as it is
// now. readformat.test.ts checks renderRead byte for byte against outputs captured from the real
// program, and the e2e tests compare against fresh reads by the real program.
import fs from "node:fs"
import { renderRead, splitLines } from "./readformat.js"

export function openCodeRead(file: string, offset?: number, limit?: number) {
  const all = splitLines(fs.readFileSync(file, "utf8"))
  const start = offset ?? 1
  const lines = all.slice(start - 1, start - 1 + (limit ?? 2000))
  const end = start + lines.length - 1
  return {
    input: { filePath: file, ...(offset !== undefined ? { offset } : {}), ...(limit !== undefined ? { limit } : {}) },
    output: renderRead({ path: file, start, lines, totalLines: all.length }),
    metadata: {
      preview: lines.slice(0, 20).join("\n"),
      truncated: end < all.length,
      loaded: [],
      display: {
        type: "file",
        path: file,
        text: lines.join("\n"),
        lineStart: start,
        lineEnd: end,
        totalLines: all.length,
        truncated: end < all.length,
      },
    },
  }
}
