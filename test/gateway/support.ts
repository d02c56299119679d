import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { Registry } from "prom-client";
import { stringify } from "yaml";
import { type GatewayOptions, type RunningGateway, startGateway } from "../../src/gateway/index.js";
import { Authenticator, type IdentityProvider, TenantProvisioner } from "../../src/identity/index.js";
import { ClusterClient } from "../../src/kube/index.js";
import {
  TENANT_LABEL,
  TENANTRY_GROUP,
  TENANTS_API_VERSION,
  TENANTS_VERSION,
  type Tenant,
  TenantInformers,
} from "../../src/tenants/index.js";
import { testKubeConfig } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import type { TestUser } from "../support/users.js";

export const admin: KubeConfig = testKubeConfig("home");
export const core = admin.makeApiClient(CoreV1Api);
export const custom = admin.makeApiClient(CustomObjectsApi);
const tenantsResource = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenants" };

export interface TestGateway {
  gateway: RunningGateway;
  informers: TenantInformers;
  registry: Registry;
  stop(): Promise<void>;
}

/** A gateway of the test's own, with the home cluster's admin credentials and fresh tenant caches. */
export async function startTestGateway(
  options: Partial<GatewayOptions> & { providers?: IdentityProvider[]; provisionTenants?: boolean } = {},
): Promise<TestGateway> {
  const client = new ClusterClient("home", testKubeConfig("home"));
  const informers = new TenantInformers(client);
  await informers.start();
  const registry = new Registry();
  const gateway = await startGateway({
    client,
    informers,
    // Answers are not cached, so a revoked token is refused at once.
    authenticator: new Authenticator({ providers: options.providers ?? [], cacheTtlMs: 0 }),
    ...(options.provisionTenants
      ? { provisioner: new TenantProvisioner({ client, informers, createTenants: false }) }
      : {}),
    rateLimit: { qps: 200, burst: 400 },
    metricsRegistry: registry,
    logger: pino({ level: "warn" }),
    ...options,
  });
  return {
    gateway,
    informers,
    registry,
    async stop() {
      await gateway.stop();
      await informers.stop();
    },
  };
}

/** A Tenant owned by one user, with declared namespaces, once the tenant controller reports it Ready. */
export async function createTenant(name: string, spec: Partial<Tenant["spec"]>): Promise<Tenant> {
  await custom.createClusterCustomObject({
    ...tenantsResource,
    body: { apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name }, spec },
  });
  return eventually(
    async () => {
      const tenant = (await custom.getClusterCustomObject({ ...tenantsResource, name })) as Tenant;
      const ready = tenant.status?.conditions?.find((c) => c.type === "Ready");
      assert.ok(
        ready?.status === "True" && ready.observedGeneration === tenant.metadata?.generation,
        `tenant ${name} is not Ready: ${JSON.stringify(ready)}`,
      );
      return tenant;
    },
    { timeoutMs: 60_000 },
  );
}

export async function deleteTenants(names: string[]): Promise<void> {
  for (const name of names) {
    await custom.deleteClusterCustomObject({ ...tenantsResource, name }).catch(() => {});
  }
}

/** Waits until a gateway's caches hold these namespaces of a tenant. */
export async function waitForNamespaces(informers: TenantInformers, namespaces: string[]): Promise<void> {
  await eventually(() => {
    for (const ns of namespaces)
      assert.ok(informers.tenantNamespaces.get(undefined, ns), `${ns} not cached yet`);
  });
}

/** A namespace placed in a tenant by the cluster administrator. */
export async function createTenantNamespace(tenant: string, name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name, labels: { [TENANT_LABEL]: tenant } } } });
}

function tempFile(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "tenantry-gateway-")), name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

function kubeconfigText(server: string, caPem: string, user: Record<string, string>): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "gateway",
        cluster: { server, "certificate-authority-data": Buffer.from(caPem).toString("base64") },
      },
    ],
    users: [{ name: "user", user }],
    contexts: [{ name: "gateway", context: { cluster: "gateway", user: "user" } }],
    "current-context": "gateway",
  });
}

