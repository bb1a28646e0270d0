// Runs the real `opencode` program (the pinned opencode-ai npm package), or Kilo CLI (the pinned
// @kilocode/cli, an OpenCode fork with the same plugin system), non-interactively and offline
// against a FakeModel: a temp git repo, HOME/XDG dirs of its own, and the switches that stop
// model-list fetching, auto-update, LSP downloads and the config-dir npm install.
import { spawn, execFileSync } from "node:child_process"
import fs from "node:fs"
import net from "node:net"
import path from "node:path"
import { fileURLToPath } from "node:url"

export const PKG_ROOT = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)))
/**
 * What the e2e tests run, apart from what the plugin is built from: opencode-ai, @kilocode/cli
 * and ripgrep are installed into e2e-deps/ (`make e2e-deps`), so `make build` (and `make dist`)
 * never fetch them.
 */
export const E2E_DEPS = path.join(PKG_ROOT, "e2e-deps", "node_modules")

/**
 * What differs between OpenCode and Kilo CLI for these runs, as read from Kilo's binary (`kilo
 * debug paths`, `kilo debug config`): it reads opencode.json too, but has its own env prefix,
 * config dirs and plugin package.
 */
export interface Program {
  /** "opencode" or "kilo": the command, and the name of its config dir under XDG_CONFIG_HOME. */
  name: "opencode" | "kilo"
  /** The npm package that carries it (for messages). */
  pkg: string
  version?: string
  /** The project's config dir whose plugins/ holds drop-in plugin files. */
  projectDir: string
  /** The prefix of the program's environment switches (OPENCODE_DISABLE_..., KILO_DISABLE_...). */
  envPrefix: string
  /** The plugin package the program npm-installs into each config dir at startup. */
  pluginPackage: string
  /**
   * Whether compaction.prune spares the last two user turns whole (OpenCode), or of them only
   * the two newest finished assistant steps (Kilo: its SessionCompaction.prune, in the binary).
   */
  pruneSparesWholeTurns: boolean
}

export const OPENCODE: Program = {
  name: "opencode",
  pkg: "opencode-ai",
  version: readJson(path.join(E2E_DEPS, "opencode-ai/package.json"))?.version,
  projectDir: ".opencode",
  envPrefix: "OPENCODE_",
  pluginPackage: "@opencode-ai/plugin",
  pruneSparesWholeTurns: true,
}

export const KILO: Program = {
  name: "kilo",
  pkg: "@kilocode/cli",
  version: readJson(path.join(E2E_DEPS, "@kilocode/cli/package.json"))?.version,
  projectDir: ".kilo",
  envPrefix: "KILO_",
  pluginPackage: "@kilocode/plugin",
  pruneSparesWholeTurns: false,
}

export const OPENCODE_VERSION = OPENCODE.version
const E2E_ROOT = path.join(PKG_ROOT, ".e2e")

function findPackageRoot(dir: string): string {
  for (let d = dir; ; d = path.dirname(d)) {
    if (readJson(path.join(d, "package.json"))?.name === "concord-opencode") return d
    if (path.dirname(d) === d) throw new Error(`no concord-opencode package.json above ${dir}`)
  }
}

function readJson(file: string): Record<string, any> | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"))
  } catch {
    return undefined
  }
}

/** The program's executable from e2e-deps/node_modules, or undefined when it is not installed. */
export function programBinary(program: Program): string | undefined {
  return program.name === "kilo" ? kiloBinary() : opencodeBinary()
}

/** The opencode executable from e2e-deps/node_modules, or undefined when it is not installed. */
export function opencodeBinary(): string | undefined {
  // opencode-ai's postinstall hardlinks the build that suits this CPU (baseline without AVX2) to
  // bin/opencode.exe; before that runs the file is a small placeholder.
  const wrapper = path.join(E2E_DEPS, "opencode-ai/bin/opencode.exe")
  try {
    if (isExecutable(wrapper) && fs.statSync(wrapper).size > 10 << 20) return wrapper
  } catch {
    // fall through to the platform packages
  }
  const candidates = [
    path.join(E2E_DEPS, `opencode-${process.platform}-${process.arch}/bin/opencode`),
    path.join(E2E_DEPS, `opencode-${process.platform}-${process.arch}-baseline/bin/opencode`),
  ]
  return candidates.find((c) => isExecutable(c))
}

/**
 * Kilo's native build from its platform package. @kilocode/cli's bin/kilo is a node script that
 * spawns the same file (one more process between the test and Kilo); the harness runs the build
 * itself and sets what that script sets (kiloEnv).
 */
