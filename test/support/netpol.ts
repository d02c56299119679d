/**
 * NetworkPolicy checked with connections, as Kubernetes' own e2e tests do it (test/e2e/network/
 * netpol): pods a, b, c in namespaces x, y, z of the home cluster's process node, each serving HTTP
 * on ports 80 and 81, and a truth table of which pod can connect to which, probed from inside each
 * pod's network namespace (the same packets its containers would send).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import type { CoreV1Api, V1Container, V1Pod } from "@kubernetes/client-node";
import { LOCAL_IMAGES } from "../../src/localcluster/index.js";
import { readRecordedNetwork } from "../../src/localcluster/process-node/network/claims.js";
import { networkPlan, podNamespace, podNetworkId } from "../../src/localcluster/process-node/network/plan.js";
import { testEnvironment } from "./clusters.js";
import { eventually } from "./eventually.js";
import { podReady, processNodePod } from "./process-node.js";

export const PORTS = [80, 81] as const;

/** Answers every HTTP request with its pod's name, on each port listed in PORTS (comma-separated). */
const SERVE = `const h=require("http");for(const p of process.env.PORTS.split(","))h.createServer((q,s)=>s.end(process.env.HOSTNAME)).listen(+p)`;

/**
 * One process serving HTTP on `ports` (below 1024 it asks for NET_BIND_SERVICE, as agnhost does):
 * node, which the busybox image (this machine's tools) has.
 */
export function serverContainer(ports: readonly number[]): V1Container {
  return {
    name: "serve",
    image: LOCAL_IMAGES.busybox,
    command: ["sh", "-c", 'exec node -e "$SERVE"'],
    env: [
      { name: "SERVE", value: SERVE },
      { name: "PORTS", value: ports.join(",") },
    ],
    ports: ports.map((containerPort) => ({ containerPort })),
    securityContext: {
      capabilities: { ...(ports.some((p) => p < 1024) ? { add: ["NET_BIND_SERVICE"] } : {}), drop: ["ALL"] },
    },
    readinessProbe: { tcpSocket: { port: ports[0] as never }, periodSeconds: 1 },
  };
}

export interface ProbePod {
  namespace: string;
  name: string;
  ip: string;
  /** Its network namespace on this machine. */
  netns: string;
}

/**
 * Creates a pod serving `ports` (default 80 and 81) with `labels`, waits until Ready. (A tenant's
 * pod, whose capabilities its tenant limits, serves an unprivileged port instead.)
 */
export async function serverPod(
  api: CoreV1Api,
  namespace: string,
  name: string,
  labels: Record<string, string>,
  ports: readonly number[] = PORTS,
): Promise<ProbePod> {
  await api.createNamespacedPod({
    namespace,
    body: processNodePod(name, [serverContainer(ports)], { terminationGracePeriodSeconds: 1 }, labels),
  });
  const pod = await eventually(
    async () => {
      const found = await api.readNamespacedPod({ namespace, name });
      assert.ok(podReady(found), `${namespace}/${name} is not Ready`);
      return found;
    },
    { timeoutMs: 300_000 },
  );
  return probePod(pod);
}

/** Where a pod of the home cluster's process node can be probed from. */
export async function probePod(pod: V1Pod, cluster = "home"): Promise<ProbePod> {
  const recorded = await readRecordedNetwork(join(testEnvironment().dir, cluster));
  assert.ok(recorded, `the ${cluster} cluster records its pod network`);
  const plan = networkPlan(recorded.index, recorded.podCidr);
  return {
    namespace: pod.metadata!.namespace!,
    name: pod.metadata!.name!,
    ip: pod.status!.podIP!,
    netns: podNamespace(plan, podNetworkId(pod.metadata!.uid!)),
  };
}

/**
 * Which of `targets` (`ip:port`) answer HTTP from inside `from`'s network namespace, each within 2 s
 * of silence. node:http, not fetch: fetch loads its client on first use, which on a busy machine
 * took most of a deadline that started before it, so every target looked refused.
 */
export function reachable(from: ProbePod, targets: string[]): Promise<boolean[]> {
  const script = `const h=require("http");Promise.all(${JSON.stringify(targets)}.map(t=>new Promise(ok=>{const q=h.get("http://"+t+"/",{timeout:2000},s=>{s.resume();ok(s.statusCode===200)});q.on("timeout",()=>{q.destroy();ok(false)});q.on("error",()=>ok(false))}))).then(r=>console.log(JSON.stringify(r)))`;
  return new Promise((resolve, reject) => {
    const child = spawn("nsenter", [`--net=/run/netns/${from.netns}`, "--", process.execPath, "-e", script]);
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on("close", (code) =>
      code === 0
        ? resolve(JSON.parse(out) as boolean[])
        : reject(new Error(`probe from ${from.name}: ${err}`)),
    );
  });
}

const label = (p: ProbePod) => `${p.namespace.split("-")[0]}/${p.name}`;

/**
 * Probes every pod from every pod on `port`; resolves with the table, rows the clients, as text
 * (`X` reached, `.` refused), for comparison with the expected one.
 */
export async function truthTable(pods: ProbePod[], port: number): Promise<string> {
  const targets = pods.map((p) => `${p.ip}:${port}`);
  const rows = await Promise.all(pods.map((from) => reachable(from, targets)));
  return rows
    .map((row, i) => `${label(pods[i]!).padEnd(6)} ${row.map((ok) => (ok ? "X" : ".")).join("")}`)
    .join("\n");
}

/** The expected table: `allowed(from, to)` for every pair. */
export function expectedTable(pods: ProbePod[], allowed: (from: ProbePod, to: ProbePod) => boolean): string {
  return pods
    .map((from) => `${label(from).padEnd(6)} ${pods.map((to) => (allowed(from, to) ? "X" : ".")).join("")}`)
    .join("\n");
}

/** Waits until probing gives the expected table on `port` (policies take effect within seconds). */
export async function expectConnectivity(
  pods: ProbePod[],
  port: number,
  allowed: (from: ProbePod, to: ProbePod) => boolean,
): Promise<void> {
  const expected = expectedTable(pods, allowed);
  await eventually(
    async () => {
      const actual = await truthTable(pods, port);
      assert.equal(actual, expected, `port ${port}: reached (X) or not (.), rows are clients`);
    },
    { timeoutMs: 60_000, intervalMs: 1000 },
  );
}
