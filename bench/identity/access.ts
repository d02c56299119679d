/**
 * TokenReview and SubjectAccessReview latency: kube-apiserver's token and authorization webhooks,
 * served by tenantry's access server, under open-loop load. Starts a local cluster of the `home`
 * spec (access webhooks wired to tenantry) in a temporary folder, runs tenantry in this process,
 * sets up two tenants, built-in users, owned objects and an AccessGrant, then POSTs reviews straight
 * to the access server from a load generator in a process of its own, one scenario at a time.
 * Prints one table; removes everything it started.
 *
 * Run: npm run bench:access [-- --rate 1000] [--reference-rate 200] [--seconds 10] [--connections 32]
 *      [--users 100] [--only TEXT] [--keep]
 * --only: just the scenarios whose name contains TEXT, e.g. `--only SAR`.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { request } from "node:https";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { generateKeyPair, SignJWT } from "jose";
import { pino } from "pino";
import { startEmbeddedTenantry } from "../../src/app/embedded.js";
import type { RunningTenantry } from "../../src/app/tenantry.js";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import { AUTHENTICATE_PATH, AUTHORIZE_PATH } from "../../src/identity/index.js";
import { ClusterClient, isAlreadyExists, loadClusterClient } from "../../src/kube/index.js";
import { ClusterHarness, type ClusterState, defaultClusters } from "../../src/localcluster/index.js";
import { TENANTS_API_VERSION, USER_LABEL } from "../../src/tenants/index.js";
import {
  boundedAll,
  type Cell,
  cpuSecondsOfPid,
  MemorySampler,
  machineBusySeconds,
  ms,
  percentile,
  printTable,
} from "../support/report.js";
import type { PostPlan, PostResult } from "./loadgen.js";

const { values: args } = parseArgs({
  options: {
    rate: { type: "string", default: "1000" },
    "reference-rate": { type: "string", default: "200" },
    seconds: { type: "string", default: "10" },
    connections: { type: "string", default: "32" },
    users: { type: "string", default: "100" },
    only: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const RATE = Number(args.rate);
const REFERENCE_RATE = Number(args["reference-rate"]);
const SECONDS = Number(args.seconds);
const CONNECTIONS = Number(args.connections);
const USERS = Number(args.users);
if (
  ![RATE, REFERENCE_RATE, SECONDS].every((n) => Number.isFinite(n) && n > 0) ||
  ![CONNECTIONS, USERS].every((n) => Number.isInteger(n) && n > 0)
) {
  process.stderr.write(
    "usage: bench/identity/access.ts [--rate R] [--reference-rate R] [--seconds S] [--connections N] [--users N] [--only TEXT] [--keep]\n",
  );
  process.exit(2);
}
const RATES = [...new Set([REFERENCE_RATE, RATE])].sort((a, b) => a - b);
const WARMUP_SECONDS = 1;
const TIMEOUT_MS = 10_000;

const TENANT_A = "bench-a";
const TENANT_B = "bench-b";
const NS_A = `${TENANT_A}-dev`;
const NS_B = `${TENANT_B}-dev`;
const OWNER_A = "owner-a";
const OWNER_B = "owner-b";
const MEMBER_A = "member-a";
const MEMBER_B = "member-b";
const GRANT = "share";
const OWNED_CONFIGMAPS = 20;
const OWNED_PODS = 10;
const PASSWORD = "bench-password-1";
const userName = (i: number) => `user-${String(i).padStart(4, "0")}`;

const progress = (line: string) =>
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

type Decision = "allowed" | "denied" | "none" | "authenticated" | "refused";

interface Scenario {
  name: string;
  review: "token" | "access";
  expected: Decision;
  /** Request bodies for a run of `count` requests; sent in turn. */
  bodies(count: number): Promise<string[]>;
}

interface Row {
  scenario: number;
  rate: number;
  result: PostResult;
  cpu: { tenantry: number; apiserver: number; machine: number };
}

// -- helpers --------------------------------------------------------------------------------

function pidOf(state: ClusterState, component: string): number {
  const proc = state.processes.find((p) => p.component === component);
  if (!proc) throw new Error(`${state.name}: no ${component} process`);
  return proc.pid;
}

