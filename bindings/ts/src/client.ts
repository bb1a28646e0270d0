// JSON-RPC 2.0 client for `concord serve` over the child's stdio with LSP-style Content-Length
// framing (docs/protocol.md). Uses node:child_process so the same code runs under Bun (inside
// OpenCode) and Node (the unit tests). Every request has a timeout; a dead child rejects all
// pending requests at once and never throws later.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process"
import {
  BindingRequestTimeoutMs, CodeInternalError, CodeMethodNotFound, MethodCompacted, MethodExit, MethodInitialize, MethodObserve, MethodRecognize, MethodRelease, MethodShutdown,
  MethodSourceChanged, MethodStats, MethodSync, Version, type CompactedParams, type CompactedResult, type ErrorObject, type InitializeParams, type InitializeResult, type ObserveParams,
  type ObserveResult, type RecognizeParams, type RecognizeResult, type ReleaseParams, type ReleaseResult, type SourceChangedParams,
  type SourceChangedResult, type StatsResult, type SyncParams, type SyncResult,
} from "./wire.js"

// The wire types are generated from the Go protocol package (wire.ts, go generate ./protocol).
export const PROTOCOL_VERSION = Version

/** An error response from the server. */
export class RpcError extends Error {
  override name = "RpcError"
  constructor(readonly method: string, readonly code: number, message: string, readonly data?: unknown) {
    super(`${method}: ${message} (${code})`)
  }
}

/** The server did not answer in time, or is gone. */
export class TransportError extends Error {
  override name = "TransportError"
}

/** Encodes one message as `Content-Length: N\r\n\r\n<json>`. */
export function encodeFrame(msg: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(msg), "utf8")
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, "ascii"), body])
}

/** Incremental Content-Length decoder: push() returns the complete messages, an Error for a body that is not JSON (the length keeps the stream in sync). */
export class FrameDecoder {
  private buf: Buffer = Buffer.alloc(0)

  constructor(private readonly maxBytes = 64 << 20) {}

  push(chunk: Buffer): (unknown | Error)[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk])
    const out: (unknown | Error)[] = []
    for (;;) {
      const sep = this.buf.indexOf("\r\n\r\n")
      if (sep < 0) {
        if (this.buf.length > 8192) throw new TransportError("frame header too long")
        return out
      }
      const header = this.buf.subarray(0, sep).toString("ascii")
      const m = /(?:^|\r\n)content-length:\s*(\d+)\s*(?:\r\n|$)/i.exec(header)
      if (!m) throw new TransportError(`frame header without Content-Length: ${JSON.stringify(header.slice(0, 200))}`)
      const len = Number(m[1])
      if (len > this.maxBytes) throw new TransportError(`frame of ${len} bytes exceeds ${this.maxBytes}`)
      const start = sep + 4
      if (this.buf.length < start + len) return out
      const body = this.buf.subarray(start, start + len).toString("utf8")
      this.buf = this.buf.subarray(start + len)
      try {
        out.push(JSON.parse(body))
      } catch (err) {
        out.push(new Error(`malformed JSON frame: ${(err as Error).message}`))
      }
    }
  }
}

export interface ExitInfo {
  code: number | null
  signal: NodeJS.Signals | null
  error?: Error // the process could not be started (e.g. ENOENT)
}

export interface ClientOptions {
  bin: string
  args?: string[]
  cwd?: string
  env?: NodeJS.ProcessEnv
  timeoutMs?: number // default per request
  onNotification?: (method: string, params: unknown) => void
  stderrTailBytes?: number // the tail of the server's stderr (its logs) kept for diagnostics
}

interface Pending {
  method: string
  resolve: (v: any) => void
  reject: (e: Error) => void
  timer: NodeJS.Timeout
}

/** One `concord serve` child process and the JSON-RPC connection to it. */
export class ConcordClient {
  readonly exited: Promise<ExitInfo>
  private readonly child: ChildProcessWithoutNullStreams
  private readonly pending = new Map<number, Pending>()
  private readonly decoder = new FrameDecoder()
  private nextId = 1
  private exitInfo?: ExitInfo
  private stderrTail = ""
  private readonly timeoutMs: number

