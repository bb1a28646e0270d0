// The OpenCode side of Concord: one `concord serve` per OpenCode session, every tool result forwarded
// to it (`recognize`: the server decides what each showed or wrote), and before every model request
// the results whose lines changed replaced by the text the server composed for them (`show`).
// OpenCode aborts the run when a hook throws: every hook is guarded, every request has a timeout, and
// a missing or dead binary makes the plugin a pass-through with one warning.
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { findConcord } from "./binary.js"
import { ConcordClient, PROTOCOL_VERSION, RpcError, TransportError } from "./client.js"
import { BindingBackoffMs, BindingMaxRestarts, BindingRequestTimeoutMs, BindingStartTimeoutMs, CodeOutsideRoots, CodeUnsupportedProto, type BlockView, type CachePrice, type InitializeParams, type LocatorParams, type Placement, type PolicyConfig, type RecognizeResult } from "./wire.js"

export const CLIENT_NAME = "concord-opencode"
export const CLIENT_VERSION = "0.1.0"
/** initialize's error for a protocol version the server does not speak. */
export const UNSUPPORTED_VERSION = CodeUnsupportedProto

/** The warning for a binary that speaks another protocol version than this plugin. */
export function versionMismatch(binary: string, supported: unknown): string {
  return `${binary} speaks protocol ${JSON.stringify(supported ?? "?")}, ${CLIENT_NAME} ${CLIENT_VERSION} needs ${PROTOCOL_VERSION}: use the concord binary that came with this package (or unset CONCORD_BIN)`
}

/** Options from opencode.json: "plugin": [["opencode-concord", { … }]]. All optional. */
export interface ConcordOptions {
  /** Path of the concord executable (else $CONCORD_BIN, next to the package, PATH). */
  bin?: string
  /** Extra arguments after `serve` (e.g. ["--log-file", "/tmp/concord.log"]). */
  args?: string[]
  /** initialize.watch; default "auto". */
  watch?: InitializeParams["watch"]
  /** initialize.policy (docs/protocol.md#policies). */
  policy?: PolicyConfig
  /** initialize.locator thresholds. */
  locator?: LocatorParams
  /** Per-request timeout in ms (default BindingRequestTimeoutMs, 5000). */
  timeoutMs?: number
  /** Timeout for starting concord and its initialize (default BindingStartTimeoutMs, 10000). */
  startTimeoutMs?: number
  /** Agent name reported to Concord (default "main"). */
  agent?: string
  /** initialize.placement, where a repair of a read the model has seen goes: "auto" (default: in place while never sent, else tail), "tail" (kept, an erratum at the prompt's end) or "inplace". Else $CONCORD_PLACEMENT. */
  placement?: Placement
  /** initialize.cache.ttlSeconds: the provider's prompt-cache TTL (Concord's default 300). Else $CONCORD_CACHE_TTL_SECONDS. */
  cacheTtlSeconds?: number
  /** initialize.cache.price, off by default: "anthropic" (1.25, 0.1), "openai" (1, 0.5), "W,R" or {write, read} in input prices, passed through (the server checks it; "off": none); under auto a rewrite in place may then cost less than an erratum. Else $CONCORD_CACHE_PRICE. */
  cachePrice?: string | CachePrice
}

const PLACEMENTS: readonly Placement[] = ["inplace", "tail", "auto"]
/** Concord's own default since it met the cost target (docs/protocol.md, Placement). */
const DEFAULT_PLACEMENT: Placement = "auto"

/** An erratum note, re-attached byte-identical on every later call: after the output of tool result callID, or as text part partID. */
interface TailNote {
  callID?: string
  partID?: string
  text: string
}

export interface BindingInit {
  directory: string
  worktree?: string
  /** OpenCode's SDK client; app.log and tui.showToast are used, when present. */
  client?: unknown
  options?: ConcordOptions
  env?: NodeJS.ProcessEnv
  /** Directory of the running plugin file (to find a concord binary next to it). */
  moduleDir?: string
  /** Where debug lines go (CONCORD_OPENCODE_DEBUG=1); default process.stderr. Warnings never go here. */
  stderr?: (text: string) => void
}

/** One tool result (or @file attachment) as found in the history or in tool.execute.after. */
interface Candidate {
  anchor: string
  tool: string
  input: unknown
  output: unknown
  metadata?: unknown
  turn: number
}

/** A result registered with Concord (sent again after a restart); outside: refused as outside the roots, re-sent once they are extended. */
interface Tracked {
  call: Candidate
  outside?: string
}

