import { existsSync } from "node:fs";
import * as nodeModule from "node:module";

/** The oldest Node.js tenantry runs on: @kubernetes/client-node 2.x (undici 8) needs 22.19. */
const NODE_MINIMUM = [22, 19];

/**
 * Runs tenantry's CLI from its compiled JavaScript (dist/, `npm run build`), with Node.js's compile
 * cache (V8's code for each module kept on disk between runs). In a checkout of tenantry's sources
 * dist/ is first rebuilt when a source is newer (scripts/build.mjs: about a second when something
 * changed, a few milliseconds otherwise); an installed package has no sources and runs dist/ as it is.
 *
 * `name` is how the CLI was called (`tenantry`, or `kubectl tenantry` as kubectl's plugin).
 */
export async function run(name, argv = process.argv) {
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (major < NODE_MINIMUM[0] || (major === NODE_MINIMUM[0] && minor < NODE_MINIMUM[1])) {
    process.stderr.write(
      `error: tenantry needs Node.js ${NODE_MINIMUM.join(".")} or newer; this is ${process.version} (${process.execPath}). ` +
        "Install Node.js 24, or the node package beside tenantry: npm install node@24\n",
    );
    process.exitCode = 2;
    return;
  }
  nodeModule.enableCompileCache();
  const build = new URL("../scripts/build.mjs", import.meta.url);
  if (existsSync(build)) {
    const { buildIfStale } = await import(build.href);
    await buildIfStale({ log: (line) => process.stderr.write(line) });
  }
  const { main } = await import("../dist/cli/main.js");
  process.exitCode = await main(argv, name);
}
