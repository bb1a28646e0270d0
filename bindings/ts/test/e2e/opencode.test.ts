// The plugin's end-to-end scenarios (scenarios.ts) in the real `opencode`, the pinned opencode-ai.
import { OPENCODE } from "./harness.js"
import { pluginScenarios } from "./scenarios.js"

pluginScenarios(OPENCODE)
