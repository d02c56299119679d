/**
 * Builds Capsule's manager from its Go module (wrapper module in bench/capsule, pinned by its
 * go.mod) into tenantry's component cache, keyed like the Kubernetes components: version, Go
 * version and a hash of the wrapper module. Next to the binary it keeps the CRDs and webhook
 * templates from the module's own source, so a run needs nothing from outside the cache.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cacheRoot, createProgress } from "../../src/common/index.js";

export const CAPSULE_MODULE = "github.com/projectcapsule/capsule";
export const wrapperDir = join(dirname(fileURLToPath(import.meta.url)), "..", "capsule");

export interface CapsuleBuild {
  version: string;
  binary: string;
  /** CRD manifests from the module (charts/capsule/crds or config/crd/bases). */
  crdDir: string;
  /** The chart's webhook configuration templates, from which webhook paths and rules are read. */
  webhookTemplates: string[];
  reused: boolean;
}

/** Why Capsule could not be had: the command that failed and what it said. */
export class CapsuleUnavailable extends Error {
  constructor(
    readonly command: string,
    readonly output: string,
  ) {
    super(`${command} failed: ${output}`);
  }
}

function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; onStderrLine?: (line: string) => void } = {},
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

async function must(
  command: string,
  args: string[],
  options: Parameters<typeof run>[2] = {},
): Promise<string> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    const lines = result.stderr.trim().split("\n").filter(Boolean);
    throw new CapsuleUnavailable(
      `(cd ${options.cwd ?? "."} && ${command} ${args.join(" ")})`,
      lines.slice(-6).join("\n") || `exit code ${result.code}`,
    );
  }
  return result.stdout;
}

export async function pinnedCapsuleVersion(): Promise<string> {
  const goMod = await readFile(join(wrapperDir, "go.mod"), "utf8");
  const match = /^\s*(?:require\s+)?github\.com\/projectcapsule\/capsule\s+(v\S+)/m.exec(goMod);
  if (!match) throw new Error("bench/capsule/go.mod does not require github.com/projectcapsule/capsule");
  return match[1]!;
}

/** The manager's main package: `cmd` in recent releases, the module root in older ones. */
async function mainPackage(moduleDir: string): Promise<string> {
  if (existsSync(join(moduleDir, "cmd", "main.go"))) return `${CAPSULE_MODULE}/cmd`;
  return CAPSULE_MODULE;
}

async function crdSource(moduleDir: string): Promise<string> {
  for (const candidate of ["charts/capsule/crds", "config/crd/bases"]) {
    const dir = join(moduleDir, candidate);
    if (existsSync(dir) && (await readdir(dir)).some((f) => f.endsWith(".yaml"))) return dir;
  }
  throw new CapsuleUnavailable(
    `ls ${moduleDir}/{charts/capsule/crds,config/crd/bases}`,
    "no CRD manifests in the module",
  );
}

export async function ensureCapsule(): Promise<CapsuleBuild> {
  const version = await pinnedCapsuleVersion();
  const env = { ...process.env, CGO_ENABLED: "0", GOFLAGS: `${process.env.GOFLAGS ?? ""} -mod=mod`.trim() };
  const go = (await must("go", ["env", "GOVERSION"], { env })).trim().replace(/^go/, "");
  const ldflags = ["-s", "-w", `-X main.GitTag=${version}`, `-X main.GitRepo=${CAPSULE_MODULE}`];
  const hash = createHash("sha256");
  for (const file of ["go.mod", "go.sum", "tools.go"]) {
    if (existsSync(join(wrapperDir, file))) hash.update(await readFile(join(wrapperDir, file)));
  }
  hash.update(JSON.stringify({ go, ldflags }));
  hash.update(`${process.platform}/${process.arch}`);
  const key = `capsule-${version}-go${go}-${hash.digest("hex").slice(0, 10)}`;
  const target = join(cacheRoot(), "components", key);
  const result = (reused: boolean): CapsuleBuild => ({
    version,
    binary: join(target, "bin", "capsule"),
    crdDir: join(target, "crds"),
    webhookTemplates: [
      join(target, "webhooks", "mutatingwebhookconfiguration.yaml"),
      join(target, "webhooks", "validatingwebhookconfiguration.yaml"),
    ],
    reused,
  });
  if (existsSync(join(target, "manifest.json"))) return result(true);

  const progress = createProgress(`build capsule ${version}`);
  const started = Date.now();
  progress.log(`building Capsule ${version} from its Go module (once; cached in ${target})`);
  progress.update(0, 1, "downloading modules");
  await must("go", ["mod", "download", CAPSULE_MODULE], { cwd: wrapperDir, env });
  const moduleDir = (
    await must("go", ["list", "-m", "-f", "{{.Dir}}", CAPSULE_MODULE], { cwd: wrapperDir, env })
  ).trim();
  const pkg = await mainPackage(moduleDir);
  const total = (await must("go", ["list", "-deps", pkg], { cwd: wrapperDir, env }))
    .trim()
    .split("\n").length;
  const staging = `${target}.tmp-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(join(staging, "bin"), { recursive: true });
  let compiled = 0;
  await must(
    "go",
    ["build", "-v", "-trimpath", "-ldflags", ldflags.join(" "), "-o", join(staging, "bin", "capsule"), pkg],
    {
      cwd: wrapperDir,
      env,
      onStderrLine: (line) => {
        if (/^[\w.-]+(\/[\w.~+-]+)*$/.test(line.trim())) {
          compiled++;
          progress.update(Math.min(compiled, total - 1), total, "packages compiled");
        }
      },
    },
  );
  await cp(await crdSource(moduleDir), join(staging, "crds"), { recursive: true });
  await mkdir(join(staging, "webhooks"));
  for (const name of ["mutatingwebhookconfiguration.yaml", "validatingwebhookconfiguration.yaml"]) {
    const from = join(moduleDir, "charts", "capsule", "templates", name);
    if (!existsSync(from)) throw new CapsuleUnavailable(`cat ${from}`, "the chart has no such template");
    await cp(from, join(staging, "webhooks", name));
  }
  await writeFile(
    join(staging, "manifest.json"),
    `${JSON.stringify(
      {
        component: "capsule",
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
  progress.finish("built capsule");
  return result(false);
}
