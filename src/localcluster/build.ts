import { type SpawnOptions, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cacheRoot, createProgress, type Progress, UserError } from "../common/index.js";
import {
  type ComponentName,
  type ComponentSpec,
  components,
  helmComponent,
  hydraComponent,
  modulesDir,
  objectStoreComponent,
  pinnedVersion,
  requiredGoVersion,
  wireguardComponent,
} from "./components.js";
import { acquireLock } from "./lock.js";

/** Paths of the built binaries and assets, ready to run. */
export interface ComponentBinaries {
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  etcd: string;
  kwok: string;
  kwokStages: string;
  kubeProxy: string;
  coredns: string;
  kubeRouter: string;
  versions: Record<Exclude<ComponentName, "helm">, string>;
}

export interface BuildOptions {
  /** Overrides the cache folder (default: ~/.cache/tenantry). */
  cacheDir?: string;
  /** Environment for the go tool (default: this process's). */
  env?: NodeJS.ProcessEnv;
  progress?: (label: string) => Progress;
}

interface Manifest {
  component: string;
  version: string;
  goVersion: string;
  builtAt: string;
  buildSeconds: number;
}

const NETWORK_ERROR =
  /dial tcp|no such host|i\/o timeout|connection refused|TLS handshake timeout|proxyconnect|network is unreachable|unexpected EOF|(?:403|404|410) Forbidden|server misbehaving/i;

function run(
  command: string,
  args: string[],
  options: SpawnOptions & { onStderrLine?: (line: string) => void; log?: NodeJS.WritableStream },
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let partial = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      options.log?.write(chunk);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      stderr += text;
      options.log?.write(chunk);
      if (!options.onStderrLine) return;
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) options.onStderrLine(line);
    });
    child.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") {
        reject(
          new UserError(
            `${command} was not found on PATH: the Kubernetes components are built from their Go modules, so install Go and run again`,
          ),
        );
      } else reject(err);
    });
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

