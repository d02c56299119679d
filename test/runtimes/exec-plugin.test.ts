/** A plugin run as an executable (the test plugin) through the plugin conformance suite. */
import { join } from "node:path";
import { ExecPlugin } from "../../src/runtimes/index.js";
import { pluginConformance } from "./plugin-conformance.js";

const script = join(import.meta.dirname, "..", "support", "runtime-plugin-exec.ts");

pluginConformance("executable (test plugin)", () => ({
  plugin: new ExecPlugin({ command: [process.execPath, "--import", "tsx", script], timeoutSeconds: 30 }),
  config: { storageClassName: "standard" },
  invalid: { config: { mode: "sideways" }, field: "mode" },
  incompatible: { change: { storageClassName: "fast" }, field: "storageClassName" },
}));
