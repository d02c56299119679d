/**
 * Peers built from their Go module only for benchmarking (Capsule, local-path-provisioner): a
 * wrapper module under bench/<peer> pins the version in its go.mod; the binary is built into
 * tenantry's component cache, keyed like the Kubernetes components by version, Go version and a
 * hash of the wrapper module, with progress shown. A build that cannot be had says which command
 * failed and what it printed.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cacheRoot, createProgress } from "../../src/common/index.js";

/** Why a peer could not be had: the command that failed and what it said. */
export class PeerUnavailable extends Error {
  constructor(
    readonly command: string,
    readonly output: string,
  ) {
    super(`${command} failed: ${output}`);
  }
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  onStderrLine?: (line: string) => void;
}

export function run(
  command: string,
  args: string[],
  options: RunOptions = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let partial = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      const text = c.toString();
      stderr += text;
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) options.onStderrLine?.(line);
    });
    child.on("error", (err) => resolve({ code: 127, stdout, stderr: `${err.message}` }));
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** Runs a command; its stdout, or PeerUnavailable naming it with the last lines it printed. */
export async function must(command: string, args: string[], options: RunOptions = {}): Promise<string> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    const lines = result.stderr.trim().split("\n").filter(Boolean);
    throw new PeerUnavailable(
      `(cd ${options.cwd ?? "."} && ${command} ${args.join(" ")})`,
      lines.slice(-6).join("\n") || `exit code ${result.code}`,
    );
  }
  return result.stdout;
}

/** The version of `module` the wrapper's go.mod requires. */
export async function pinnedModuleVersion(wrapperDir: string, module: string): Promise<string> {
  const goMod = await readFile(join(wrapperDir, "go.mod"), "utf8");
  const escaped = module.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const match = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, "m").exec(goMod);
  if (!match) throw new Error(`${join(wrapperDir, "go.mod")} does not require ${module}`);
  return match[1]!;
}

export interface GoPeerBuild {
  version: string;
  /** The cache folder: bin/<binary>, manifest.json and whatever `extra` put there. */
  dir: string;
  binary: string;
  reused: boolean;
}

export interface GoPeerRecipe {
  /** Short name: the cache key's prefix and the binary's name. */
  name: string;
  module: string;
  wrapperDir: string;
  /** The main package to build (default: the module's root). */
  mainPackage?: (moduleDir: string) => Promise<string> | string;
  ldflags?: (version: string) => string[];
  /** Copies what a run needs besides the binary from the module's source into the staging folder. */
  extra?: (moduleDir: string, staging: string) => Promise<void>;
}

/**
 * The peer's binary, built once into the component cache. The wrapper is copied to a scratch
 * folder first, so resolving its requirements (-mod=mod writes go.sum) leaves the repository alone.
 */
export async function ensureGoPeer(recipe: GoPeerRecipe): Promise<GoPeerBuild> {
  const version = await pinnedModuleVersion(recipe.wrapperDir, recipe.module);
  const env = { ...process.env, CGO_ENABLED: "0", GOFLAGS: `${process.env.GOFLAGS ?? ""} -mod=mod`.trim() };
  const go = (await must("go", ["env", "GOVERSION"], { env })).trim().replace(/^go/, "");
  const ldflags = ["-s", "-w", ...(recipe.ldflags?.(version) ?? [])];
  const hash = createHash("sha256");
  for (const file of ["go.mod", "go.sum", "tools.go"]) {
    if (existsSync(join(recipe.wrapperDir, file))) hash.update(await readFile(join(recipe.wrapperDir, file)));
  }
  hash.update(JSON.stringify({ go, ldflags }));
  hash.update(`${process.platform}/${process.arch}`);
  const key = `${recipe.name}-${version}-go${go}-${hash.digest("hex").slice(0, 10)}`;
  const target = join(cacheRoot(), "components", key);
  const result = (reused: boolean): GoPeerBuild => ({
    version,
    dir: target,
    binary: join(target, "bin", recipe.name),
    reused,
  });
  if (existsSync(join(target, "manifest.json"))) return result(true);

  const progress = createProgress(`build ${recipe.name} ${version}`);
  const started = Date.now();
  progress.log(`building ${recipe.name} ${version} from its Go module (once; cached in ${target})`);
  const staging = `${target}.tmp-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  const wrapper = join(staging, "wrapper");
  await mkdir(join(staging, "bin"), { recursive: true });
  await cp(recipe.wrapperDir, wrapper, { recursive: true });
  try {
    progress.update(0, 1, "downloading modules");
    await must("go", ["mod", "download", recipe.module], { cwd: wrapper, env });
    const moduleDir = (
      await must("go", ["list", "-m", "-f", "{{.Dir}}", recipe.module], { cwd: wrapper, env })
    ).trim();
    const pkg = (await recipe.mainPackage?.(moduleDir)) ?? recipe.module;
    const total = (await must("go", ["list", "-deps", pkg], { cwd: wrapper, env })).trim().split("\n").length;
    let compiled = 0;
    await must(
      "go",
      [
        "build",
        "-v",
        "-trimpath",
        "-ldflags",
        ldflags.join(" "),
        "-o",
        join(staging, "bin", recipe.name),
        pkg,
      ],
      {
        cwd: wrapper,
        env,
        onStderrLine: (line) => {
          if (/^[\w.-]+(\/[\w.~+-]+)*$/.test(line.trim())) {
            compiled++;
            progress.update(Math.min(compiled, total - 1), total, "packages compiled");
          }
        },
      },
    );
    await recipe.extra?.(moduleDir, staging);
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
  await rm(wrapper, { recursive: true, force: true });
  await writeFile(
    join(staging, "manifest.json"),
    `${JSON.stringify(
      {
        component: recipe.name,
        version,
        goVersion: go,
        builtAt: new Date().toISOString(),
        buildSeconds: Math.round((Date.now() - started) / 1000),
      },
      null,
      2,
    )}\n`,
  );
  await rm(target, { recursive: true, force: true });
  await rename(staging, target);
  progress.finish(`built ${recipe.name}`);
  return result(false);
}