  constructor(private readonly opts: ClientOptions) {
    this.timeoutMs = opts.timeoutMs ?? BindingRequestTimeoutMs
    this.child = spawn(opts.bin, opts.args ?? ["serve"], { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ["pipe", "pipe", "pipe"], windowsHide: true })
    let settle!: (info: ExitInfo) => void
    this.exited = new Promise<ExitInfo>((resolve) => (settle = resolve))
    const finish = (info: ExitInfo) => {
      if (this.exitInfo) return
      this.exitInfo = info
      const why = info.error ? `concord could not start: ${info.error.message}` : `concord exited (${info.signal ? `signal ${info.signal}` : `status ${info.code}`})`
      this.failAll(new TransportError(why))
      settle(info)
    }
    this.child.on("error", (error) => finish({ code: null, signal: null, error }))
    this.child.on("exit", (code, signal) => finish({ code, signal }))
    // A write to a closed pipe surfaces here; the exit handler reports it.
    this.child.stdin.on("error", () => {})
    this.child.stdout.on("data", (chunk: Buffer) => this.onData(chunk))
    const tailBytes = opts.stderrTailBytes ?? 4096
    this.child.stderr.setEncoding("utf8")
    this.child.stderr.on("data", (d: string) => void (this.stderrTail = (this.stderrTail + d).slice(-tailBytes)))
  }

  get pid(): number | undefined { return this.child.pid }
  get alive(): boolean { return this.exitInfo === undefined }
  /** The last few KB the server wrote to stderr. */
  get stderr(): string { return this.stderrTail }

  request<T = unknown>(method: string, params?: unknown, timeoutMs = this.timeoutMs): Promise<T> {
    if (this.exitInfo) return Promise.reject(new TransportError(`${method}: concord is not running`))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new TransportError(`${method}: no answer within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(id, { method, resolve, reject, timer })
      this.write({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) })
    })
  }

  notify(method: string, params?: unknown): void {
    if (this.exitInfo) return
    this.write({ jsonrpc: "2.0", method, ...(params === undefined ? {} : { params }) })
  }

  initialize = (params: InitializeParams, timeoutMs?: number) => this.request<InitializeResult>(MethodInitialize, params, timeoutMs)
  observe = (params: ObserveParams) => this.request<ObserveResult>(MethodObserve, params)
  recognize = (params: RecognizeParams) => this.request<RecognizeResult>(MethodRecognize, params)
  sourceChanged = (params: SourceChangedParams) => this.request<SourceChangedResult>(MethodSourceChanged, params)
  sync = (params: SyncParams) => this.request<SyncResult>(MethodSync, params)
  release = (params: ReleaseParams) => this.request<ReleaseResult>(MethodRelease, params)
  compacted = (params: CompactedParams) => this.request<CompactedResult>(MethodCompacted, params)
  stats = () => this.request<StatsResult>(MethodStats)

  /** Ends the server politely (shutdown, exit, stdin closed), killed if not exited within graceMs. Never throws. */
  async close(graceMs = 1000): Promise<ExitInfo> {
    if (!this.exitInfo) {
      const deadline = Date.now() + graceMs
      await this.request(MethodShutdown, undefined, Math.max(50, graceMs / 2)).catch(() => {})
      this.notify(MethodExit)
      this.child.stdin.end()
      const left = Math.max(0, deadline - Date.now())
      const timer = setTimeout(() => this.kill(), left)
      await this.exited
      clearTimeout(timer)
    }
    return this.exited
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.exitInfo) return
    try {
      this.child.kill(signal)
    } catch {} // already gone
  }

  private write(msg: unknown): void {
    try {
      this.child.stdin.write(encodeFrame(msg))
    } catch {} // the pipe is closed: the exit handler fails the pending requests
  }

  private onData(chunk: Buffer): void {
    let msgs: (unknown | Error)[]
    try {
      msgs = this.decoder.push(chunk)
    } catch (err) {
      // The stream is out of sync; nothing after this can be trusted.
      this.failAll(new TransportError(`concord protocol stream broken: ${(err as Error).message}`))
      this.kill()
      return
    }
    for (const msg of msgs) if (!(msg instanceof Error)) this.dispatch(msg as Record<string, any>)
  }

  private dispatch(msg: Record<string, any>): void {
    if (msg === null || typeof msg !== "object") return
    const hasId = typeof msg.id === "number" || typeof msg.id === "string"
    if (typeof msg.method === "string") {
      // A request (readSource): no keyed sources here to answer from; the server then invalidates with a notice.
      if (hasId) this.write({ jsonrpc: "2.0", id: msg.id, error: { code: CodeMethodNotFound, message: `concord-opencode does not serve ${msg.method}` } })
      else
        try {
          this.opts.onNotification?.(msg.method, msg.params)
        } catch {} // a listener's problem is not the connection's
      return
    }
    if (!hasId) return
    const p = this.pending.get(msg.id as number)
    if (!p) return
    this.pending.delete(msg.id as number)
    clearTimeout(p.timer)
    const e = msg.error as Partial<ErrorObject> | undefined
    if (e) p.reject(new RpcError(p.method, e.code ?? CodeInternalError, e.message ?? "unknown error", e.data))
    else p.resolve(msg.result)
  }

  private failAll(err: Error): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer)
      p.reject(new TransportError(`${p.method}: ${err.message}`))
      this.pending.delete(id)
    }
  }
}
