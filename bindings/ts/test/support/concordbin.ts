// The real concord binary for tests: $CONCORD_BIN (the top Makefile passes bin/concord).
import fs from "node:fs"

export function concordBin(): string | undefined {
  const bin = process.env.CONCORD_BIN
  if (!bin) return undefined
  try {
    fs.accessSync(bin, fs.constants.X_OK)
    return bin
  } catch {
    return undefined
  }
}

/** false when the binary is there, else the reason to skip (printed by node --test). */
export function skipWithoutConcord(): false | string {
  if (concordBin()) return false
  return process.env.CONCORD_BIN
    ? `SKIPPED: CONCORD_BIN=${process.env.CONCORD_BIN} is not an executable file (run \`make build\` at the repo root)`
    : "SKIPPED: CONCORD_BIN is not set (make -C bindings/ts test CONCORD_BIN=/abs/bin/concord)"
}
