// A scripted stand-in for an OpenAI-compatible chat endpoint, driven by the e2e tests.
// OpenCode's @ai-sdk/openai-compatible provider posts /v1/chat/completions with stream:true; each
// request that carries tools is handed to the next scripted step, which may change files out of
// band (this runs in the test process, not in OpenCode) and record what the model was shown.
import fs from "node:fs"
import http from "node:http"
import type { AddressInfo } from "node:net"

export interface ChatMessage {
  role: string
  content?: unknown
  tool_call_id?: string
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[]
}

export interface ChatRequest {
  /** 1-based index among the requests that carry tools (the agent loop's model calls). */
  index: number
  messages: ChatMessage[]
  body: Record<string, unknown>
}

export interface ToolCall {
  name: string
  args: Record<string, unknown>
}

/** usage: the token counts the response reports (default 100 prompt + 10 completion). */
export type Reply = ({ tools: ToolCall[] } | { text: string }) & { usage?: { prompt_tokens: number; completion_tokens: number } }

/** One model call: look at the request, optionally act, then answer. */
export type Step = (req: ChatRequest, model: FakeModel) => Reply | Promise<Reply>

/** The answer to a request without tools (a title, a compaction's summary), by what it asks. */
export type Untooled = (req: { messages: ChatMessage[]; body: Record<string, unknown> }) => string

export class FakeModel {
  readonly requests: ChatRequest[] = []
  /** The requests without tools (titles, compaction summaries), in order. */
  readonly untooledRequests: { messages: ChatMessage[]; body: Record<string, unknown> }[] = []
  readonly failures: string[] = []
  /** The ids handed out for tool calls, in order ("call_1", ...). */
  readonly callIds: string[] = []
  private server?: http.Server
  private nextCall: number

  private readonly untooled: Untooled

  /** firstCall: number of the first tool call id (a resumed session continues the numbering); untooled: the text for requests without tools (default "ok"). */
  constructor(
    private readonly steps: Step[],
    opts: { firstCall?: number; untooled?: Untooled } = {},
  ) {
    this.nextCall = opts.firstCall ?? 1
    this.untooled = opts.untooled ?? (() => "ok")
  }

  async start(): Promise<number> {
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        this.failures.push(`fake model crashed: ${String(err?.stack ?? err)}`)
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
    })
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve))
    return (this.server!.address() as AddressInfo).port
  }

  async close(): Promise<void> {
    if (!this.server) return
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server!.close(() => resolve()))
  }

  /** Records a failed expectation; the test asserts that none were recorded. */
  expect(cond: boolean, what: string): void {
    if (!cond) this.failures.push(`request ${this.requests.length}: ${what}`)
  }

  /** Writes what the model was sent (minus the system prompt) to a file, for post-mortems. */
  dump(file: string): void {
    const slim = this.requests.map((r) => ({
      index: r.index,
      messages: r.messages.filter((m) => m.role !== "system"),
    }))
    fs.writeFileSync(file, JSON.stringify({ failures: this.failures, requests: slim }, null, 1))
  }

  /** The content of the tool-result message answering callId, as text. */
  static toolResult(req: ChatRequest, callId: string): string | undefined {
    const msg = req.messages.find((m) => m.role === "tool" && m.tool_call_id === callId)
    if (!msg) return undefined
    return contentText(msg.content)
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: `fake model: no route ${req.method} ${req.url}` } }))
      return
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>
    const messages = (body.messages ?? []) as ChatMessage[]
    let reply: Reply
    if (!Array.isArray(body.tools) || body.tools.length === 0) {
      // Title or summary requests: not part of the script.
      this.untooledRequests.push({ messages, body })
      reply = { text: this.untooled({ messages, body }) }
    } else {
      const request: ChatRequest = { index: this.requests.length + 1, messages, body }
      this.requests.push(request)
      const step = this.steps[request.index - 1]
      reply = step ? await step(request, this) : { text: "done" }
    }
    this.stream(res, body.model as string, reply)
  }

  private stream(res: http.ServerResponse, model: string, reply: Reply): void {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" })
    const base = { id: `chatcmpl-${this.requests.length}`, object: "chat.completion.chunk", created: 1_700_000_000, model }
    const send = (choice: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, ...choice }], ...extra })}\n\n`)
    const u = reply.usage ?? { prompt_tokens: 100, completion_tokens: 10 }
    const usage = { ...u, total_tokens: u.prompt_tokens + u.completion_tokens }
    if ("text" in reply) {
      send({ delta: { role: "assistant", content: reply.text }, finish_reason: null })
      send({ delta: {}, finish_reason: "stop" }, { usage })
    } else {
      const calls = reply.tools.map((t, i) => {
        const id = `call_${this.nextCall++}`
        this.callIds.push(id)
        return { index: i, id, type: "function", function: { name: t.name, arguments: JSON.stringify(t.args) } }
      })
      send({ delta: { role: "assistant", tool_calls: calls }, finish_reason: null })
      send({ delta: {}, finish_reason: "tool_calls" }, { usage })
    }
    res.write("data: [DONE]\n\n")
    res.end()
  }
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content
  if (Array.isArray(content)) {
    return content.map((p) => (typeof p === "string" ? p : typeof p?.text === "string" ? p.text : "")).join("")
  }
  return JSON.stringify(content ?? "")
}
