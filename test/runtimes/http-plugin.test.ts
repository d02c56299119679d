/** A plugin served over HTTP (the test plugin) through the plugin conformance suite. */
import { HttpPlugin } from "../../src/runtimes/index.js";
import { startTestPlugin, type TestPlugin } from "../support/runtime-plugin.js";
import { pluginConformance } from "./plugin-conformance.js";

let server: TestPlugin;
let plugin: HttpPlugin;

pluginConformance("HTTP (test plugin)", () => ({
  get plugin() {
    return plugin;
  },
  config: { storageClassName: "standard" },
  invalid: { config: { mode: "sideways" }, field: "mode" },
  incompatible: { change: { storageClassName: "fast" }, field: "storageClassName" },
  async setUp() {
    server = await startTestPlugin();
    plugin = new HttpPlugin({ url: server.url, timeoutSeconds: 10 });
  },
  async tearDown() {
    await server.close();
  },
}));