function kiloBinary(): string | undefined {
  const p = `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`
  const candidates = [
    path.join(E2E_DEPS, `@kilocode/cli-${p}/bin/kilo`),
    path.join(E2E_DEPS, `@kilocode/cli-${p}-baseline/bin/kilo`),
  ]
  return candidates.find((c) => isExecutable(c))
}

/**
 * The directory of the pinned ripgrep (@vscode/ripgrep's platform package), or undefined when it
 * is not installed for this platform. OpenCode's grep and glob tools run `rg` from PATH (else they
 * download it), so the e2e runs put this directory first on PATH; nothing is installed system-wide.
 */
export function ripgrepDir(): string | undefined {
  const dir = path.join(E2E_DEPS, `@vscode/ripgrep-${process.platform}-${process.arch}/bin`)
  return isExecutable(path.join(dir, process.platform === "win32" ? "rg.exe" : "rg")) ? dir : undefined
}

/** false when the pinned ripgrep is there, else the reason to skip a test that needs grep/glob. */
export function skipWithoutRipgrep(): false | string {
  return ripgrepDir()
    ? false
    : `SKIPPED: no pinned ripgrep for ${process.platform}-${process.arch} in e2e-deps/node_modules/@vscode/ripgrep-* (make e2e-deps installs it; OpenCode's grep/glob would download rg otherwise)`
}

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

export interface Workspace {
  root: string
  proj: string
  home: string
  /** Writes a file in the project (relative path) and returns its absolute path. */
  write(rel: string, text: string): string
}

/** A fresh project (a git repo with one commit) plus isolated HOME/XDG dirs under .e2e/. */
let cleaned = false

export function makeWorkspace(name: string, files: Record<string, string>): Workspace {
  if (!cleaned) {
    // Keep only this test run's workspaces (they hold the logs to look at after a failure).
    fs.rmSync(path.join(E2E_ROOT, "runs"), { recursive: true, force: true })
    cleaned = true
  }
  const root = path.join(E2E_ROOT, "runs", `${name}-${process.pid}-${Date.now()}`)
  const proj = path.join(root, "proj")
  const home = path.join(root, "home")
  fs.rmSync(root, { recursive: true, force: true })
  fs.mkdirSync(proj, { recursive: true })
  fs.mkdirSync(home, { recursive: true })
  const write = (rel: string, text: string) => {
    const file = path.join(proj, rel)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, text)
    return file
  }
  for (const [rel, text] of Object.entries(files)) write(rel, text)
  const git = (...args: string[]) => execFileSync("git", args, { cwd: proj, stdio: "ignore" })
  git("init", "-q")
  git("-c", "user.email=e2e@example.invalid", "-c", "user.name=e2e", "add", "-A")
  git("-c", "user.email=e2e@example.invalid", "-c", "user.name=e2e", "commit", "-q", "-m", "init")
  return { root, proj, home, write }
}

export type PluginMode =
  /** The bundled single file copied into .opencode/plugins/. */
  | { kind: "dropin"; file: string }
  /** One line in opencode.json: "plugin": [spec]. */
  | { kind: "config"; spec: string }
  | { kind: "none" }

export interface RunOptions {
  /** OpenCode (the default) or Kilo CLI. */
  program?: Program
  port: number
  plugin: PluginMode
  prompt?: string
  model?: string
  pure?: boolean
  continue?: boolean
  /** More arguments for `opencode run` after the prompt (e.g. ["-f", file]: -f takes an array). */
  extraArgs?: string[]
  env?: Record<string, string>
  timeoutMs?: number
  /** The URL of a running `opencode serve` (serveOpencode) to send the prompt to. */
  attach?: string
  /** Name of the run's log files under the workspace root (default "opencode"). */
  logName?: string
  /** More top-level keys for opencode.json (e.g. compaction settings). */
  config?: Record<string, unknown>
}

export interface RunResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
  /** The --format json events, one object per stdout line that parsed. */
  events: any[]
  ms: number
}

/**
 * OpenCode npm-installs @opencode-ai/plugin (Kilo: @kilocode/plugin) into every writable config
 * dir at startup and makes plugins wait for it. It skips that when node_modules exists and
 * package-lock.json lists every dependency of package.json, so the dir gets exactly that,
 * pointing at our own pre-installed node_modules (the plugin imports nothing from either package
 * at run time; its types come from @opencode-ai/plugin).
 */
function satisfyConfigDirInstall(program: Program, dir: string): void {
  fs.mkdirSync(dir, { recursive: true })
  const pkg = program.pluginPackage
  const version = readJson(path.join(PKG_ROOT, "node_modules", pkg, "package.json"))?.version ?? program.version ?? "*"
  const deps = { [pkg]: version }
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ dependencies: deps }, null, 2))
  fs.writeFileSync(
    path.join(dir, "package-lock.json"),
    JSON.stringify({ lockfileVersion: 3, packages: { "": { dependencies: deps } } }, null, 2),
  )
  const nm = path.join(dir, "node_modules")
  if (!fs.existsSync(nm)) fs.symlinkSync(path.join(PKG_ROOT, "node_modules"), nm, "dir")
}

