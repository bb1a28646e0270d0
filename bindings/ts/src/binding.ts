// The OpenCode side of Concord: one `concord serve` per OpenCode session, reads registered as
// source-linked blocks, the agent's writes reported, and before every model request the read
// results whose lines changed are rewritten in place (patched lines, or a re-read notice).
//
// OpenCode aborts the whole run when a hook throws, so every hook is guarded, every request has a
// timeout, and a missing or dead binary turns the plugin into a pass-through with one warning.
import fs from "node:fs"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { findConcord } from "./binary.js"
import {
  ConcordClient,
  PROTOCOL_VERSION,
  RpcError,
  TransportError,
  type BlockView,
  type InitializeParams,
  type SourceLink,
} from "./client.js"
import { observeRead, renderRead, splitLines, type ReadObservation } from "./readformat.js"

export const CLIENT_NAME = "concord-opencode"
export const CLIENT_VERSION = "0.1.0"

/** Options from opencode.json: "plugin": [["opencode-concord", { … }]]. All optional. */
export interface ConcordOptions {
  /** Path of the concord executable (else $CONCORD_BIN, next to the package, PATH). */
  bin?: string
  /** Extra arguments after `serve` (e.g. ["--log-file", "/tmp/concord.log"]). */
  args?: string[]
  /** initialize.watch; default "auto". */
  watch?: InitializeParams["watch"]
  /** initialize.policy (docs/protocol.md#policies). */
  policy?: unknown
  /** initialize.locator thresholds. */
  locator?: unknown
  /** Per-request timeout in ms (default 3000). */
  timeoutMs?: number
  /** Timeout for starting concord and its initialize (default 5000). */
  startTimeoutMs?: number
  /** Agent name reported to Concord (default "main"). */
  agent?: string
}

export interface BindingInit {
  directory: string
  worktree?: string
  /** OpenCode's SDK client; only app.log is used, when present. */
  client?: unknown
  options?: ConcordOptions
  env?: NodeJS.ProcessEnv
  /** Directory of the running plugin file (to find a concord binary next to it). */
  moduleDir?: string
  /** Where warnings go besides OpenCode's log; default process.stderr. */
  stderr?: (text: string) => void
}

const EDIT_TOOLS = new Set(["edit", "write", "multiedit", "apply_patch", "patch"])

interface ReadRecord {
  uri: string
  obs: ReadObservation
}

/** Concord's state for one OpenCode session. */
class SessionLink {
  client?: ConcordClient
  dead = false
  closing = false
  turn = 0
  /** Reads registered with Concord, by tool call id (the block anchor). */
  readonly reads = new Map<string, ReadRecord>()
  /** Reads left alone (not text, cut lines, outside the roots, …). */
  readonly skipped = new Set<string>()
  /** The latest replacement output per call id; re-applied on every model request. */
  readonly views = new Map<string, string>()
  ready: Promise<void> = Promise.resolve()
  private queue: Promise<unknown> = Promise.resolve()

  constructor(readonly id: string) {}

  /** Runs fn after every earlier operation of this session (observe before sync, always). */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn)
    this.queue = next.catch(() => {})
    return next
  }
}

export class ConcordBinding {
  private readonly sessions = new Map<string, SessionLink>()
  private readonly roots: string[]
  private readonly options: ConcordOptions
  private readonly env: NodeJS.ProcessEnv
  private readonly agent: string
  private readonly timeoutMs: number
  private readonly debugOn: boolean
  private warned = false
  private disposed = false

  constructor(private readonly init: BindingInit) {
    this.options = init.options ?? {}
    this.env = init.env ?? process.env
    this.agent = this.options.agent ?? "main"
    this.timeoutMs = this.options.timeoutMs ?? 3000
    this.debugOn = !!this.env.CONCORD_OPENCODE_DEBUG
    const roots = [init.directory, init.worktree].filter(
      (r): r is string => typeof r === "string" && path.isAbsolute(r) && path.resolve(r) !== path.parse(r).root,
    )
    this.roots = [...new Set(roots.map((r) => path.resolve(r)))]
    if (this.roots.length === 0) this.roots.push(path.resolve(init.directory || process.cwd()))
  }

