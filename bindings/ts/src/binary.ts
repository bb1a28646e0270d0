// Where the `concord` executable is: $CONCORD_BIN, next to this package, or on PATH.
import fs from "node:fs"
import path from "node:path"

export interface BinaryLookup {
  /** The executable to start, or undefined when none was found. */
  path?: string
  /** Every place looked at, for the warning when nothing is found. */
  tried: string[]
}

const EXE = process.platform === "win32" ? "concord.exe" : "concord"

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

/**
 * moduleDir is the directory of the running plugin file: dist/src/ inside the npm package, or
 * .opencode/plugins/ for the single-file drop-in. "Next to the package" means that directory,
 * its bin/, and the package root's bin/ when running from dist/.
 */
export function findConcord(env: NodeJS.ProcessEnv, moduleDir?: string, explicit?: string): BinaryLookup {
  const tried: string[] = []
  const fromEnv = explicit || env.CONCORD_BIN
  if (fromEnv) {
    // An explicit choice is used as given: if it is wrong the start fails with a clear warning,
    // rather than silently running some other concord.
    return { path: fromEnv, tried: [fromEnv] }
  }
  const near: string[] = []
  if (moduleDir) {
    near.push(path.join(moduleDir, EXE), path.join(moduleDir, "bin", EXE))
    const parts = moduleDir.split(path.sep)
    const distAt = parts.lastIndexOf("dist")
    if (distAt > 0) {
      const pkgRoot = parts.slice(0, distAt).join(path.sep) || path.sep
      near.push(path.join(pkgRoot, "bin", EXE), path.join(pkgRoot, EXE))
    }
  }
  for (const c of near) {
    tried.push(c)
    if (executable(c)) return { path: c, tried }
  }
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue
    const c = path.join(dir, EXE)
    tried.push(c)
    if (executable(c)) return { path: c, tried }
  }
  return { tried }
}