/** Concord's state for one OpenCode session. */
class SessionLink {
  client?: ConcordClient
  dead = false // Concord gave up for good (binary missing, restarts exhausted, plugin disposed)
  down = false // the child is gone or must be replaced; the next hook restarts it
  closing = false
  restarts = 0
  turn = 0
  readonly extraRoots = new Set<string>() // added for reads outside the project (external_directory)
  readonly tracked = new Map<string, Tracked>()
  readonly skipped = new Set<string>() // results left alone (events, cut lines, …)
  readonly views = new Map<string, string>() // the latest `show` per anchor, re-applied on every request
  readonly summaries = new Set<string>() // compaction summaries the server keeps as derived blocks (their anchors)
  readonly summariesSeen = new Set<string>() // every summary met, told to the server or not (a resumed session's)
  note?: { anchor: string; text: string } // a one-time note on one result Concord could not track
  needsRootRestart = false // a read outside the roots: restart with them extended before the next sync
  fullSyncNext = false // after a restart the deltas start over
  readonly tailNotes = new Map<string, TailNote[]>() // by the id of the message they follow
  lastMessages: string[] = [] // the previous request's message ids, to see OpenCode rebuild the prompt
  rebuilt = false // the next sync says prefixRebuilt
  placement: Placement = "inplace" // as initialize confirmed it (absent: every view in place)
  ready: Promise<void> = Promise.resolve()
  private queue: Promise<unknown> = Promise.resolve()

  constructor(readonly id: string) {}

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn)
    this.queue = next.catch(() => {})
    return next
  }
}

/** Counters of what the plugin did, for the "is it working?" checks. */
export interface BindingStats {
  tracked: number
  repaired: number
  notices: number
  errata: number // repairs placed at the tail rather than in place
  summaries: number // compaction summaries registered as derived blocks
  corrections: number // summaries shown with a correction in place
  restarts: number
  batches: string[]
}

export class ConcordBinding {
  private readonly sessions = new Map<string, SessionLink>()
  private readonly roots: string[]
  private readonly options: ConcordOptions
  private readonly env: NodeJS.ProcessEnv
  private readonly agent: string
  private readonly timeoutMs: number
  private readonly debugOn: boolean
  private readonly placement: Placement
  private readonly cacheTtl?: number
  private cachePrice?: string | CachePrice
  private warned = false
  private disposed = false
  readonly stats: BindingStats = { tracked: 0, repaired: 0, notices: 0, errata: 0, summaries: 0, corrections: 0, restarts: 0, batches: [] }