  /** The hooks object handed to OpenCode; each one is guarded and never throws. */
  hooks() {
    return {
      "tool.execute.after": this.guard("tool.execute.after", (input: any, output: any) => this.afterTool(input, output)),
      "experimental.chat.messages.transform": this.guard("messages.transform", (_input: any, output: any) =>
        this.transform(output),
      ),
      event: this.guard("event", (input: any) => this.onEvent(input?.event)),
      dispose: this.guard("dispose", () => this.dispose()),
    }
  }

  /** tool.execute.after: register reads, report the agent's own writes, log commands as events. */
  async afterTool(input: any, output: any): Promise<void> {
    const sessionID = input?.sessionID
    const tool = input?.tool
    if (typeof sessionID !== "string" || typeof tool !== "string") return
    if (tool === "read") {
      const link = await this.session(sessionID)
      if (link.dead) return
      await link.run(() =>
        this.register(link, {
          callID: input.callID,
          input: input.args,
          output: output?.output,
          metadata: output?.metadata,
        }),
      )
    } else if (EDIT_TOOLS.has(tool)) {
      const files = changedFiles(tool, input.args, output?.metadata, this.init.directory)
      if (files.length === 0) return
      const link = await this.session(sessionID)
      if (link.dead) return
      await link.run(async () => {
        for (const file of files) {
          await this.rpc(link, () =>
            link.client!.sourceChanged({ uri: pathToFileURL(file).href, agent: this.agent }),
          )
        }
      })
    } else if (tool === "bash") {
      const link = await this.session(sessionID)
      if (link.dead) return
      const command = typeof input.args?.command === "string" ? input.args.command : ""
      await link.run(() =>
        this.rpc(link, () =>
          link.client!.observe({
            agent: this.agent,
            turn: link.turn,
            anchor: String(input.callID ?? ""),
            kind: "event",
            sources: [{ uri: `cmd://opencode/bash/${encodeURIComponent(String(input.callID ?? ""))}`, text: command, version: String(input.callID ?? "0") }],
          }),
        ),
      )
    }
  }

  /**
   * experimental.chat.messages.transform: sync with Concord, then rewrite the read results whose
   * block changed. Reads this plugin never saw (a resumed session) are registered from the history.
   */
  async transform(output: any): Promise<void> {
    const messages: any[] | undefined = output?.messages
    if (!Array.isArray(messages) || messages.length === 0) return
    const sessionID = messages.find((m) => typeof m?.info?.sessionID === "string")?.info.sessionID
    if (typeof sessionID !== "string") return
    const parts = readParts(messages)
    const link = await this.session(sessionID)
    if (!link.dead) {
      await link.run(async () => {
        link.turn++
        const compacted = parts.filter((p) => p.state.time?.compacted && link.reads.has(p.callID)).map((p) => p.callID)
        if (compacted.length > 0) {
          await this.rpc(link, () => link.client!.release({ agent: this.agent, anchors: compacted }))
          for (const id of compacted) {
            link.reads.delete(id)
            link.views.delete(id)
          }
        }
        for (const p of parts) {
          if (link.dead) return
          if (p.state.time?.compacted || link.reads.has(p.callID) || link.skipped.has(p.callID)) continue
          await this.register(link, {
            callID: p.callID,
            input: p.state.input,
            output: p.state.output,
            metadata: p.state.metadata,
          })
        }
        if (link.dead) return
        const res = await this.rpc(link, () => link.client!.sync({ agent: this.agent, turn: link.turn }))
        for (const block of res?.blocks ?? []) this.updateView(link, block)
      })
    }
    // Apply the latest views in one synchronous pass (also after Concord died: they were right
    // when computed, and rewrites are not stored by OpenCode, so they must be re-applied).
    for (const p of parts) {
      if (p.state.time?.compacted) continue
      const view = link.views.get(p.callID)
      if (view !== undefined) p.state.output = view
    }
  }

