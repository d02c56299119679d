import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { testEnvironment } from "../support/clusters.js";

/**
 * tenantry as people install it: `npm pack` of this checkout, installed into an empty folder with
 * npm, its commands run from there as a user runs them (found on PATH), and `kubectl tenantry` found
 * by kubectl as its plugin. Node.js 24 (this process's) comes first on PATH, as the `node` package
 * beside tenantry would put it.
 */
const root = join(import.meta.dirname, "..", "..");
const execute = promisify(execFile);
let folder: string;
let env: NodeJS.ProcessEnv;

async function run(command: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return execute(command, args, { cwd: folder, env, encoding: "utf8", maxBuffer: 16 << 20 });
}

before(async () => {
  folder = await mkdtemp(join(tmpdir(), "tenantry-package-"));
  env = {
    ...process.env,
    PATH: [join(folder, "node_modules", ".bin"), dirname(process.execPath), process.env.PATH].join(":"),
  };
  // npm pack compiles dist/ first (prepack).
  const { stdout } = await execute("npm", ["pack", "--silent", "--pack-destination", folder], {
    cwd: root,
    encoding: "utf8",
  });
  const tarball = join(folder, stdout.trim().split("\n").at(-1)!);
  await writeFile(join(folder, "package.json"), JSON.stringify({ name: "tools", private: true }));
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--ignore-scripts", tarball]);
});

after(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe("the installed package", { timeout: 15 * 60_000 }, () => {
  test("holds compiled JavaScript and no TypeScript sources or compiler at run time", () => {
    const installed = join(folder, "node_modules", "tenantry");
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { files: string[] };
    assert.ok(!pkg.files.includes("src"));
    assert.ok(readFileSync(join(installed, "dist", "cli", "main.js"), "utf8").length > 0);
    const bin = readFileSync(join(installed, "bin", "run.js"), "utf8");
    assert.doesNotMatch(bin, /tsx/);
  });

  test("npx kubectl-tenantry --help, tenantry version and completion run from the folder", async () => {
    const help = await run("npx", ["kubectl-tenantry", "--help"]);
    assert.match(help.stdout, /^Usage: kubectl tenantry \[options\] \[command\]/);
    assert.equal(help.stderr, "", "nothing on stderr: no warning of any kind");
    const { stdout: version } = await run("tenantry", ["version", "-o", "json"]);
    const build = JSON.parse(version) as { version: string; commit?: string; builtAt?: string };
    assert.equal(
      build.version,
      (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version,
    );
    assert.match(build.commit ?? "", /^[0-9a-f]{40}(-dirty)?$/);
    assert.ok(build.builtAt);
    assert.match((await run("tenantry", ["completion", "bash"])).stdout, /complete .*tenantry/);
  });

  test("kubectl finds it as a plugin: kubectl tenantry tenant list, and its completions", async () => {
    const kubeconfig = testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig;
    const { stdout, stderr } = await run("kubectl", [
      "tenantry",
      "tenant",
      "list",
      "--kubeconfig",
      kubeconfig,
      "-o",
      "json",
    ]);
    assert.ok(Array.isArray(JSON.parse(stdout)), stdout);
    assert.equal(stderr, "");
    const completions = await run("kubectl", ["__complete", "tenantry", "tenant", ""]);
    for (const name of ["create", "list", "describe", "usage", "delete"]) {
      assert.match(completions.stdout, new RegExp(`^${name}\\t`, "m"));
    }
  });
});
