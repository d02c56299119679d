import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ExecPlugin } from "./exec.js";
import { PluginError } from "./spi.js";

const node = (script: string, timeoutSeconds = 10) =>
  new ExecPlugin({ command: [process.execPath, "-e", script], timeoutSeconds });

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof PluginError, String(err));
    return err.message;
  }
  assert.fail("the callout succeeded");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("executable plugin transport", () => {
  it("runs <command…> <callout> with the JSON request on stdin and reads the reply from stdout", async () => {
    const plugin = node(`let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () =>
      process.stdout.write(JSON.stringify({ capabilities: ["deploy-service"], echo: JSON.parse(s), callout: process.argv.at(-1) })));`);
    assert.deepEqual(await plugin.init(), { capabilities: ["deploy-service"] });
  });

  it("a non-zero exit fails with its message and standard error; no JSON fails too", async () => {
    const crash = node(`process.stderr.write("template missing"); process.exit(3);`);
    assert.match(await failure(crash.init()), /exited with 3: template missing/);
    const said = node(
      `process.stdout.write(JSON.stringify({ status: "Failure", message: "quota" })); process.exit(1);`,
    );
    assert.match(await failure(said.init()), /exited with 1: quota/);
    const chatter = node(`process.stdout.write("hello");`);
    assert.match(await failure(chatter.init()), /wrote no JSON reply: hello/);
    const missing = new ExecPlugin({ command: ["/no/such/plugin"] });
    assert.match(await failure(missing.init()), /could not be run: ENOENT/);
  });

  it("a plugin that does not answer in time is killed with whatever it started", async () => {
    const dir = await mkdtemp(join(tmpdir(), "exec-plugin-"));
    try {
      const pidFile = join(dir, "child");
      // The plugin starts a child that would outlive it, then hangs.
      const plugin = node(
        `const { spawn } = require("node:child_process");
         const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
         require("node:fs").writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));
         process.stderr.write("thinking");
         setInterval(() => {}, 1000);`,
        1,
      );
      assert.match(
        await failure(plugin.init()),
        /did not answer within 1 s \(timeoutSeconds\) and was killed: thinking/,
      );
      const child = Number(await readFile(pidFile, "utf8"));
      for (let i = 0; i < 50 && alive(child); i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(alive(child), false, "the plugin's child was killed too");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