  async onEvent(event: any): Promise<void> {
    if (event?.type !== "session.deleted") return
    const id = event.properties?.info?.id ?? event.properties?.sessionID
    const link = typeof id === "string" ? this.sessions.get(id) : undefined
    if (!link) return
    this.sessions.delete(id)
    link.closing = true
    await link.client?.close(800)
  }

  /** Stops every concord child. Bounded: a stuck child is killed after a short grace period. */
  async dispose(): Promise<void> {
    this.disposed = true
    const links = [...this.sessions.values()]
    this.sessions.clear()
    await Promise.all(
      links.map((l) => {
        l.closing = true
        return l.client?.close(800)
      }),
    )
  }

  /** Process ids of the running concord children, by session (for diagnostics and tests). */
  childPids(): Map<string, number> {
    const out = new Map<string, number>()
    for (const [id, link] of this.sessions) {
      if (link.client?.alive && link.client.pid !== undefined) out.set(id, link.client.pid)
    }
    return out
  }

  /** The live session link, starting concord on first use. */
  private async session(id: string): Promise<SessionLink> {
    let link = this.sessions.get(id)
    if (!link) {
      link = new SessionLink(id)
      this.sessions.set(id, link)
      link.ready = this.start(link)
    }
    await link.ready
    return link
  }

  private async start(link: SessionLink): Promise<void> {
    if (this.disposed) {
      link.dead = true
      return
    }
    const found = findConcord(this.env, this.init.moduleDir, this.options.bin)
    if (!found.path) {
      link.dead = true
      this.warn(`concord binary not found (set CONCORD_BIN or put concord on PATH; looked at ${found.tried.length} places)`)
      return
    }
    const client = new ConcordClient({
      bin: found.path,
      args: ["serve", ...(this.options.args ?? [])],
      cwd: this.init.directory,
      env: this.env,
      timeoutMs: this.timeoutMs,
    })
    link.client = client
    void client.exited.then((info) => {
      if (link.closing || this.disposed) return
      link.dead = true
      const why = info.error
        ? `could not start ${found.path}: ${info.error.message}`
        : `${found.path} exited unexpectedly (${info.signal ? `signal ${info.signal}` : `status ${info.code}`})`
      // A crash explains itself on stderr; a kill by signal leaves nothing worth quoting.
      const tail = info.signal ? "" : client.stderr.trim().split("\n").slice(-3).join(" | ")
      this.warn(`concord ${why}${tail ? `; last log: ${tail}` : ""}`)
    })
    try {
      const res = await client.initialize(
        {
          protocolVersion: PROTOCOL_VERSION,
          clientInfo: { name: CLIENT_NAME, version: CLIENT_VERSION },
          roots: this.roots,
          watch: this.options.watch ?? "auto",
          ...(this.options.policy !== undefined ? { policy: this.options.policy } : {}),
          ...(this.options.locator !== undefined ? { locator: this.options.locator } : {}),
        },
        this.options.startTimeoutMs ?? Math.max(5000, this.timeoutMs),
      )
      this.debug(`session ${link.id}: concord ${res?.serverInfo?.version ?? "?"} pid ${client.pid} roots ${this.roots.join(",")}`)
    } catch (err) {
      this.fail(link, `concord did not start: ${(err as Error).message}`)
    }
  }

