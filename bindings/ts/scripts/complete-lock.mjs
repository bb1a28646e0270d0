// Adds lockfile entries for the platform packages of opencode-ai and @kilocode/cli that the
// registry mirror used to create package-lock.json did not serve (it has only the linux-x64 builds). Without them
// `npm ci` refuses the lockfile as out of sync with package.json. The entries carry os/cpu/libc,
// so npm skips them on other platforms exactly as it would with complete metadata; on a platform
// that needs one, npm fetches it by name and version like any optional dependency.
// Run after regenerating package-lock.json: node scripts/complete-lock.mjs
import fs from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"

const file = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "e2e-deps", "package-lock.json")
const lock = JSON.parse(fs.readFileSync(file, "utf8"))
const platforms = ["opencode-ai", "@kilocode/cli"].flatMap((w) => Object.entries(lock.packages[`node_modules/${w}`]?.optionalDependencies ?? {}))
let added = 0
for (const [name, version] of platforms) {
  const key = `node_modules/${name}`
  if (lock.packages[key]) continue
  const m = /^(?:opencode|@kilocode\/cli)-(darwin|linux|windows)-(x64|arm64)(-baseline)?(-musl)?$/.exec(name)
  if (!m) throw new Error(`unknown platform package ${name}`)
  lock.packages[key] = {
    version,
    cpu: [m[2]],
    dev: true,
    ...(m[4] ? { libc: ["musl"] } : {}),
    optional: true,
    os: [m[1] === "windows" ? "win32" : m[1]],
  }
  added++
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))))
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + "\n")
console.log(`complete-lock: added ${added} platform entries`)
