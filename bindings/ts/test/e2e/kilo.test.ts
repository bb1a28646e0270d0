// The plugin's end-to-end scenarios (scenarios.ts) in Kilo CLI: the real `kilo` (the pinned
// @kilocode/cli, an OpenCode fork with the same plugin system) against the same fake model, with
// the plugin enabled the same ways (one opencode.json line; a drop-in file in the project's
// .kilo/plugins/, since Kilo does not read .opencode/).
import { KILO } from "./harness.js"
import { pluginScenarios } from "./scenarios.js"

pluginScenarios(KILO)