/** kube-apiserver's webhook client certificate: the review endpoints answer only over it. */
let reviewClient: { certPem: string; keyPem: string } | undefined;

function postJson(url: string, body: unknown, caPem: string): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request(
      url,
      {
        method: "POST",
        ca: caPem,
        ...(reviewClient ? { cert: reviewClient.certPem, key: reviewClient.keyPem } : {}),
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(text) },
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const raw = Buffer.concat(chunks).toString();
          try {
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(raw) });
          } catch {
            resolve({ status: res.statusCode ?? 0, json: raw });
          }
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer within 10 s")));
    req.on("error", reject);
    req.end(text);
  });
}

/** The decision a TokenReview or SubjectAccessReview answer carries. */
function decisionOf(review: Scenario["review"], answer: unknown): Decision {
  const status = (answer as { status?: Record<string, unknown> }).status ?? {};
  if (review === "token") return status.authenticated === true ? "authenticated" : "refused";
  if (status.allowed === true) return "allowed";
  return status.denied === true ? "denied" : "none";
}

const OUTCOME_FIELDS: Record<Scenario["review"], string[]> = {
  token: ["status.authenticated"],
  access: ["status.allowed", "status.denied"],
};

function decisionsOf(review: Scenario["review"], outcomes: Record<string, number>): Map<Decision, number> {
  const counts = new Map<Decision, number>();
  for (const [key, n] of Object.entries(outcomes)) {
    const status: Record<string, unknown> = {};
    for (const part of key.split(",")) {
      const [path, value] = part.split("=");
      status[path!.replace(/^status\./, "")] = value === "true";
    }
    const decision = decisionOf(review, { status });
    counts.set(decision, (counts.get(decision) ?? 0) + n);
  }
  return counts;
}

/** A client that acts as `user` through the admin's credentials (Impersonate-User). */
function impersonating(state: ClusterState, user: string): ClusterClient {
  const admin = new KubeConfig();
  admin.loadFromFile(state.kubeconfig);
  const as = new KubeConfig();
  as.loadFromOptions({
    clusters: admin.getClusters(),
    users: admin.getUsers().map((u) => ({ ...u, impersonateUser: user })),
    contexts: admin.getContexts(),
    currentContext: admin.getCurrentContext(),
  });
  return new ClusterClient(`${state.name}-as-${user}`, as);
}