function compareGoVersions(a: string, b: string): number {
  const parts = (v: string) =>
    v
      .replace(/^go/, "")
      .split(/[.rc]/)
      .map((n) => Number.parseInt(n, 10) || 0);
  const [pa, pb] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

async function goVersion(env: NodeJS.ProcessEnv): Promise<string> {
  const { code, stdout, stderr } = await run("go", ["env", "GOVERSION"], { env });
  if (code !== 0) throw new UserError(`"go env GOVERSION" failed: ${stderr.trim().split("\n")[0]}`);
  return stdout.trim().replace(/^go/, "");
}

function failure(
  spec: ComponentSpec<string>,
  step: string,
  output: string,
  logFile: string,
  env: NodeJS.ProcessEnv,
): Error {
  const lines = output.trim().split("\n").filter(Boolean);
  const networkLine = lines.find((l) => NETWORK_ERROR.test(l));
  const compilerLine = spec.cgo ? lines.find((l) => /exec: "?\w*(gcc|cc)"?: .*not found/.test(l)) : undefined;
  if (compilerLine) {
    return new UserError(
      `${spec.name} is built with cgo and needs a C compiler: ${compilerLine.trim()} — install gcc (or set CC) and run again`,
    );
  }
  if (networkLine) {
    return new UserError(
      `cannot download the Go modules for ${spec.name} (GOPROXY=${env.GOPROXY ?? "default"}): ${networkLine.trim()} — check the network or GOPROXY and run again`,
    );
  }
  return new Error(
    `${step} for ${spec.name} failed (full output in ${logFile}):\n${lines.slice(-15).join("\n")}`,
  );
}

/** go names a binary after its package path (`server/v3` gives `v3` or `server`); give it the name we use. */
async function nameSingleBinary(spec: ComponentSpec<string>, binDir: string): Promise<void> {
  const [expected] = spec.binaries;
  if (spec.binaries.length !== 1 || !expected || existsSync(join(binDir, expected))) return;
  const built = await readdir(binDir);
  if (built.length === 1 && built[0]) await rename(join(binDir, built[0]), join(binDir, expected));
}

async function cacheKey(spec: ComponentSpec<string>, version: string, go: string): Promise<string> {
  const hash = createHash("sha256");
  const wrapper = join(modulesDir, spec.name);
  // go.mod and go.sum pin every byte; the wrapper's own Go files (tools.go, or a main.go) say what is built.
  const goFiles = (await readdir(wrapper)).filter((f) => f.endsWith(".go")).sort();
  for (const file of ["go.mod", "go.sum", ...goFiles]) hash.update(await readFile(join(wrapper, file)));
  hash.update(
    JSON.stringify({
      go,
      ldflags: spec.ldflags(version),
      packages: spec.packages,
      assets: spec.assets,
      tags: spec.tags,
      cgo: spec.cgo,
    }),
  );
  hash.update(`${process.platform}/${process.arch}`);
  return `${spec.name}-${version}-go${go}-${hash.digest("hex").slice(0, 10)}`;
}

async function buildComponent(
  spec: ComponentSpec<string>,
  options: Required<Omit<BuildOptions, "cacheDir">> & { cacheDir: string },
) {
  const { env } = options;
  const version = pinnedVersion(spec);
  const go = await goVersion(env);
  const needed = requiredGoVersion(spec);
  if (compareGoVersions(go, needed) < 0 && !env.GOTOOLCHAIN) {
    throw new UserError(
      `Go ${needed} or newer is needed to build ${spec.name} ${version}, but go is ${go}: install a newer Go, or set GOTOOLCHAIN=auto to let go fetch one`,
    );
  }
  const key = await cacheKey(spec, version, go);
  const targetDir = join(options.cacheDir, "components", key);
  const manifestFile = join(targetDir, "manifest.json");
  if (existsSync(manifestFile)) return { dir: targetDir, version, reused: true };

  await mkdir(join(options.cacheDir, "components"), { recursive: true });
  const release = await acquireLock(
    join(options.cacheDir, "components", `${key}.lock`),
    `building ${spec.name}`,
  );
  try {
    // Another process may have finished the same build while we waited for the lock.
    if (existsSync(manifestFile)) return { dir: targetDir, version, reused: true };
    const started = Date.now();
    const logDir = join(options.cacheDir, "logs");
    await mkdir(logDir, { recursive: true });
    const logFile = join(logDir, `build-${key}.log`);
    const log = createWriteStream(logFile);
    const cwd = join(modulesDir, spec.name);
    const goEnv = {
      ...env,
      CGO_ENABLED: spec.cgo ? "1" : "0",
      GOFLAGS: `${env.GOFLAGS ?? ""} -mod=mod`.trim(),
    };
    const progress = options.progress(`build ${spec.name} ${version}`);
    try {
      progress.log(`building ${spec.name} ${version} from its Go modules (once; cached in ${targetDir})`);
      progress.update(0, 1, "downloading modules");
      const download = await run("go", ["mod", "download"], { cwd, env: goEnv, log });
      if (download.code !== 0) throw failure(spec, "go mod download", download.stderr, logFile, goEnv);

      const tags = spec.tags?.length ? ["-tags", spec.tags.join(",")] : [];
      const list = await run("go", ["list", "-deps", ...tags, ...spec.packages], { cwd, env: goEnv, log });
      if (list.code !== 0) throw failure(spec, "go list", list.stderr, logFile, goEnv);
      const total = list.stdout.trim().split("\n").length;

      const staging = `${targetDir}.tmp-${process.pid}`;
      await rm(staging, { recursive: true, force: true });
      await mkdir(join(staging, "bin"), { recursive: true });
      let compiled = 0;
      const build = await run(
        "go",
        [
          "build",
          "-v",
          "-trimpath",
          ...tags,
          "-ldflags",
          ["-s", "-w", ...spec.ldflags(version)].join(" "),
          "-o",
          `${join(staging, "bin")}/`,
          ...spec.packages,
        ],
        {
          cwd,
          env: goEnv,
          log,
          onStderrLine: (line) => {
            // `go build -v` names each package as it compiles it.
            if (/^[\w.-]+(\/[\w.~+-]+)*$/.test(line.trim())) {
              compiled++;
              progress.update(Math.min(compiled, total - 1), total, "packages compiled");
            }
          },
        },
      );
      if (build.code !== 0) throw failure(spec, "go build", build.stderr, logFile, goEnv);
      await nameSingleBinary(spec, join(staging, "bin"));

      for (const asset of spec.assets ?? []) {
        const moduleDir = (
          await run("go", ["list", "-m", "-f", "{{.Dir}}", spec.module], { cwd, env: goEnv })
        ).stdout.trim();
        const parts = await Promise.all(asset.from.map((f) => readFile(join(moduleDir, f), "utf8")));
        await writeFile(join(staging, asset.to), parts.map((p) => p.trim()).join("\n---\n"));
      }
      for (const binary of spec.binaries) await stat(join(staging, "bin", binary));
      const manifest: Manifest = {
        component: spec.name,
        version,
        goVersion: go,
        builtAt: new Date().toISOString(),
        buildSeconds: Math.round((Date.now() - started) / 1000),
      };
      await writeFile(join(staging, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
      await rm(targetDir, { recursive: true, force: true });
      await rename(staging, targetDir);
      progress.finish(`built ${spec.binaries.join(", ")}`);
      return { dir: targetDir, version, reused: false };
    } finally {
      log.end();
    }
  } finally {
    await release();
  }
}

/**
 * Builds (once) and returns the Kubernetes components. A second call, from any checkout on the
 * machine, reuses the cache folder keyed by component version, Go version and wrapper module.
 */
export async function ensureComponents(options: BuildOptions = {}): Promise<ComponentBinaries> {
  const resolved = {
    cacheDir: options.cacheDir ?? cacheRoot(),
    env: options.env ?? process.env,
    progress: options.progress ?? createProgress,
  };
  const dirs = {} as Record<Exclude<ComponentName, "helm">, string>;
  const versions = {} as Record<Exclude<ComponentName, "helm">, string>;
  // One at a time: each go build already uses every core.
  for (const spec of components) {
    const result = await buildComponent(spec, resolved);
    const name = spec.name as Exclude<ComponentName, "helm">;
    dirs[name] = result.dir;
    versions[name] = result.version;
  }
  return {
    kubeApiserver: join(dirs.kubernetes, "bin", "kube-apiserver"),
    kubeControllerManager: join(dirs.kubernetes, "bin", "kube-controller-manager"),
    kubeScheduler: join(dirs.kubernetes, "bin", "kube-scheduler"),
    etcd: join(dirs.etcd, "bin", "etcd"),
    kwok: join(dirs.kwok, "bin", "kwok"),
    kwokStages: join(dirs.kwok, "kwok-stages.yaml"),
    kubeProxy: join(dirs["kube-proxy"], "bin", "kube-proxy"),
    coredns: join(dirs.coredns, "bin", "coredns"),
    kubeRouter: join(dirs["kube-router"], "bin", "kube-router"),
    versions,
  };
}

/** Builds (once, cached and locked like the Kubernetes components) a component wanted only by some. */
function buildOnDemand(spec: Parameters<typeof buildComponent>[0], options: BuildOptions) {
  return buildComponent(spec, {
    cacheDir: options.cacheDir ?? cacheRoot(),
    env: options.env ?? process.env,
    progress: options.progress ?? createProgress,
  });
}

/** Builds (once) and returns the path of the helm binary. */
export async function ensureHelm(options: BuildOptions = {}): Promise<{ helm: string; version: string }> {
  const result = await buildOnDemand(helmComponent, options);
  return { helm: join(result.dir, "bin", "helm"), version: result.version };
}

/** Builds (once) and returns the versitygw binary, the local S3-compatible object store. */
export async function ensureObjectStoreBinary(
  options: BuildOptions = {},
): Promise<{ program: string; version: string }> {
  const result = await buildOnDemand(objectStoreComponent, options);
  return { program: join(result.dir, "bin", "versitygw"), version: result.version };
}

/** Builds (once) and returns Ory Hydra, the OpenID provider of the OIDC tests. */
export async function ensureHydra(options: BuildOptions = {}): Promise<{ program: string; version: string }> {
  const result = await buildOnDemand(hydraComponent, options);
  return { program: join(result.dir, "bin", "hydra"), version: result.version };
}

/** Builds (once) and returns wireguard-go, the userspace WireGuard the network gateways run. */
export async function ensureWireguardGo(
  options: BuildOptions = {},
): Promise<{ program: string; version: string; reused: boolean }> {
  const result = await buildOnDemand(wireguardComponent, options);
  return { program: join(result.dir, "bin", "wireguard-go"), version: result.version, reused: result.reused };
}
