/** configurable-http-proxy 5.3.0 (npm) as JupyterHub runs it: its REST API on a port of its own, with a token. */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";

export const CHP_VERSION = "5.3.0";

export interface Chp {
  child: ChildProcess;
  url: string;
  api: string;
  token: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startChp(): Promise<Chp> {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve("configurable-http-proxy/package.json");
  const version = (require(pkg) as { version: string }).version;
  if (version !== CHP_VERSION) {
    throw new Error(
      `configurable-http-proxy ${version} is installed, the benchmark compares with ${CHP_VERSION}`,
    );
  }
  const bin = join(dirname(pkg), "bin", "configurable-http-proxy");
  const port = await freePort();
  const apiPort = await freePort();
  const token = randomBytes(24).toString("hex");
  const child = spawn(
    process.execPath,
    [
      bin,
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--api-ip",
      "127.0.0.1",
      "--api-port",
      String(apiPort),
    ],
    { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, CONFIGPROXY_AUTH_TOKEN: token } },
  );
  const chp = { child, url: `http://127.0.0.1:${port}`, api: `http://127.0.0.1:${apiPort}`, token };
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error(`configurable-http-proxy exited with ${child.exitCode}`);
    try {
      if ((await chpApi(chp, "GET", "/api/routes")).ok) return chp;
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("configurable-http-proxy's REST API did not answer within 20 s");
}

export function chpApi(chp: Pick<Chp, "api" | "token">, method: string, path: string, body?: unknown) {
  return fetch(`${chp.api}${path}`, {
    method,
    headers: {
      authorization: `token ${chp.token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** Adds a route through the REST API (as JupyterHub does), failing on anything but 201. */
export async function addChpRoute(chp: Chp, prefix: string, target: string): Promise<void> {
  const res = await chpApi(chp, "POST", `/api/routes${prefix}`, { target });
  await res.arrayBuffer();
  if (res.status !== 201)
    throw new Error(`configurable-http-proxy answered ${res.status} to adding ${prefix}`);
}

export async function deleteChpRoute(chp: Chp, prefix: string): Promise<void> {
  const res = await chpApi(chp, "DELETE", `/api/routes${prefix}`);
  await res.arrayBuffer();
}