  /** Registers one read with Concord; reads it cannot track are remembered and left alone. */
  private async register(
    link: SessionLink,
    call: { callID: unknown; input: unknown; output: unknown; metadata: unknown },
  ): Promise<void> {
    const callID = typeof call.callID === "string" ? call.callID : undefined
    if (!callID || link.dead) return
    if (typeof call.output !== "string") return
    const obs = observeRead({ input: call.input, output: call.output, metadata: call.metadata, directory: this.init.directory })
    if (typeof obs === "string" || (!obs.whole && obs.lines.length === 0)) {
      link.skipped.add(callID)
      this.debug(`read ${callID} left alone: ${typeof obs === "string" ? obs : "empty window"}`)
      return
    }
    const uri = pathToFileURL(obs.path).href
    const text = obs.lines.join("\n")
    const source: SourceLink = obs.whole
      ? { uri, text }
      : { uri, range: { start: obs.start, end: obs.start + obs.lines.length - 1 }, text }
    try {
      const res = await link.client!.observe({ agent: this.agent, turn: link.turn, anchor: callID, kind: "snapshot", sources: [source] })
      link.reads.set(callID, { uri, obs })
      this.debug(`read ${callID} ${obs.path} ${source.range ? `${source.range.start}-${source.range.end}` : "whole"} -> ${res?.block} ${res?.status}`)
    } catch (err) {
      if (err instanceof RpcError) {
        // Outside the roots, unreadable, …: this read stays as OpenCode produced it.
        link.skipped.add(callID)
        this.debug(`read ${callID} not tracked: ${err.message}`)
        return
      }
      this.fail(link, `concord observe failed: ${(err as Error).message}`)
    }
  }

  /** Runs one request; a transport failure (timeout, dead child) ends Concord for the session. */
  private async rpc<T>(link: SessionLink, fn: () => Promise<T>): Promise<T | undefined> {
    if (link.dead || !link.client) return undefined
    try {
      return await fn()
    } catch (err) {
      if (err instanceof RpcError) {
        this.debug(`request refused: ${err.message}`)
        return undefined
      }
      this.fail(link, `concord request failed: ${(err as Error).message}`)
      return undefined
    }
  }

  private updateView(link: SessionLink, b: BlockView): void {
    if (!b || typeof b.anchor !== "string") return
    const rec = link.reads.get(b.anchor)
    if (!rec) return
    const sources = Array.isArray(b.sources) && b.sources.length > 0 ? b.sources : undefined
    switch (b.status) {
      case "released":
        link.reads.delete(b.anchor)
        link.views.delete(b.anchor)
        return
      case "valid":
        // Only a block that was rewritten before needs its (now current) lines shown again.
        if (sources && link.views.has(b.anchor)) link.views.set(b.anchor, this.render(rec, sources))
        else link.views.delete(b.anchor)
        return
      case "patched":
        if (sources) link.views.set(b.anchor, this.render(rec, sources))
        else link.views.set(b.anchor, b.notice ?? this.fallbackNotice(rec))
        return
      case "stale":
        link.views.set(
          b.anchor,
          sources ? `${this.render(rec, sources)}\n\n${b.notice ?? this.fallbackNotice(rec)}` : (b.notice ?? this.fallbackNotice(rec)),
        )
        return
      default:
        // invalid, superseded, and anything newer: the notice replaces the output.
        link.views.set(b.anchor, b.notice ?? (sources ? this.render(rec, sources) : this.fallbackNotice(rec)))
    }
  }

  private render(rec: ReadRecord, sources: SourceLink[]): string {
    const src = sources.find((s) => s.uri === rec.uri) ?? sources[0]!
    const text = (src.text ?? "").replace(/\r\n?/g, "\n")
    let start = 1
    let lines: string[]
    if (src.range) {
      start = src.range.start
      lines = src.range.end < src.range.start ? [] : text.split("\n")
    } else {
      lines = splitLines(text)
    }
    const total = fileLineCount(rec.obs.path) ?? start + lines.length - 1
    return renderRead({ shape: rec.obs.shape, path: rec.obs.path, start, lines, totalLines: total, suffix: rec.obs.suffix })
  }

  private fallbackNotice(rec: ReadRecord): string {
    const { path: p, start, lines } = rec.obs
    const span = rec.obs.whole ? "" : ` lines ${start}-${start + lines.length - 1}`
    return `[concord] ${p} changed since this read; the content shown earlier is no longer accurate. Re-read ${p}${span} before relying on it.`
  }