export function writeConfig(ws: Workspace, opts: RunOptions): void {
  const program = opts.program ?? OPENCODE
  const model = opts.model ?? "fake-model"
  const config: Record<string, unknown> = {
    $schema: "https://opencode.ai/config.json",
    model: `fake/${model}`,
    small_model: `fake/${model}`,
    autoupdate: false,
    share: "disabled",
    snapshot: false,
    provider: {
      fake: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake",
        options: { baseURL: `http://127.0.0.1:${opts.port}/v1`, apiKey: "dummy" },
        models: { [model]: { name: "Fake", tool_call: true, limit: { context: 128000, output: 4096 } } },
      },
    },
    permission: { read: "allow", edit: "allow", bash: "allow", external_directory: "allow" },
  }
  if (opts.plugin.kind === "config") config.plugin = [opts.plugin.spec]
  // Kilo fetches the model lists of its own gateway providers (kilo, apertis) at every prompt,
  // whatever KILO_DISABLE_MODELS_FETCH says: only the fake provider, so it looks up no host.
  if (program.name === "kilo") config.enabled_providers = ["fake"]
  Object.assign(config, opts.config)
  fs.writeFileSync(path.join(ws.proj, "opencode.json"), JSON.stringify(config, null, 2))
  // OpenCode creates the global config dir at startup and installs into it too.
  satisfyConfigDirInstall(program, path.join(ws.home, "config", program.name))
  // Any npm fetch OpenCode still attempted would go to a closed port and fail (and show up in
  // fetchedFromNpm()), instead of quietly reaching the registry.
  fs.writeFileSync(path.join(ws.home, ".npmrc"), "registry=http://127.0.0.1:9/\n")
  if (opts.plugin.kind === "dropin") {
    const dir = path.join(ws.proj, program.projectDir)
    satisfyConfigDirInstall(program, dir)
    fs.mkdirSync(path.join(dir, "plugins"), { recursive: true })
    fs.copyFileSync(opts.plugin.file, path.join(dir, "plugins", path.basename(opts.plugin.file)))
  }
}