/** The test user's own kubeconfig (their client certificate), pointed at the gateway (optionally under a path). */
export function gatewayKubeconfig(gateway: RunningGateway, user: TestUser, path = ""): string {
  const entry = user.kubeConfig.getCurrentUser()!;
  return tempFile(
    "kubeconfig",
    kubeconfigText(`${gateway.url}${path}`, gateway.caPem, {
      "client-certificate-data": Buffer.from(certPem(user)).toString("base64"),
      "client-key-data": entry.keyData!,
    }),
  );
}

/** A kubeconfig with a bearer token, pointed at the gateway. */
export function gatewayTokenKubeconfig(gateway: RunningGateway, token: string, path = ""): string {
  return tempFile("kubeconfig", kubeconfigText(`${gateway.url}${path}`, gateway.caPem, { token }));
}

function certPem(user: TestUser): string {
  return Buffer.from(user.kubeConfig.getCurrentUser()!.certData!, "base64").toString("utf8");
}

function keyPem(user: TestUser): string {
  return Buffer.from(user.kubeConfig.getCurrentUser()!.keyData!, "base64").toString("utf8");
}

/** Host, port and the path exactly as given: a URL string would have `..` and `%2e%2e` resolved away by the client. */
function target(gateway: RunningGateway, path: string): { host: string; port: number; path: string } {
  const url = new URL(gateway.url);
  return { host: url.hostname, port: Number(url.port), path };
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** For watches: the gateway ended the stream before the test hung up. */
  ended?: boolean;
}

/** A plain HTTPS request to the gateway, as a test user (client certificate) or with a token, or anonymously. */
export function call(
  gateway: RunningGateway,
  path: string,
  options: {
    user?: TestUser;
    token?: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...target(gateway, path),
        method: options.method ?? "GET",
        ca: gateway.caPem,
        ...(options.user ? { cert: certPem(options.user), key: keyPem(options.user) } : {}),
        headers: {
          accept: "application/json",
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(options.body ? { "content-type": "application/json" } : {}),
          ...options.headers,
        },
        agent: false,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    // An upgraded answer (101): what arrives within a second is the body.
    req.on("upgrade", (res, socket, head: Buffer) => {
      let body = head.toString("latin1");
      socket.on("data", (c: Buffer) => {
        body += c.toString("latin1");
      });
      setTimeout(() => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      }, 1000);
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

/** A watch through the gateway: collects the stream for `ms` milliseconds, then hangs up. */
export function watchFor(
  gateway: RunningGateway,
  path: string,
  user: TestUser,
  ms: number,
  during?: () => Promise<void>,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let body = "";
    const req = request(
      {
        ...target(gateway, path),
        ca: gateway.caPem,
        cert: certPem(user),
        key: keyPem(user),
        headers: { accept: "application/json", ...headers },
        agent: false,
      },
      (res) => {
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        let ended = false;
        const finish = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, ended });
        res.on("end", () => {
          ended = true;
          finish();
        });
        res.on("error", finish);
        const work = during ? during() : Promise.resolve();
        work
          .then(() => new Promise((r) => setTimeout(r, ms)))
          .then(() => {
            req.destroy();
            finish();
          }, reject);
      },
    );
    req.on("error", (err) => {
      if (!req.destroyed) reject(err);
    });
    req.end();
  });
}

/** Runs a long-running kubectl (`get -w`) and returns what it printed once stopped. */
export function spawnKubectl(kubeconfig: string, args: string[]): { child: ChildProcess; output(): string } {
  const child = spawn("kubectl", ["--kubeconfig", kubeconfig, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => {
    out += c.toString();
  });
  child.stderr!.on("data", (c: Buffer) => {
    out += c.toString();
  });
  return { child, output: () => out };
}

/** First column of kubectl's table output, without the header. */
export function names(tableOutput: string): string[] {
  return tableOutput
    .trim()
    .split("\n")
    .filter((line) => line.trim() && !line.startsWith("NAME"))
    .map((line) => line.split(/\s+/)[0]!)
    .sort();
}
