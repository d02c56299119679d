/** The built-in generic plugin through the plugin conformance suite. */
import { GenericPlugin } from "../../src/runtimes/index.js";
import { pluginConformance } from "./plugin-conformance.js";

const image = "docker.io/jmalloc/echo-server:v0.3.7";

pluginConformance("generic (built in)", () => ({
  plugin: new GenericPlugin(),
  config: { image, port: 8080, volumeSize: "1Gi", env: { GREETING: "hello" } },
  defaults: { image },
  invalid: { config: { image, cpu: "64" }, field: "cpu" },
  incompatible: { change: { volumeSize: "2Gi" }, field: "volumeSize" },
}));