  constructor(private readonly init: BindingInit) {
    this.options = init.options ?? {}
    this.env = init.env ?? process.env
    this.agent = this.options.agent ?? "main"
    this.timeoutMs = this.options.timeoutMs ?? BindingRequestTimeoutMs
    this.debugOn = !!this.env.CONCORD_OPENCODE_DEBUG
    const placement = this.options.placement ?? (this.env.CONCORD_PLACEMENT || undefined)
    this.placement = PLACEMENTS.includes(placement as Placement) ? (placement as Placement) : DEFAULT_PLACEMENT
    if (placement !== undefined && placement !== this.placement) {
      this.debug(`placement ${JSON.stringify(placement)} is not one of ${PLACEMENTS.join(", ")}; using ${DEFAULT_PLACEMENT}`)
    }
    const ttl = this.options.cacheTtlSeconds ?? (this.env.CONCORD_CACHE_TTL_SECONDS ? Number(this.env.CONCORD_CACHE_TTL_SECONDS) : undefined)
    if (ttl !== undefined && Number.isFinite(ttl) && ttl > 0) this.cacheTtl = ttl
    const price = this.options.cachePrice ?? (this.env.CONCORD_CACHE_PRICE || undefined)
    if (!(typeof price === "string" && /^\s*off\s*$/i.test(price))) this.cachePrice = price
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
      "experimental.chat.messages.transform": this.guard("messages.transform", (_input: any, output: any) => this.transform(output)),
      event: this.guard("event", (input: any) => this.onEvent(input?.event)),
      dispose: this.guard("dispose", () => this.dispose()),
    }
  }

  /** tool.execute.after: forward the result; the server registers what it showed and reports what it wrote. */
  async afterTool(input: any, output: any): Promise<void> {
    const sessionID = input?.sessionID
    const tool = input?.tool
    if (typeof sessionID !== "string" || typeof tool !== "string") return
    const link = await this.session(sessionID)
    if (link.dead) return
    await link.run(async () => {
      if (!(await this.ensureUp(link))) return
      const c = { anchor: String(input.callID ?? ""), tool, input: input.args, output: output?.output, metadata: output?.metadata, turn: link.turn }
      await this.register(link, c)
    })
  }

  /** messages.transform: sync, then rewrite the results whose block changed; results never seen (a resumed session) are registered from the history. */
  async transform(output: any): Promise<void> {
    const messages: any[] | undefined = output?.messages
    if (!Array.isArray(messages) || messages.length === 0) return
    const sessionID = messages.find((m) => typeof m?.info?.sessionID === "string")?.info.sessionID
    if (typeof sessionID !== "string") return
    const { parts, turn } = collect(messages)
    const link = await this.session(sessionID)
    let tailNote: string | undefined
    if (!link.dead) {
      await link.run(async () => {
        // The model request about to be made, counted in the history: it survives --continue and restarts.
        link.turn = Math.max(link.turn, turn)
        const ids = messages.map((m) => (typeof m?.info?.id === "string" ? m.info.id : ""))
        if (rebuiltSince(link.lastMessages, ids)) link.rebuilt = true
        link.lastMessages = ids
        if (!(await this.ensureUp(link))) return
        const compacted = parts.filter((p) => p.compacted && link.tracked.has(p.c.anchor)).map((p) => p.c.anchor)
        if (compacted.length > 0) {
          link.rebuilt = true // OpenCode pruned tool outputs: the prompt's prefix changed anyway
          await this.rpc(link, () => link.client!.release({ agent: this.agent, anchors: compacted }))
          for (const id of compacted) link.tracked.delete(id), link.views.delete(id)
        }
        await this.compactions(link, parts)
        for (const p of parts) {
          if (link.dead || link.down) return
          if (p.summary || p.compacted || link.tracked.has(p.c.anchor) || link.skipped.has(p.c.anchor)) continue
          await this.register(link, p.c)
        }
        if (link.needsRootRestart) {
          link.needsRootRestart = false
          link.down = link.closing = true
          await link.client?.close(800)
          link.closing = false
          if (!(await this.ensureUp(link, true))) return
        }
        if (link.dead || link.down) return
        const full = link.fullSyncNext
        link.fullSyncNext = false
        const tail = link.placement !== "inplace"
        const rebuilt = tail && link.rebuilt
        // Before this sync changes any view or note: the prompt as the last call left it, plus what came since.
        const promptChars = promptSize(messages, link)
        const res = await this.rpc(link, () =>
          link.client!.sync({ agent: this.agent, turn: link.turn, promptChars, ...(full ? { full: true } : {}), ...(rebuilt ? { prefixRebuilt: true } : {}) }),
        )
        if (!res) return
        if (rebuilt) link.rebuilt = false
        // A flush puts every deferred repair in place: the notes it made redundant go.
        if (res.flushed || (tail && res.full)) link.tailNotes.clear()
        let repaired = 0, notices = 0, corrections = 0
        const errata: string[] = []
        for (const block of res.blocks ?? []) {
          if (block?.placement === "tail") {
            // The result keeps its last in-place rendering; the erratum speaks for it ("": an earlier view covers it).
            if (typeof block.erratum === "string" && block.erratum) errata.push(block.erratum)
            continue
          }
          const r = this.updateView(link, block, full)
          if (r === "repaired") repaired++
          else if (r === "notice") notices++
          else if (r === "corrected") corrections++
        }
        if (errata.length > 0) tailNote = errata.join("\n")
        this.reportBatch(repaired, notices, errata.length, corrections)
      })
    }
    // The latest views in one synchronous pass, also after Concord died: OpenCode does not store rewrites.
    for (const p of parts) {
      if (p.compacted) continue
      const view = link.views.get(p.c.anchor)
      const note = link.note?.anchor === p.c.anchor ? link.note.text : undefined
      if (view === undefined && note === undefined) continue
      const base = view ?? (p.target.obj[p.target.field] as string)
      p.target.obj[p.target.field] = note && !base.endsWith(note) ? `${base}\n\n${note}` : base
    }
    // Notes: after the in-place views (the newest message may just have been rewritten).
    placeTailNotes(link.tailNotes, messages, sessionID, tailNote)
  }

  async onEvent(event: any): Promise<void> {
    if (event?.type === "session.compacted") {
      const link = this.sessions.get(event.properties?.sessionID)
      if (link) link.rebuilt = true
      return
    }
    if (event?.type !== "session.deleted") return
    const id = event.properties?.info?.id ?? event.properties?.sessionID
    const link = typeof id === "string" ? this.sessions.get(id) : undefined
    if (!link) return
    this.sessions.delete(id)
    link.closing = link.dead = true
    await link.client?.close(800)
  }

  /** Stops every concord child. Bounded: a stuck child is killed after a short grace period. */
  async dispose(): Promise<void> {
    this.disposed = true
    const links = [...this.sessions.values()]
    this.sessions.clear()
    await Promise.all(links.map((l) => ((l.closing = l.dead = true), l.client?.close(800))))
  }

  /** Process ids of the running concord children, by session (for diagnostics and tests). */
  childPids(): Map<string, number> {
    const out = new Map<string, number>()
    for (const [id, link] of this.sessions) if (link.client?.alive && link.client.pid !== undefined) out.set(id, link.client.pid)
    return out
  }

  /** The session link, starting concord on first use. */
  private async session(id: string): Promise<SessionLink> {
    let link = this.sessions.get(id)
    if (!link) {
      const l = (link = new SessionLink(id))
      this.sessions.set(id, l)
      l.ready = this.start(l).then((ok) => void (!ok && !l.dead && (l.down = true)))
    }
    await link.ready
    return link
  }

  /** A live concord for the link: a dead child is restarted (docs/protocol.md, "Binding lifecycle": restart k after BindingBackoffMs * 4^(k-1) ms, at most BindingMaxRestarts) and what is still in the context registered again, then a full sync; false while there is none. `force`: a restart of our own (extended roots), not counted. */
  private async ensureUp(link: SessionLink, force = false): Promise<boolean> {
    if (link.dead) return false
    if (!link.down && link.client?.alive) return true
    if (!force && link.restarts >= BindingMaxRestarts) {
      link.dead = true
      this.warn(`concord stopped and could not be restarted after ${BindingMaxRestarts} tries`)
      return false
    }
    if (!force) await new Promise((r) => setTimeout(r, BindingBackoffMs * 4 ** link.restarts++))
    if (link.dead) return false // disposed while waiting
    this.stats.restarts++
    if (!(await this.start(link))) return false
    link.down = false
    // A restarted server keeps no summary: the results they replaced are gone, so their sources cannot be told again.
    for (const a of link.summaries) link.views.delete(a)
    link.summaries.clear()
    for (const t of [...link.tracked.values()]) if (link.client?.alive) await this.recognize(link, t.call, t)
    link.fullSyncNext = true
    this.debug(`session ${link.id}: concord restarted (pid ${link.client?.pid}), ${link.tracked.size} results registered again`)
    return !link.dead && !!link.client?.alive
  }

  /** Starts a child and initializes it; false when that failed (the link stays down or dead). */
  private async start(link: SessionLink): Promise<boolean> {
    if (this.disposed) {
      link.dead = true
      return false
    }
    const found = findConcord(this.env, this.init.moduleDir, this.options.bin)
    if (!found.path) {
      link.dead = true
      this.warn(`concord binary not found; looked at: ${found.tried.join(", ") || "(nothing: PATH is empty)"}. Set CONCORD_BIN or the plugin option "bin", or put concord on PATH`)
      return false
    }
    const client = new ConcordClient({ bin: found.path, args: ["serve", ...(this.options.args ?? [])], cwd: this.init.directory, env: this.env, timeoutMs: this.timeoutMs })
    link.client = client
    void client.exited.then((info) => {
      if (link.client !== client || link.closing || this.disposed || link.dead) return
      if (info.error) {
        link.dead = true
        this.warn(`could not start ${found.path}: ${info.error.message}`)
        return
      }
      // Restarted at the next hook; said once only if that fails for good.
      link.down = true
      const tail = info.signal ? "" : client.stderr.trim().split("\n").slice(-3).join(" | ")
      this.debug(`concord ${found.path} exited unexpectedly (${info.signal ? `signal ${info.signal}` : `status ${info.code}`})${tail ? `; last log: ${tail}` : ""}`)
    })
    const roots = [...this.roots, ...[...link.extraRoots].filter((r) => !this.roots.some((x) => inside(r, x)))]
    const { policy, locator } = this.options
    const cache = { ...(this.cacheTtl !== undefined ? { ttlSeconds: this.cacheTtl } : {}), ...(this.cachePrice !== undefined ? { price: this.cachePrice } : {}) }
    try {
      const params: InitializeParams = { protocolVersion: PROTOCOL_VERSION, clientInfo: { name: CLIENT_NAME, version: CLIENT_VERSION }, roots, watch: this.options.watch ?? "auto", placement: this.placement }
      if (policy !== undefined) params.policy = policy
      if (locator !== undefined) params.locator = locator
      if (Object.keys(cache).length > 0) params.cache = cache
      const res = await client.initialize(params, this.options.startTimeoutMs ?? BindingStartTimeoutMs)
      if (res?.protocolVersion !== PROTOCOL_VERSION) {
        throw new RpcError("initialize", UNSUPPORTED_VERSION, "answered another protocol version", { supported: [res?.protocolVersion] })
      }
      // A server without cache-aware repair does not echo placement: render everything in place.
      const echoed = res?.capabilities?.placement
      link.placement = PLACEMENTS.includes(echoed as Placement) ? (echoed as Placement) : "inplace"
      this.debug(`session ${link.id}: concord ${res?.serverInfo?.version ?? "?"} pid ${client.pid} roots ${roots.join(",")} placement ${link.placement}`)
      return true
    } catch (err) {
      if (link.client === client) {
        link.closing = true
        client.kill()
        link.closing = false
      }
      if (err instanceof RpcError && this.cachePrice !== undefined && String((err.data as { field?: unknown } | undefined)?.field).startsWith("cache.price")) {
        // A price the server refuses must not cost the session: say why, start again without it.
        this.debug(`cachePrice ${JSON.stringify(this.cachePrice)} refused (${err.message}); priced rewrites stay off`)
        this.cachePrice = undefined
        return this.start(link)
      }
      if (err instanceof RpcError && err.code === UNSUPPORTED_VERSION) {
        // Another binary than the one this package carries: a restart would not change it.
        link.dead = true
        this.warn(versionMismatch(found.path!, (err.data as { supported?: unknown } | undefined)?.supported))
        return false
      }
      if (link.restarts === 0 && !link.tracked.size) {
        link.dead = true
        this.warn(`concord did not start: ${(err as Error).message}`)
      } else {
        link.down = true
      }
      return false
    }
  }

  /**
   * OpenCode compacted the session: a summary message (`info.summary`) now stands where the history
   * was, and the tracked results that left the history with it are the ones it summarized (a kept
   * tail stays). The server keeps the summary as a derived block, corrected when a source it restates
   * changes, and releases those results itself. A summary met with nothing tracked gone (a resumed
   * session, a summary of prompts only) is left alone.
   */
  private async compactions(link: SessionLink, parts: HistoryPart[]): Promise<void> {
    const fresh = parts.filter((p) => p.summary && !link.summariesSeen.has(p.c.anchor))
    if (fresh.length === 0) return
    for (const p of fresh) link.summariesSeen.add(p.c.anchor)
    const present = new Set(parts.map((p) => p.c.anchor))
    const gone = [...link.tracked.keys(), ...link.summaries].filter((a) => !present.has(a))
    const newest = fresh[fresh.length - 1]!
    if (gone.length === 0) return
    const res = await this.rpc(link, () => link.client!.compacted({ agent: this.agent, anchor: newest.c.anchor, text: newest.c.output as string, replaced: gone, turn: link.turn }))
    if (!res) return // a server without compacted: the results stay tracked, as before it
    for (const a of gone) link.tracked.delete(a), link.summaries.delete(a), link.views.delete(a)
    if (typeof res.derived === "string" && res.derived !== "") {
      link.summaries.add(newest.c.anchor)
      this.stats.summaries++
    }
    this.debug(`compacted ${newest.c.anchor}: ${gone.length} results summarized -> ${res.derived || "-"}`)
  }

  private async register(link: SessionLink, c: Candidate): Promise<void> {
    if (c.anchor && !link.dead && !link.down && typeof c.output === "string") await this.recognize(link, c)
  }

  /** recognize: a block id (any status) makes the result tracked; anything else (an event, a write, a query) is left alone. `again`: a result registered before a restart. */
  private async recognize(link: SessionLink, c: Candidate, again?: Tracked): Promise<void> {
    const tool = c.tool === "attachment" ? "read" : c.tool
    const call = { runtime: "opencode", tool, arguments: c.input ?? {}, output: c.output as string, cwd: this.init.directory, metadata: c.metadata }
    let res: RecognizeResult
    try {
      res = await link.client!.recognize({ agent: this.agent, turn: c.turn, anchor: c.anchor, call })
    } catch (err) {
      if (err instanceof RpcError) this.refused(link, c, err, again)
      else this.fail(link, `concord recognize failed: ${(err as Error).message}`)
      return
    }
    if (typeof res?.block === "string" && res.block !== "") {
      if (!link.tracked.has(c.anchor)) this.stats.tracked++
      link.tracked.set(c.anchor, { call: c })
    } else {
      link.tracked.delete(c.anchor)
      link.skipped.add(c.anchor)
    }
    const n = res?.sources?.length ?? 0
    const first = n > 0 ? ` ${res.sources![0]!.uri}${n > 1 ? ` (+${n - 1})` : ""}` : ""
    this.debug(`${tool} ${c.anchor}: ${res?.kind} ${res?.format ?? ""}${first} -> ${res?.block || "-"} ${res?.status ?? ""}${res?.reason ? ` (${res.reason})` : ""}`)
  }

  /** recognize refused the call: outside the roots (extend them and restart), or not tracked. */
  private refused(link: SessionLink, c: Candidate, err: RpcError, again?: Tracked): void {
    const uri = (err.data as { uri?: unknown } | undefined)?.uri
    if (err.code === CodeOutsideRoots && typeof uri === "string" && !again?.outside) {
      // OpenCode ran the tool, so the user's permissions (external_directory) allowed it: extend the roots, register again after a restart.
      const dir = outsideDir(uri)
      if (dir && !link.extraRoots.has(dir)) {
        link.extraRoots.add(dir)
        link.tracked.set(c.anchor, { call: c, outside: dir })
        link.needsRootRestart = true
        this.debug(`${c.anchor}: ${dir} is outside the roots; concord restarts with it added`)
        return
      }
    }
    link.tracked.delete(c.anchor)
    link.skipped.add(c.anchor)
    if (err.code === CodeOutsideRoots && !link.note) {
      const shown = typeof uri === "string" ? decodeURIComponent(uri.replace(/^file:\/\//, "").split("?")[0]!) : "this file"
      link.note = { anchor: c.anchor, text: `[concord] note: ${shown} is outside the folders Concord keeps track of, so this result is not kept up to date; re-read it before relying on it.` }
    }
    this.debug(`${c.anchor} not tracked: ${err.message}`)
  }

  /** Runs one request; a transport failure (timeout, dead child) takes the link down until a restart. */
  private async rpc<T>(link: SessionLink, fn: () => Promise<T>): Promise<T | undefined> {
    if (link.dead || link.down || !link.client) return undefined
    try {
      return await fn()
    } catch (err) {
      if (err instanceof RpcError) this.debug(`request refused: ${err.message}`)
      else this.fail(link, `concord request failed: ${(err as Error).message}`)
      return undefined
    }
  }

  /** Keeps the text the server composed for the block (`show`; absent: the original output stands); says whether this sync repaired it, put a notice in, or corrected a summary. */
  private updateView(link: SessionLink, b: BlockView, full: boolean): "repaired" | "notice" | "corrected" | undefined {
    if (!b || typeof b.anchor !== "string") return undefined
    const summary = link.summaries.has(b.anchor)
    if (!summary && !link.tracked.has(b.anchor)) return undefined
    if (b.status === "released") link.tracked.delete(b.anchor), link.summaries.delete(b.anchor)
    const before = link.views.get(b.anchor)
    if (typeof b.show === "string") link.views.set(b.anchor, b.show)
    else link.views.delete(b.anchor)
    if (b.status === "valid" || b.status === "released" || (full && link.views.get(b.anchor) === before)) return undefined
    // A summary's show is its text byte-identical, then the correction.
    if (summary) return typeof b.show === "string" ? "corrected" : undefined
    // A re-rendered read (patched with a view) is a repair; anything else shown is a notice.
    return b.status === "patched" && typeof b.view === "string" ? "repaired" : "notice"
  }

  /** One line per sync that changed something: OpenCode's log and a toast in the TUI. */
  private reportBatch(repaired: number, notices: number, errata = 0, corrections = 0): void {
    if (repaired === 0 && notices === 0 && errata === 0 && corrections === 0) return
    this.stats.repaired += repaired
    this.stats.notices += notices
    this.stats.errata += errata
    this.stats.corrections += corrections
    const parts: string[] = []
    if (repaired > 0) parts.push(`${repaired} ${repaired === 1 ? "read" : "reads"} repaired`)
    if (notices > 0) parts.push(`${notices} re-read ${notices === 1 ? "notice" : "notices"}`)
    if (corrections > 0) parts.push(`${corrections} ${corrections === 1 ? "summary" : "summaries"} corrected`)
    if (errata > 0) parts.push(`${errata} ${errata === 1 ? "erratum" : "errata"} at the tail`)
    const message = `concord: ${parts.join(", ")}`
    this.stats.batches.push(message)
    this.tell("info", message)
  }

  private fail(link: SessionLink, why: string): void {
    if (link.dead || link.down) return
    // A request cut short by our own shutdown (dispose, session.deleted) is not worth a note.
    if (link.closing || this.disposed) return this.debug(`after shutdown: ${why}`)
    link.down = link.closing = true
    link.client?.kill()
    link.closing = false
    this.debug(`${why}; concord restarts at the next hook`)
  }

  /** One warning per plugin instance, through OpenCode's client (log and toast), never raw over the TUI. */
  private warn(message: string): void {
    if (this.warned) return this.debug(`(suppressed warning) ${message}`)
    this.warned = true
    this.tell("warn", `[concord] WARNING: ${message}. Continuing without Concord: file reads are passed to the model unrepaired.`)
  }

  /** app.log (OpenCode's log file; stderr with --print-logs) and tui.showToast; both best effort. */
  private tell(level: "info" | "warn", message: string): void {
    const client = this.init.client as any
    this.debug(message)
    const call = (obj: any, fn: string, arg: unknown, what: string) => {
      try {
        const f = obj?.[fn]
        if (typeof f !== "function") return
        const p = f.call(obj, arg)
        p?.then?.((res: any) => res?.error && this.debug(`${what} refused: ${JSON.stringify(res.error)}`), (err: unknown) => this.debug(`${what} failed: ${String(err)}`))
      } catch (err) {
        this.debug(`${what} failed: ${String(err)}`)
      }
    }
    call(client?.app, "log", { body: { service: "concord", level, message } }, "app.log")
    call(client?.tui, "showToast", { body: { title: "Concord", message, variant: level === "warn" ? "warning" : "info", duration: 4000 } }, "tui.showToast")
  }

  /** Debug lines (CONCORD_OPENCODE_DEBUG=1) go to stderr: asked for explicitly, for a terminal that is not the TUI. */
  private debug(message: string): void {
    if (!this.debugOn) return
    // What tell() passes on already names concord ("concord: 1 read repaired", "[concord] WARNING"):
    // one prefix per line.
    const line = message.replace(/^(\[concord\] |concord: )/, "")
    try {
      ;(this.init.stderr ?? ((t: string) => process.stderr.write(t)))(`[concord] ${line}\n`)
    } catch {} // never fail a hook over a debug line
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

interface HistoryPart {
  c: Candidate
  compacted: boolean
  /** A compaction's summary (anchor: the summary message's id; output: its text), not a tool result. */
  summary?: boolean
  /** Where the text the model sees lives: a tool part's state.output, or a text part's text. */
  target: { obj: any; field: "output" | "text" }
}

const ATTACHED = /^Called the Read tool with the following input: (\{.*\})$/s

/** The tool results (and @file attachments) in the history, in order, each with its turn (model request): the assistant message's ordinal, the next request for attachments; and the turn about to be made. */
function collect(messages: any[]): { parts: HistoryPart[]; turn: number } {
  const out: HistoryPart[] = []
  let assistants = 0
  for (const m of messages) {
    if (!Array.isArray(m?.parts)) continue
    const role = m?.info?.role
    if (role === "assistant") assistants++
    const turn = role === "assistant" ? assistants : assistants + 1
    let attachedInput: unknown
    const summary = summaryPart(m)
    if (summary) {
      out.push({ c: { anchor: m.info.id, tool: "summary", input: undefined, output: summary.text, turn }, compacted: false, summary: true, target: { obj: summary, field: "text" } })
    }
    for (const p of m.parts) {
      if (p?.type === "tool" && typeof p.tool === "string" && typeof p.callID === "string" && p.state?.status === "completed" && typeof p.state.output === "string") {
        const c = { anchor: p.callID, tool: p.tool, input: p.state.input, output: p.state.output, metadata: p.state.metadata, turn }
        out.push({ c, compacted: !!p.state.time?.compacted, target: { obj: p.state, field: "output" } })
      } else if (p?.type === "text" && p.synthetic === true && typeof p.text === "string") {
        // An @file / -f attachment: "Called the Read tool with … {input}", then a text part with the read's output.
        const m2 = ATTACHED.exec(p.text)
        if (m2) {
          try {
            attachedInput = JSON.parse(m2[1]!)
          } catch {
            attachedInput = undefined
          }
          continue
        }
        if (attachedInput !== undefined && typeof p.id === "string") {
          out.push({ c: { anchor: `attach:${p.id}`, tool: "attachment", input: attachedInput, output: p.text, turn }, compacted: false, target: { obj: p, field: "text" } })
        }
        attachedInput = undefined
      }
    }
  }
  return { parts: out, turn: assistants + 1 }
}

/**
 * The text part holding a compaction's summary: OpenCode's summary message is an assistant message
 * with `info.summary: true` (mode and agent "compaction") whose text part is the summary the model
 * wrote (test/fixtures/opencode-1.18.33-compaction.json); the last one, should there be several.
 */
function summaryPart(m: any): any | undefined {
  if (m?.info?.role !== "assistant" || m.info.summary !== true || typeof m.info.id !== "string" || !Array.isArray(m.parts)) return undefined
  for (let i = m.parts.length - 1; i >= 0; i--) {
    const p = m.parts[i]
    if (p?.type === "text" && typeof p.text === "string" && p.synthetic !== true) return p
  }
  return undefined
}

/** What OpenCode sends for a tool result it pruned (state.time.compacted). */
const COMPACTED_OUTPUT = "[Old tool result content cleared]"

/** sync's promptChars: this call's messages as the model gets them before this sync (earlier views and notes applied; OpenCode's copy has none): text parts, tool calls and results. Compared between syncs, it must count the same way every time, not match tokens. */
function promptSize(messages: any[], link: SessionLink): number {
  const viewed = (text: string, anchor: string): string => {
    const base = link.views.get(anchor) ?? text
    const note = link.note?.anchor === anchor ? link.note.text : undefined
    return note && !base.endsWith(note) ? `${base}\n\n${note}` : base
  }
  let n = 0
  for (const m of messages) {
    if (!Array.isArray(m?.parts)) continue
    const notes = typeof m?.info?.id === "string" ? link.tailNotes.get(m.info.id) : undefined
    const summary = summaryPart(m)
    for (const p of m.parts) {
      if (p?.type === "text" && typeof p.text === "string") {
        n += (p === summary ? viewed(p.text, m.info.id) : p.synthetic === true && typeof p.id === "string" ? viewed(p.text, `attach:${p.id}`) : p.text).length
        continue
      }
      if (p?.type !== "tool") continue
      const st = p.state
      if (st?.status !== "completed" && st?.status !== "error") continue
      n += (typeof p.tool === "string" ? p.tool.length : 0) + jsonSize(st.input)
      if (st.status === "error") {
        n += typeof st.error === "string" ? st.error.length : 0
      } else if (st.time?.compacted) {
        n += COMPACTED_OUTPUT.length
      } else if (typeof st.output === "string") {
        let out = typeof p.callID === "string" ? viewed(st.output, p.callID) : st.output
        for (const note of notes ?? []) {
          if (note.callID === undefined || note.callID !== p.callID) continue
          const suffix = `\n\n${note.text}`
          if (!out.endsWith(suffix)) out += suffix
        }
        n += out.length
      }
    }
    for (const note of notes ?? []) {
      if (note.partID !== undefined && !m.parts.some((p: any) => p?.id === note.partID)) n += note.text.length
    }
  }
  return n
}

function jsonSize(v: unknown): number {
  if (v === undefined) return 0
  try {
    return JSON.stringify(v)?.length ?? 0
  } catch {
    return 0
  }
}

/** The directory to add to the roots for a result Concord refused as outside them. */
function outsideDir(uri: string): string | undefined {
  if (!uri.startsWith("file://")) return undefined
  let p: string
  try {
    p = fileURLToPath(uri.split("?")[0]!)
  } catch {
    return undefined
  }
  // A listing source names its directory (a query follows); a file, the directory holding it.
  const dir = uri.includes("?") ? p : path.dirname(p)
  return dir === path.parse(dir).root ? undefined : dir
}

function inside(p: string, root: string): boolean {
  const rel = path.relative(root, p)
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel))
}

/** Attaches a new tail note to the newest message, and re-attaches every earlier one where it was, same bytes. */
function placeTailNotes(notes: Map<string, TailNote[]>, messages: any[], sessionID: string, tailNote: string | undefined): void {
  if (tailNote !== undefined) {
    const newest = messages[messages.length - 1]
    const id = newest?.info?.id
    if (typeof id === "string" && Array.isArray(newest.parts)) {
      const list = notes.get(id) ?? []
      // Into the message's last tool result, the last thing in the prompt (OpenCode sends an assistant's text
      // before its tool results: a text part would read as the model's own words); else a text part.
      const tool = lastToolResult(newest)
      list.push(tool ? { callID: tool.callID, text: tailNote } : { partID: `prt_concord_${id}_${list.length + 1}`, text: tailNote })
      notes.set(id, list)
    }
  }
  for (const m of messages) {
    const list = typeof m?.info?.id === "string" ? notes.get(m.info.id) : undefined
    if (!list || !Array.isArray(m.parts)) continue
    for (const n of list) {
      if (n.callID !== undefined) {
        const p = m.parts.find((x: any) => x?.type === "tool" && x.callID === n.callID)
        const out = p?.state?.output
        if (typeof out !== "string") continue
        const suffix = `\n\n${n.text}`
        if (!out.endsWith(suffix)) p.state.output = out + suffix
        continue
      }
      if (m.parts.some((p: any) => p?.id === n.partID)) continue
      m.parts.push({ id: n.partID, sessionID, messageID: m.info.id, type: "text", text: n.text, synthetic: true })
    }
  }
}

/** The last completed tool result of a message (its callID), where a tail note can go. */
function lastToolResult(m: any): { callID: string } | undefined {
  for (let i = m.parts.length - 1; i >= 0; i--) {
    const p = m.parts[i]
    if (p?.type !== "tool" || typeof p.callID !== "string") continue
    if (p.state?.status === "completed" && typeof p.state.output === "string" && !p.state.time?.compacted) return { callID: p.callID }
  }
  return undefined
}

/** Whether OpenCode rebuilt the prompt since the previous request: a message sent then is gone (compaction, revert) or moved. */
export function rebuiltSince(previous: string[], current: string[]): boolean {
  let j = 0
  for (const id of previous) {
    if (!id) continue
    while (j < current.length && current[j] !== id) j++
    if (j === current.length) return true
    j++
  }
  return false
}

/** Directory of the running module, or undefined where import.meta.url is not a file URL. */
export function moduleDirOf(url: string | undefined): string | undefined {
  try {
    return url ? path.dirname(fileURLToPath(url)) : undefined
  } catch {
    return undefined
  }
}
