/**
 * The example Jupyter plugin (examples/runtime-plugins/jupyter) through the plugin conformance
 * suite, run both ways it can be: as an executable and as an HTTP server.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { ExecPlugin, HttpPlugin } from "../../src/runtimes/index.js";
import { pluginConformance } from "./plugin-conformance.js";

const script = join(import.meta.dirname, "..", "..", "examples", "runtime-plugins", "jupyter", "plugin.ts");
const command = [process.execPath, "--import", "tsx", script];
const image = "quay.io/jupyter/base-notebook:2025-03-14";
const fixture = {
  config: { cpu: "1", memory: "2Gi", volumeSize: "2Gi" },
  defaults: { image },
  invalid: { config: { volumeSize: "500Gi" }, field: "volumeSize" },
  incompatible: { change: { volumeSize: "4Gi" }, field: "volumeSize" },
};

pluginConformance("Jupyter example, executable", () => ({
  ...fixture,
  plugin: new ExecPlugin({ command: [...command, "--image", image], timeoutSeconds: 30 }),
}));

let server: ChildProcess;
let plugin: HttpPlugin;

pluginConformance("Jupyter example, over HTTP", () => ({
  ...fixture,
  get plugin() {
    return plugin;
  },
  async setUp() {
    server = spawn(command[0]!, [...command.slice(1), "--image", image, "serve"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const [first] = (await once(server.stdout!, "data")) as [Buffer];
    const url = /listening on (\S+)/.exec(first.toString())?.[1];
    if (!url) throw new Error(`the plugin said ${first.toString()}`);
    plugin = new HttpPlugin({ url, timeoutSeconds: 10 });
  },
  async tearDown() {
    server.kill("SIGTERM");
    await once(server, "exit");
  },
}));
