import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { stringify } from "yaml";
import { BuiltinIdentity, type NewUser } from "../../src/identity/index.js";
import { loadClusterClient } from "../../src/kube/index.js";
import { testEnvironment, testKubeConfig } from "./clusters.js";

let shared: Promise<BuiltinIdentity> | undefined;

/**
 * The built-in identity service of the tenantry running for the tests, seen from the test
 * process: same namespace, signing keys and issuer, so users created and tokens issued here are
 * the ones kube-apiserver's token webhook accepts.
 */
export function sharedBuiltinIdentity(): Promise<BuiltinIdentity> {
  shared ??= (async () => {
    const env = testEnvironment();
    const home = env.clusters.find((c) => c.name === env.tenantry.cluster)!;
    const identity = new BuiltinIdentity({
      client: loadClusterClient(home.name, home.kubeconfig),
      namespace: "tenantry-system",
      issuer: env.tenantry.accessUrl,
      logger: pino({ level: "silent" }),
    });
    await identity.start();
    return identity;
  })();
  return shared;
}

/** Stops its watches, so the test file's process can end. */
export async function stopSharedBuiltinIdentity(): Promise<void> {
  const identity = shared;
  shared = undefined;
  await (await identity)?.stop();
}

export async function createTestUser(user: NewUser): Promise<void> {
  await (await sharedBuiltinIdentity()).createUser(user);
}

/** A kubeconfig file that authenticates to the home cluster's API server with a bearer token. */
export function tokenKubeconfig(
  token: string,
  options: { namespace?: string; server?: string; caPem?: string } = {},
) {
  const kc = testKubeConfig("home");
  const cluster = kc.getCurrentCluster()!;
  const text = stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "home",
        cluster: {
          server: options.server ?? cluster.server,
          "certificate-authority-data": options.caPem
            ? Buffer.from(options.caPem).toString("base64")
            : cluster.caData,
        },
      },
    ],
    users: [{ name: "token-user", user: { token } }],
    contexts: [
      {
        name: "home",
        context: {
          cluster: "home",
          user: "token-user",
          ...(options.namespace ? { namespace: options.namespace } : {}),
        },
      },
    ],
    "current-context": "home",
  });
  const path = join(mkdtempSync(join(tmpdir(), "tenantry-token-")), "kubeconfig");
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json<T = Record<string, unknown>>(): T;
}

/**
 * An HTTPS call to tenantry's access server (identity REST API, webhooks), trusting its CA and
 * presenting kube-apiserver's webhook client certificate unless `anonymous`.
 */
export function accessRequest(
  method: string,
  path: string,
  options: {
    body?: unknown;
    token?: string;
    rawBody?: string;
    anonymous?: boolean;
    /** The loopback address to call from (127.0.0.0/8), to act as a different client. */
    localAddress?: string;
  } = {},
): Promise<HttpResult> {
  const env = testEnvironment();
  const client = options.anonymous ? undefined : env.tenantry.reviewClient;
  return new Promise((resolve, reject) => {
    const payload =
      options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    const req = request(
      `${env.tenantry.accessUrl}${path}`,
      {
        method,
        ca: env.tenantry.accessCaPem,
        ...(options.localAddress ? { localAddress: options.localAddress, agent: false } : {}),
        ...(client ? { cert: readFileSync(client.certFile), key: readFileSync(client.keyFile) } : {}),
        headers: {
          ...(payload !== undefined ? { "content-type": "application/json" } : {}),
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        },
      },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => {
          body += c.toString();
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            json: <T>() => JSON.parse(body) as T,
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}
