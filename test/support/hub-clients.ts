/**
 * Real, unmodified JupyterHub clients from PyPI for the JupyterHub REST API's tests:
 * jupyterhub-idle-culler 2.0.0 and requests in a virtualenv under the shared cache (made once per
 * set of pins, under a lock), and JupyterHub's own REST example (examples/server-api/
 * start-stop-server.py of the jupyterhub 6.1.1 source distribution, checked against PyPI's digest).
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cacheRoot } from "../../src/common/index.js";
import { acquireLock } from "../../src/localcluster/lock.js";

/** Every package pinned, as pip resolved them for jupyterhub-idle-culler 2.0.0 and requests. */
const PINS = [
  "jupyterhub-idle-culler==2.0.0",
  "requests==2.34.2",
  "certifi==2026.10.19.post1",
  "charset-normalizer==3.5.3",
  "idna==3.20",
  "packaging==26.4",
  "python-dateutil==4.0.0",
  "tornado==6.6.1",
  "traitlets==5.16.1",
  "tzdata==2026.6",
  "urllib3==2.8.0",
  "six==1.17.0",
];

/** The jupyterhub 6.1.1 source distribution on PyPI, and its sha256 as PyPI's index gives it. */
const JUPYTERHUB_SDIST = {
  url: "https://files.pythonhosted.org/packages/7f/2d/da2a9565b0a6b6fce11aa8e494f576a1e1ad5db54227d1f30044c7ed63d7/jupyterhub-6.1.1.tar.gz",
  sha256: "1d7b6713b31ebd76d61a13c202f9323e66c4e8cf731adc5d3052bb6ee6178a95",
  example: "jupyterhub-6.1.1/examples/server-api/start-stop-server.py",
};

export interface HubClients {
  python: string;
  culler: string;
  /** JupyterHub's start-stop-server.py example. */
  restExample: string;
}

function run(command: string, args: string[], cwd?: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

async function ensureVenv(dir: string): Promise<void> {
  if (existsSync(join(dir, "done"))) return;
  await rm(dir, { recursive: true, force: true });
  const venv = await run("python3", ["-m", "venv", dir]);
  if (venv.code !== 0) throw new Error(`python3 -m venv failed: ${venv.output}`);
  const pip = await run(join(dir, "bin", "pip"), ["install", "--disable-pip-version-check", "-q", ...PINS]);
  if (pip.code !== 0) throw new Error(`pip install failed: ${pip.output}`);
  await writeFile(join(dir, "done"), `${PINS.join("\n")}\n`);
}

async function ensureExample(dir: string): Promise<string> {
  const file = join(dir, JUPYTERHUB_SDIST.example);
  if (existsSync(file)) return file;
  await mkdir(dir, { recursive: true });
  const res = await fetch(JUPYTERHUB_SDIST.url);
  if (!res.ok) throw new Error(`downloading ${JUPYTERHUB_SDIST.url}: ${res.status}`);
  const bytes = Buffer.from(await res.arrayBuffer());
  const digest = createHash("sha256").update(bytes).digest("hex");
  if (digest !== JUPYTERHUB_SDIST.sha256)
    throw new Error(`jupyterhub-6.1.1.tar.gz has sha256 ${digest}, not PyPI's`);
  const archive = join(dir, "jupyterhub-6.1.1.tar.gz");
  await writeFile(archive, bytes);
  const tar = await run("tar", ["xzf", archive, JUPYTERHUB_SDIST.example, "jupyterhub-6.1.1/LICENSE"], dir);
  if (tar.code !== 0) throw new Error(`tar: ${tar.output}`);
  await rm(archive);
  return file;
}

let shared: Promise<HubClients> | undefined;

export function hubClients(): Promise<HubClients> {
  shared ??= (async () => {
    const root = join(cacheRoot(), "python");
    await mkdir(root, { recursive: true });
    const key = `hub-clients-${createHash("sha256").update(PINS.join("\n")).digest("hex").slice(0, 10)}`;
    const dir = join(root, key);
    const release = await acquireLock(join(root, `${key}.lock`), "installing JupyterHub's clients");
    try {
      await ensureVenv(dir);
      const restExample = await ensureExample(join(root, "jupyterhub-6.1.1-examples"));
      return {
        python: join(dir, "bin", "python"),
        culler: join(dir, "bin", "jupyterhub-idle-culler"),
        restExample,
      };
    } finally {
      await release();
    }
  })();
  return shared;
}