  private fail(link: SessionLink, why: string): void {
    if (link.dead) return
    link.dead = true
    // A request cut short by our own shutdown (dispose, session.deleted) is not worth a warning.
    const expected = link.closing || this.disposed
    link.closing = true
    link.client?.kill()
    if (expected) this.debug(`after shutdown: ${why}`)
    else this.warn(why)
  }

  /** One warning per plugin instance, to OpenCode's log (app.log) and to stderr. */
  private warn(message: string): void {
    if (this.warned) {
      this.debug(`(suppressed warning) ${message}`)
      return
    }
    this.warned = true
    const text = `[concord] WARNING: ${message}. Continuing without Concord: file reads are passed to the model unrepaired.`
    try {
      ;(this.init.stderr ?? ((t: string) => process.stderr.write(t)))(text + "\n")
    } catch {
      // nowhere to write
    }
    try {
      const log = (this.init.client as any)?.app?.log
      if (typeof log === "function") {
        const p = log.call((this.init.client as any).app, { body: { service: "concord", level: "warn", message: text } })
        if (p && typeof p.then === "function") {
          p.then(
            (res: any) => this.debug(`app.log: ${res?.error ? `refused: ${JSON.stringify(res.error)}` : "ok"}`),
            (err: unknown) => this.debug(`app.log failed: ${String(err)}`),
          )
        }
      }
    } catch {
      // OpenCode's log is best effort
    }
  }

  private debug(message: string): void {
    if (!this.debugOn) return
    try {
      ;(this.init.stderr ?? ((t: string) => process.stderr.write(t)))(`[concord] ${message}\n`)
    } catch {
      // ignore
    }
  }

  private guard<A extends unknown[]>(name: string, fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
    return async (...args: A) => {
      try {
        await fn(...args)
      } catch (err) {
        this.debug(`${name} failed (ignored): ${(err as Error)?.stack ?? err}`)
      }
    }
  }
}

interface ReadPart {
  callID: string
  state: { status: string; input?: unknown; output: string; metadata?: unknown; time?: { compacted?: number } }
}

/** Completed `read` tool parts in the history, in order. */
function readParts(messages: any[]): ReadPart[] {
  const out: ReadPart[] = []
  for (const m of messages) {
    if (!Array.isArray(m?.parts)) continue
    for (const p of m.parts) {
      if (p?.type === "tool" && p.tool === "read" && typeof p.callID === "string" && p.state?.status === "completed" && typeof p.state.output === "string") {
        out.push(p as ReadPart)
      }
    }
  }
  return out
}

/** Absolute paths an edit-type tool wrote. */
export function changedFiles(tool: string, args: any, metadata: any, directory: string): string[] {
  const files = new Set<string>()
  const add = (p: unknown) => {
    if (typeof p === "string" && p.length > 0) files.add(path.resolve(directory, p))
  }
  if (tool === "apply_patch" || tool === "patch") {
    if (Array.isArray(metadata?.files)) {
      for (const f of metadata.files) {
        add(f?.filePath)
        add(f?.movePath)
      }
    } else if (typeof args?.patchText === "string") {
      for (const m of args.patchText.matchAll(/^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/gm)) add(m[1].trim())
    }
  } else {
    add(args?.filePath)
    add(metadata?.filediff?.file)
    add(metadata?.filepath)
  }
  return [...files]
}

function fileLineCount(file: string): number | undefined {
  try {
    const st = fs.statSync(file)
    if (!st.isFile() || st.size > 64 << 20) return undefined
    return splitLines(fs.readFileSync(file, "utf8")).length
  } catch {
    return undefined
  }
}

/** Directory of the running module, or undefined where import.meta.url is not a file URL. */
export function moduleDirOf(url: string | undefined): string | undefined {
  try {
    return url ? path.dirname(fileURLToPath(url)) : undefined
  } catch {
    return undefined
  }
}