async function until<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not within ${timeoutMs / 1000} s${last ? ` (${(last as Error).message})` : ""}`,
      );
    await sleep(250);
  }
}

// -- setup ----------------------------------------------------------------------------------

interface Setup {
  tokens: string[];
  invalidTokens: string[];
  ownedObjects: { resource: "pods" | "configmaps"; name: string }[];
  ownerLabel: string;
  notes: string[];
}

function tenant(name: string, owner: string, users: string[]): KubernetesObject {
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "Tenant",
    metadata: { name },
    spec: {
      owners: [{ kind: "User", name: owner }],
      namespaces: [{ name: "dev" }],
      users: users.map((u) => ({ name: u, role: "edit" })),
    },
  } as KubernetesObject;
}

function configMap(name: string): KubernetesObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: NS_A, labels: { [USER_LABEL]: OWNER_A } },
    data: { owner: OWNER_A },
  } as KubernetesObject;
}

function pod(name: string): KubernetesObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS_A, labels: { [USER_LABEL]: OWNER_A } },
    spec: {
      containers: [
        {
          name: "app",
          image: "registry.k8s.io/pause:3.10",
          resources: { limits: { cpu: "10m", memory: "16Mi" } },
          securityContext: { allowPrivilegeEscalation: false },
        },
      ],
    },
  } as KubernetesObject;
}

/** Tokens the built-in identity service refuses: tampered, signed by an unknown key, expired, not a JWT. */
async function invalidTokens(identity: BuiltinIdentity, issuer: string, count: number): Promise<string[]> {
  const users = await Promise.all(
    Array.from({ length: Math.min(count, 10) }, (_, i) => identity.readUser(userName(i))),
  );
  const known = users.filter((u) => u !== undefined);
  if (!known.length) throw new Error("no built-in user to build invalid tokens from");
  const expired = await Promise.all(known.map((u) => identity.issue(u, 1)));
  const forger = await generateKeyPair("ES256");
  const tokens: string[] = [];
  for (let i = 0; tokens.length < count; i++) {
    const kind = i % 4;
    if (kind === 0) {
      // Claims another user under a genuine signature: the signature no longer matches.
      const [header, payload, signature] = (await identity.issue(known[i % known.length]!, 3600)).token.split(
        ".",
      );
      const claims = JSON.parse(Buffer.from(payload!, "base64url").toString());
      const forged = Buffer.from(JSON.stringify({ ...claims, preferred_username: OWNER_A })).toString(
        "base64url",
      );
      tokens.push(`${header}.${forged}.${signature}`);
    } else if (kind === 1) {
      const now = Math.floor(Date.now() / 1000);
      tokens.push(
        await new SignJWT({ preferred_username: OWNER_A, groups: [] })
          .setProtectedHeader({ alg: "ES256", kid: `forged-${i}`, typ: "JWT" })
          .setIssuer(issuer)
          .setAudience("tenantry")
          .setSubject("forged")
          .setJti(`forged-${i}`)
          .setIssuedAt(now)
          .setExpirationTime(now + 3600)
          .sign(forger.privateKey),
      );
    } else if (kind === 2) {
      tokens.push(expired[i % expired.length]!.token);
    } else {
      tokens.push(randomBytes(48).toString("base64url"));
    }
  }
  // The expired ones were issued for 1 s.
  await sleep(2_100);
  return tokens;
}

async function setUp(state: ClusterState, tenantry: RunningTenantry): Promise<Setup> {
  const identity = tenantry.builtinIdentity;
  if (!identity) throw new Error("tenantry runs without its built-in identity service");
  const client = loadClusterClient(`${state.name}-bench`, state.kubeconfig);
  const notes: string[] = [];
  const benchUsers = Array.from({ length: USERS }, (_, i) => userName(i));

  progress(`tenants ${TENANT_A} (owner, member, ${USERS} users) and ${TENANT_B}`);
  await client.objects.create(tenant(TENANT_A, OWNER_A, [MEMBER_A, ...benchUsers]));
  await client.objects.create(tenant(TENANT_B, OWNER_B, [MEMBER_B]));
  for (const [name, ns] of [
    [TENANT_A, NS_A],
    [TENANT_B, NS_B],
  ] as const) {
    await until(`namespace ${ns}`, 120_000, async () => {
      await client.core.readNamespace({ name: ns });
      return tenantry.informers.tenantOfNamespace(ns)?.metadata?.name === name ? true : undefined;
    });
  }

  progress(`${USERS} built-in users in ${TENANT_A}, one token each`);
  const users = await boundedAll(benchUsers, 8, (name) =>
    identity.createUser({ name, password: PASSWORD, tenant: TENANT_A, groups: ["bench"] }),
  );
  const tokens = await Promise.all(users.map(async (u) => (await identity.issue(u, 3600)).token));

  progress(`${OWNED_CONFIGMAPS} configmaps and ${OWNED_PODS} pods created by ${OWNER_A} in ${NS_A}`);
  const asOwner = impersonating(state, OWNER_A);
  const ownedObjects: Setup["ownedObjects"] = [];
  const create = async (object: KubernetesObject) => {
    await asOwner.objects.create(object).catch((err: unknown) => {
      if (!isAlreadyExists(err)) throw err;
    });
    return true;
  };
  // The owner's RoleBinding may lag the namespace: retry until the API server lets them create.
  for (let i = 0; i < OWNED_CONFIGMAPS; i++) {
    const name = `owned-${String(i).padStart(2, "0")}`;
    await until(`configmap ${name}`, 60_000, () => create(configMap(name)));
    ownedObjects.push({ resource: "configmaps", name });
  }
  try {
    for (let i = 0; i < OWNED_PODS; i++) {
      const name = `owned-${String(i).padStart(2, "0")}`;
      await until(`pod ${name}`, 20_000, () => create(pod(name)));
      ownedObjects.push({ resource: "pods", name });
    }
  } catch (err) {
    notes.push(`Pods could not be created (${(err as Error).message}); the delete scenario uses configmaps.`);
  }
  const first = (await client.objects.read({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: ownedObjects[0]!.name, namespace: NS_A },
  })) as KubernetesObject;
  const ownerLabel = first.metadata?.labels?.[USER_LABEL] ?? "(none)";

  progress(`AccessGrant ${NS_A}/${GRANT} for tenant ${TENANT_B}`);
  await client.objects.create({
    apiVersion: TENANTS_API_VERSION,
    kind: "AccessGrant",
    metadata: { name: GRANT, namespace: NS_A },
    spec: {
      grantees: [{ kind: "Tenant", name: TENANT_B }],
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] }],
    },
  } as KubernetesObject);

  progress("invalid tokens");
  const invalid = await invalidTokens(identity, tenantry.accessUrl, Math.max(USERS, 100));
  return { tokens, invalidTokens: invalid, ownedObjects, ownerLabel, notes };
}

// -- scenarios ------------------------------------------------------------------------------

const tokenReview = (token: string) =>
  JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } });

function accessReview(
  user: string,
  groups: string[],
  attrs: { namespace: string; verb: string; resource: string; name?: string },
): string {
  return JSON.stringify({
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    spec: {
      user,
      groups: [...groups, "system:authenticated"],
      resourceAttributes: { group: "", version: "v1", ...attrs },
    },
  });
}

function scenarios(setup: Setup, identity: BuiltinIdentity): Scenario[] {
  const fixed = (bodies: string[]) => async () => bodies;
  const memberGroups = ["bench", `tenantry:tenant:${TENANT_A}`];
  const ownerBGroups = [`tenantry:tenant:${TENANT_B}`];
  const configmaps = setup.ownedObjects.filter((o) => o.resource === "configmaps").map((o) => o.name);
  const readVerbs = ["get", "list", "watch"] as const;
  let users: Awaited<ReturnType<BuiltinIdentity["readUser"]>>[] | undefined;
  return [
    {
      name: `TokenReview, valid token, ${setup.tokens.length} users (cached)`,
      review: "token",
      expected: "authenticated",
      bodies: fixed(setup.tokens.map(tokenReview)),
    },
    {
      name: "TokenReview, valid token, each used once",
      review: "token",
      expected: "authenticated",
      async bodies(count) {
        users ??= await Promise.all(setup.tokens.map((_, i) => identity.readUser(userName(i))));
        const known = users.filter((u) => u !== undefined);
        const issued = await boundedAll(
          Array.from({ length: count }, (_, i) => known[i % known.length]!),
          16,
          (u) => identity.issue(u, 3600),
        );
        return issued.map((t) => tokenReview(t.token));
      },
    },
    {
      name: "TokenReview, invalid token",
      review: "token",
      expected: "refused",
      bodies: fixed(setup.invalidTokens.map(tokenReview)),
    },
    {
      name: "SAR, member reads in tenant namespace",
      review: "access",
      expected: "none",
      bodies: fixed(
        configmaps.flatMap((name, i) =>
          ["pods", "configmaps"].map((resource) => {
            const verb = readVerbs[i % readVerbs.length]!;
            return accessReview(MEMBER_A, memberGroups, {
              namespace: NS_A,
              verb,
              resource,
              ...(verb === "get" ? { name } : {}),
            });
          }),
        ),
      ),
    },
    {
      name: "SAR, member deletes another user's object",
      review: "access",
      expected: "denied",
      bodies: fixed(
        setup.ownedObjects.map((o) =>
          accessReview(MEMBER_A, memberGroups, {
            namespace: NS_A,
            verb: "delete",
            resource: o.resource,
            name: o.name,
          }),
        ),
      ),
    },
    {
      name: "SAR, other tenant's owner, AccessGrant",
      review: "access",
      expected: "allowed",
      bodies: fixed(
        configmaps.flatMap((name) => [
          accessReview(OWNER_B, ownerBGroups, { namespace: NS_A, verb: "get", resource: "configmaps", name }),
          accessReview(OWNER_B, ownerBGroups, { namespace: NS_A, verb: "list", resource: "configmaps" }),
        ]),
      ),
    },
    {
      name: "SAR, member in a non-tenant namespace",
      review: "access",
      expected: "none",
      bodies: fixed(
        configmaps.map((name, i) =>
          accessReview(MEMBER_A, memberGroups, {
            namespace: "default",
            verb: readVerbs[i % readVerbs.length]!,
            resource: "configmaps",
            ...(i % readVerbs.length === 0 ? { name } : {}),
          }),
        ),
      ),
    },
  ];
}

// -- load -----------------------------------------------------------------------------------

interface LoadRun {
  result: PostResult;
  /** CPU seconds used by this process (tenantry) and by kube-apiserver + etcd while the load ran. */
  cpu: { tenantry: number; apiserver: number; machine: number };
}

/**
 * Runs one open-loop load in a child process (see loadgen.ts). CPU is sampled when the generator
 * says it starts and stops sending, so its own start-up does not count.
 */
function runLoad(plan: PostPlan, clusterPids: number[]): Promise<LoadRun> {
  const cpuOfCluster = async () =>
    (await Promise.all(clusterPids.map(cpuSecondsOfPid))).reduce((a, b) => a + b, 0);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "loadgen.ts")], {
      cwd: join(import.meta.dirname, "..", ".."),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const sample = async () => ({
      self: process.cpuUsage(),
      cluster: await cpuOfCluster(),
      machine: await machineBusySeconds(),
    });
    let started: ReturnType<typeof sample> | undefined;
    let ended: ReturnType<typeof sample> | undefined;
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
      if (!started && stderr.includes("load:start")) started = sample();
      if (!ended && stderr.includes("load:end")) ended = sample();
    });
    child.on("error", reject);
    child.on("close", async (code) => {
      if (code !== 0) {
        reject(
          new Error(`load generator exited with ${code}: ${stderr.trim().split("\n").slice(-5).join("\n")}`),
        );
        return;
      }
      try {
        const result = JSON.parse(stdout) as PostResult;
        const a = await (started ?? sample());
        const b = await (ended ?? sample());
        const self = process.cpuUsage(a.self);
        resolve({
          result,
          cpu: {
            tenantry: (self.user + self.system) / 1e6,
            apiserver: b.cluster - a.cluster,
            machine: b.machine - a.machine,
          },
        });
      } catch (err) {
        reject(new Error(`load generator printed no result: ${(err as Error).message}\n${stderr}`));
      }
    });
    child.stdin.end(JSON.stringify(plan));
  });
}

/**
 * Waits until the server answers a scenario's request within 50 ms three times in a row: work left
 * from requests the generator gave up on must not slow the next row. Returns how long it took.
 */
async function drain(url: string, body: string, caPem: string): Promise<number> {
  const started = performance.now();
  const request = JSON.parse(body) as unknown;
  let prompt = 0;
  while (prompt < 3 && performance.now() - started < 60_000) {
    const t = performance.now();
    await postJson(url, request, caPem).catch(() => undefined);
    prompt = performance.now() - t < 50 ? prompt + 1 : 0;
    if (prompt < 3) await sleep(100);
  }
  return performance.now() - started;
}

/** Sends each scenario's first request until it gets the expected decision (caches may lag the setup). */
async function preflight(tenantry: RunningTenantry, list: Scenario[]): Promise<string[]> {
  const notes: string[] = [];
  for (const s of list) {
    const [body] = await s.bodies(1);
    const url = `${tenantry.accessUrl}${s.review === "token" ? AUTHENTICATE_PATH : AUTHORIZE_PATH}`;
    let seen: string = "";
    try {
      await until(`${s.name}: ${s.expected}`, 30_000, async () => {
        const answer = await postJson(url, JSON.parse(body!), tenantry.accessCaPem);
        seen = answer.status === 200 ? decisionOf(s.review, answer.json) : `HTTP ${answer.status}`;
        return seen === s.expected ? true : undefined;
      });
    } catch {
      notes.push(`Setup check: "${s.name}" answered ${seen || "nothing"}, expected ${s.expected}.`);
    }
  }
  return notes;
}

// -- main -----------------------------------------------------------------------------------

async function bench(harness: ClusterHarness, dir: string): Promise<void> {
  const spec = defaultClusters.find((c) => c.name === "home");
  if (!spec?.accessWebhooks) throw new Error("the home cluster spec has no access webhooks");
  const loadAtStart = loadavg()[0]!;
  progress("starting local cluster home");
  const [state] = await harness.up([spec]);
  const apiserverPid = pidOf(state!, "kube-apiserver");
  const etcdPid = pidOf(state!, "etcd");
  const logger = pino({ level: "info" }, pino.destination({ dest: join(dir, "tenantry.log"), sync: false }));
  const rssBeforeMiB = process.memoryUsage().rss / 1024 / 1024;
  progress("starting tenantry");
  let tenantry: RunningTenantry | undefined;
  try {
    tenantry = await startEmbeddedTenantry(state!, logger);
    const access = state!.accessWebhooks!;
    reviewClient = {
      certPem: await readFile(access.clientCertFile, "utf8"),
      keyPem: await readFile(access.clientKeyFile, "utf8"),
    };
    const running = tenantry;
    const setup = await setUp(state!, running);
    const only = args.only?.toLowerCase();
    const list = scenarios(setup, running.builtinIdentity!).filter(
      (s) => !only || s.name.toLowerCase().includes(only),
    );
    if (!list.length) throw new Error(`no scenario name contains "${args.only}"`);
    const notes = [...setup.notes, ...(await preflight(running, list))];
    const rssAfterSetupMiB = process.memoryUsage().rss / 1024 / 1024;

    const rows: Row[] = [];
    const memory = new MemorySampler({ apiserver: apiserverPid }).start();
    let loadgenPeakMiB = 0;
    for (const rate of RATES) {
      for (const [index, s] of list.entries()) {
        const url = `${running.accessUrl}${s.review === "token" ? AUTHENTICATE_PATH : AUTHORIZE_PATH}`;
        const plan = async (r: number, seconds: number): Promise<PostPlan> => ({
          url,
          bodies: await s.bodies(Math.round(r * seconds)),
          rate: r,
          durationMs: seconds * 1000,
          timeoutMs: TIMEOUT_MS,
          connections: CONNECTIONS,
          caPem: running.accessCaPem,
          ...(reviewClient ? { client: reviewClient } : {}),
          outcomeFields: OUTCOME_FIELDS[s.review],
        });
        progress(`${s.name}: warm-up, then ${rate}/s for ${SECONDS} s`);
        await runLoad(await plan(REFERENCE_RATE, WARMUP_SECONDS), []);
        const run = await runLoad(await plan(rate, SECONDS), [apiserverPid, etcdPid]);
        loadgenPeakMiB = Math.max(loadgenPeakMiB, run.result.rssPeakMiB);
        rows.push({ scenario: index, rate, result: run.result, cpu: run.cpu });
        if (run.result.errorSamples.length)
          progress(`  errors: ${run.result.errors}, e.g. ${run.result.errorSamples.join(" | ")}`);
        const drainedMs = await drain(url, (await s.bodies(1))[0]!, running.accessCaPem);
        if (drainedMs > 1_000) progress(`  answered promptly again after ${(drainedMs / 1000).toFixed(1)} s`);
        await sleep(1_000);
      }
    }
    const mem = memory.stop();
    const rssAfterMiB = process.memoryUsage().rss / 1024 / 1024;

    const cells: Cell[][] = rows
      .sort((a, b) => a.scenario - b.scenario || a.rate - b.rate)
      .map(({ scenario, rate, result: r, cpu }) => {
        const s = list[scenario]!;
        const seconds = r.elapsedMs / 1000;
        const counts = decisionsOf(s.review, r.outcomes);
        const kinds: Decision[] =
          s.review === "token" ? ["authenticated", "refused"] : ["allowed", "denied", "none"];
        const pct = (cpuSeconds: number) =>
          Number.isFinite(cpuSeconds) ? (100 * cpuSeconds) / seconds : NaN;
        return [
          s.name,
          String(rate),
          (r.completed / seconds).toFixed(0),
          ms(percentile(r.latencies, 50)),
          ms(percentile(r.latencies, 99)),
          ms(Math.max(...r.latencies)),
          String(r.errors),
          kinds.map((k) => String(counts.get(k) ?? 0)).join("/"),
          s.expected,
          pct(cpu.tenantry).toFixed(0),
          pct(r.cpuSeconds).toFixed(0),
          pct(cpu.apiserver).toFixed(0),
          pct(cpu.machine).toFixed(0),
        ];
      });
    const cores = cpus().length;
    printTable(
      `TokenReview and SubjectAccessReview latency: open loop, ${SECONDS} s per row`,
      [
        "scenario",
        "target/s",
        "achieved/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "errors",
        "answers",
        "expected",
        "tenantry CPU %",
        "loadgen CPU %",
        "apiserver+etcd CPU %",
        "machine CPU %",
      ],
      cells,
      [
        `Reviews POSTed over HTTPS on loopback to tenantry's access server (${AUTHENTICATE_PATH}, ${AUTHORIZE_PATH}), as kube-apiserver's`,
        "webhooks send them, from a load generator in a process of its own: request i due at start + i/rate, latency counted from",
        `when it was due, so queueing shows. At most ${CONNECTIONS} keep-alive connections. Each row follows a ${WARMUP_SECONDS} s warm-up at ${REFERENCE_RATE}/s.`,
        `Errors: not HTTP 200 or no answer within ${TIMEOUT_MS / 1000} s. Answers: TokenReview authenticated/refused; SubjectAccessReview`,
        "allowed/denied/none (none: no opinion, RBAC decides). Expected: the decision the scenario should get.",
        `Valid tokens: ES256 JWTs of ${setup.tokens.length} built-in users of ${TENANT_A}. "Cached": one token per user, sent in turn; tenantry`,
        'reuses a successful answer for 10 s. "Each used once": a fresh token per request, so every one is verified (as tenantry',
        "sees tokens when kube-apiserver's own 10 s cache is in front). Invalid tokens, in turn: a genuine token with its",
        "username changed (signature fails), a token signed by an unknown key, an expired token, random bytes.",
        `SAR: member reads (get/list/watch pods and configmaps in ${NS_A}: tenant cache only); member delete of a pod or configmap`,
        `of ${OWNER_A} (label ${USER_LABEL}=${setup.ownerLabel}): tenantry GETs the object from kube-apiserver for its label on every`,
        `review; ${OWNER_B} get/list configmaps in ${NS_A}: allowed by AccessGrant ${GRANT} to tenant ${TENANT_B}; member in "default".`,
        "CPU: % of one core while the load ran (tenantry: this whole process; apiserver+etcd: the cluster's kube-apiserver and",
        `etcd; machine: every process, out of ${cores * 100}). The ${cores} cores are shared by tenantry, the load generator, the cluster and`,
        `whatever else runs here (load average ${loadAtStart.toFixed(2)} before the cluster started). tenantry logs at info to a file (each allow`,
        "or deny is logged).",
        `Memory (RSS MiB): this process, tenantry in it: ${rssBeforeMiB.toFixed(0)} before tenantry started, ${rssAfterSetupMiB.toFixed(0)} after setup,`,
        `${(mem.peak.self ?? NaN).toFixed(0)} peak under load, ${rssAfterMiB.toFixed(0)} after the runs. Load generator (own process): ${loadgenPeakMiB.toFixed(0)} peak.`,
        `kube-apiserver: ${(mem.peak.apiserver ?? NaN).toFixed(0)} peak.`,
        ...notes,
      ],
    );
  } finally {
    await tenantry?.stop().catch((err) => progress(`stopping tenantry failed: ${err}`));
    logger.flush();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-access-"));
  const harness = new ClusterHarness({ dir: join(dir, "clusters"), log: () => {} });
  progress(`working in ${dir}`);
  // The cluster's processes run in their own process groups: Ctrl-C must stop them explicitly.
  process.once("SIGINT", () => {
    progress("interrupted: stopping the cluster");
    void harness
      .reset()
      .catch(() => {})
      .finally(() => process.exit(130));
  });
  let failed = false;
  try {
    await harness.components();
    await bench(harness, dir);
  } catch (err) {
    failed = true;
    process.stdout.write(`\nbench stopped: ${(err as Error).stack ?? err}\n`);
    // Keep the logs past the cleanup below.
    const logs = await mkdtemp(join(tmpdir(), "tenantry-bench-access-logs-"));
    await cp(join(dir, "tenantry.log"), join(logs, "tenantry.log")).catch(() => {});
    await cp(join(dir, "clusters", "home", "logs"), join(logs, "home"), { recursive: true }).catch(() => {});
    progress(`logs: ${logs} (tenantry.log, home/<component>.log)`);
  } finally {
    await harness.reset().catch((err) => progress(`reset failed: ${err}`));
    if (args.keep) progress(`kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
  if (failed) process.exitCode = 1;
}

await main();
