import { readFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";

/** What the test runner (scripts/test.ts) tells test files about the clusters it started once for the run. */
export interface TestEnvironment {
  /** Folder of the harness that owns the clusters (logs live below it). */
  dir: string;
  clusters: {
    name: string;
    kubeconfig: string;
    server: string;
    /** The client certificate its kube-apiserver presents to webhooks, and the CA that signed it. */
    webhookClient?: { caFile: string; certFile: string; keyFile: string };
  }[];
  /** tenantry on each cluster (home, edge-1, edge-2): its Prometheus metrics among the rest. */
  tenantries?: { cluster: string; clusterId: string; logFile: string; metricsUrl?: string }[];
  /** The S3-compatible store (versitygw) started for the run: backups of the test tenantry go there. */
  objectStore: { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string };
  /** tenantry running on the home cluster for the whole test run. */
  tenantry: {
    cluster: string;
    webhookUrl: string;
    /** Identity REST API, OIDC issuer, and the home cluster's token and authorization webhooks. */
    accessUrl: string;
    accessCaPem: string;
    /** kube-apiserver's client certificate for the review endpoints (/authenticate, /authorize). */
    reviewClient?: { certFile: string; keyFile: string };
    logFile: string;
    /** The runtimes Admin API of the home cluster's tenantry. */
    runtimesAdminUrl?: string;
    /** Its runtimes proxy: runtimes at `/r/<token>/`, the Admin API at every other path. */
    runtimesProxyUrl?: string;
    /** The logical-clouds API (DCM) of the home cluster's tenantry, and the CA of its certificate. */
    logicalCloudsUrl?: string;
    logicalCloudsCaPem?: string;
    /** The web dashboard of the home cluster's tenantry. */
    dashboardUrl?: string;
  };
}

let cached: TestEnvironment | undefined;

export function testEnvironment(): TestEnvironment {
  if (cached) return cached;
  const file = process.env.TENANTRY_TEST_ENV;
  if (!file) {
    throw new Error(
      "TENANTRY_TEST_ENV is not set: integration tests need the shared clusters that `npm test` starts",
    );
  }
  cached = JSON.parse(readFileSync(file, "utf8")) as TestEnvironment;
  return cached;
}

/** Admin kubeconfig of one of the shared test clusters (`home`, `edge-1`, `edge-2`). */
export function testKubeConfig(cluster = "home"): KubeConfig {
  const entry = testEnvironment().clusters.find((c) => c.name === cluster);
  if (!entry) throw new Error(`no test cluster named "${cluster}"`);
  const kc = new KubeConfig();
  kc.loadFromFile(entry.kubeconfig);
  return kc;
}

/** The files of the client certificate a shared cluster's kube-apiserver presents to webhooks. */
export function webhookClientOf(cluster = "home"): { caFile: string; certFile: string; keyFile: string } {
  const entry = testEnvironment().clusters.find((c) => c.name === cluster);
  if (!entry?.webhookClient)
    throw new Error(`the test cluster "${cluster}" has no webhook client certificate`);
  return entry.webhookClient;
}

/** Who a webhook server of a test answers: the shared cluster's kube-apiserver. */
export function apiServerCallers(cluster = "home"): { clientCaPem: string } {
  return { clientCaPem: readFileSync(webhookClientOf(cluster).caFile, "utf8") };
}

/** A DNS-1123 name unique to this test run, so tests sharing a cluster never collide. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
}
