// The OpenCode plugin's end-to-end scenarios (opencode.test.ts) in Kilo CLI: the real `kilo`
// (the pinned @kilocode/cli, an OpenCode fork with the same plugin system) against the same fake
// model, with the plugin enabled the same ways (one opencode.json line, a drop-in file in the
// project's .kilo/plugins/). The harness reads CONCORD_E2E_PROGRAM when it is first imported.
process.env.CONCORD_E2E_PROGRAM = "kilo"
await import("./opencode.test.js")
