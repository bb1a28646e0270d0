// opencode-concord: the OpenCode plugin entry point.
//
// OpenCode calls every export of a plugin module as a plugin, so this module exports the plugin
// function only (named and default: the loader de-duplicates identical exports).
import type { Plugin } from "@opencode-ai/plugin"
import { ConcordBinding, moduleDirOf, type ConcordOptions } from "./binding.js"

export type { ConcordOptions }

export const ConcordPlugin: Plugin = async (ctx, options) => {
  const binding = new ConcordBinding({
    directory: ctx.directory,
    worktree: ctx.worktree,
    client: ctx.client,
    options: (options ?? {}) as ConcordOptions,
    moduleDir: moduleDirOf(import.meta.url),
  })
  return binding.hooks()
}

export default ConcordPlugin