export async function runOpencode(ws: Workspace, opts: RunOptions): Promise<RunResult> {
  const program = opts.program ?? OPENCODE
  const bin = programBinary(program)
  if (!bin) throw new Error(`${program.name} is not installed (make -C bindings/ts e2e-deps)`)
  // A client of a running server: the server has the config (and the plugins).
  if (!opts.attach) writeConfig(ws, opts)
  const env = opencodeEnv(ws, opts, bin)
  // --print-logs: OpenCode's log also goes to stderr, where it is complete when the process ends
  // (the log file is written lazily and can miss the last seconds of a short run).
  const args = ["run", "--format", "json", "--title", "e2e", "--print-logs", "--log-level", process.env.OPENCODE_E2E_LOG_LEVEL ?? "INFO"]
  if (opts.pure) args.push("--pure")
  if (opts.continue) args.push("--continue")
  if (opts.attach) args.push("--attach", opts.attach)
  args.push(opts.prompt ?? "go")
  if (opts.extraArgs) args.push(...opts.extraArgs)
  const started = Date.now()
  const child = spawn(bin, args, { cwd: ws.proj, env, stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
  const timeoutMs = opts.timeoutMs ?? 120_000
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on("close", (c, s) => resolve([c, s])),
  )
  clearTimeout(timer)
  const log = opts.logName ?? "opencode"
  fs.writeFileSync(path.join(ws.root, `${log}.stdout.jsonl`), stdout)
  fs.writeFileSync(path.join(ws.root, `${log}.stderr.log`), stderr)
  const events = stdout
    .split("\n")
    .filter((l) => l.trim().startsWith("{"))
    .flatMap((l) => {
      try {
        return [JSON.parse(l)]
      } catch {
        return []
      }
    })
  return { code, signal, stdout, stderr, events, ms: Date.now() - started }
}

export interface Server {
  url: string
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and returns what it logged. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>
}

/** A loopback port free right now (the OS picks it). */
async function freePort(): Promise<number> {
  const srv = net.createServer()
  await new Promise<void>((resolve, reject) => srv.once("error", reject).listen(0, "127.0.0.1", resolve))
  const port = (srv.address() as net.AddressInfo).port
  await new Promise((resolve) => srv.close(resolve))
  return port
}

/**
 * `opencode serve` on a free loopback port, for several `opencode run --attach` prompts in one
 * OpenCode process (the plugins live in the server; a --continue without --attach would start
 * a new process each time). The port is chosen here: `--port 0` means "4096 if free", which every
 * e2e run on the machine asks for at once (a Kilo serve given --port 0 once said nothing for 30 s
 * and printed its address only when killed; given a free port it answers in a few seconds).
 */
export async function serveOpencode(ws: Workspace, opts: RunOptions): Promise<Server> {
  const program = opts.program ?? OPENCODE
  const bin = programBinary(program)
  if (!bin) throw new Error(`${program.name} is not installed (make -C bindings/ts e2e-deps)`)
  writeConfig(ws, opts)
  const args = ["serve", "--port", String(await freePort()), "--hostname", "127.0.0.1", "--print-logs", "--log-level", process.env.OPENCODE_E2E_LOG_LEVEL ?? "INFO"]
  const child = spawn(bin, args, { cwd: ws.proj, env: opencodeEnv(ws, opts, bin), stdio: ["ignore", "pipe", "pipe"] })
  let out = ""
  let stderr = ""
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
  const closed = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (c, s) => resolve([c, s])))
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${program.name} serve did not say where it listens in 60 s: ${out}${stderr.slice(-2000)}`)), 60_000)
    const look = () => {
      const m = /https?:\/\/127\.0\.0\.1:\d+/.exec(out + stderr)
      if (m) {
        clearTimeout(timer)
        resolve(m[0])
      }
    }
    child.stdout.setEncoding("utf8").on("data", (d: string) => ((out += d), look()))
    child.stderr.on("data", look)
    void closed.then(() => reject(new Error(`${program.name} serve exited: ${stderr.slice(-2000)}`)))
  })
  let url: string
  try {
    url = await listening
  } catch (err) {
    // Not left running behind a failed test (it would keep the test process alive).
    child.kill("SIGKILL")
    await closed
    fs.writeFileSync(path.join(ws.root, "opencode-serve.stderr.log"), stderr)
    throw err
  }
  return {
    url,
    async stop() {
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000)
      const [code, signal] = await closed
      clearTimeout(timer)
      fs.writeFileSync(path.join(ws.root, "opencode-serve.stderr.log"), stderr)
      return { code, signal, stderr }
    },
  }
}

function opencodeEnv(ws: Workspace, opts: RunOptions, bin: string): Record<string, string> {
  const program = opts.program ?? OPENCODE
  const h = ws.home
  const switches = Object.fromEntries(
    ["DISABLE_AUTOUPDATE", "DISABLE_MODELS_FETCH", "DISABLE_LSP_DOWNLOAD", "DISABLE_DEFAULT_PLUGINS", "DISABLE_CLAUDE_CODE", "DISABLE_EXTERNAL_SKILLS"].map(
      (k) => [program.envPrefix + k, "1"],
    ),
  )
  const env: Record<string, string> = {
    PATH: [ripgrepDir(), process.env.PATH ?? "/usr/bin:/bin"].filter(Boolean).join(path.delimiter),
    HOME: h,
    XDG_CONFIG_HOME: path.join(h, "config"),
    XDG_DATA_HOME: path.join(h, "data"),
    XDG_CACHE_HOME: path.join(h, "cache"),
    XDG_STATE_HOME: path.join(h, "state"),
    ...switches,
    ...(program.name === "kilo" ? kiloEnv(bin) : {}),
    // Keep the run deterministic: no terminal, no colours.
    NO_COLOR: "1",
    ...(process.env.CONCORD_OPENCODE_DEBUG ? { CONCORD_OPENCODE_DEBUG: process.env.CONCORD_OPENCODE_DEBUG } : {}),
    CI: "1",
    ...opts.env,
  }
  return env
}

/**
 * Kilo's own side jobs that would reach the network (PostHog telemetry, session ingest, codebase
 * indexing, presence), off so a run sends nothing and waits on none of them; the tree-sitter
 * grammars next to the build, as @kilocode/cli's bin/kilo sets them.
 */
function kiloEnv(bin: string): Record<string, string> {
  const env: Record<string, string> = {
    KILO_TELEMETRY_LEVEL: "off",
    KILO_DISABLE_SESSION_INGEST: "1",
    KILO_DISABLE_CODEBASE_INDEXING: "1",
    KILO_DISABLE_PRESENCE: "1",
  }
  const wasm = path.join(path.dirname(bin), "tree-sitter")
  if (fs.existsSync(path.join(wasm, "tree-sitter.wasm"))) env.KILO_TREE_SITTER_WASM_DIR = wasm
  return env
}

/** Whether OpenCode fetched anything from an npm registry during the runs (it must not). */
export function fetchedFromNpm(ws: Workspace): boolean {
  return fs.existsSync(path.join(ws.home, ".npm", "_cacache"))
}
