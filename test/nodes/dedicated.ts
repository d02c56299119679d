/**
 * A cluster of a test's own, with tenantry and simulated machines the test controls: for the
 * faults that need tenantry stopped or its machines broken, which the shared clusters of the run
 * must not see.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { startEmbeddedTenantry } from "../../src/app/embedded.js";
import type { RunningTenantry } from "../../src/app/tenantry.js";
import { applyObject } from "../../src/kube/index.js";
import {
  ClusterHarness,
  type ClusterState,
  MachineHost,
  type MachineHostOptions,
} from "../../src/localcluster/index.js";
import type { LocalMachineHost } from "../../src/nodes/index.js";
import { TENANTS_API_VERSION, type Tenant } from "../../src/tenants/index.js";
import { kubectl } from "../support/kubectl.js";

export interface DedicatedCluster {
  state: ClusterState;
  kc: KubeConfig;
  kubeconfigPath: string;
  machines: MachineHost;
  tenantry: RunningTenantry;
  logFile: string;
  /** kubectl as `user` (impersonated by the cluster admin: admission sees that user). */
  kubectlAs(user: string, args: string[], input?: string): ReturnType<typeof kubectl>;
  /** Starts tenantry again (after stopping it), with these machines (a wrapper of `machines`, say). */
  startTenantry(host?: LocalMachineHost): Promise<RunningTenantry>;
  createTenant(name: string, spec: Tenant["spec"]): Promise<void>;
  stop(): Promise<void>;
}

export async function startDedicatedCluster(
  name: string,
  hostOptions: Omit<MachineHostOptions, "dir"> = {},
  host?: (machines: MachineHost) => LocalMachineHost,
): Promise<DedicatedCluster> {
  const dir = mkdtempSync(join(tmpdir(), "tenantry-nodes-"));
  const harness = new ClusterHarness({ dir, log: () => {} });
  // Tenant users reach WorkerNodes and NodeProviders through tenantry's authorizer (RBAC gives
  // them nothing there), as on the run's shared clusters.
  const [state] = await harness.up([{ name, nodes: 1, accessWebhooks: true }]);
  const machines = new MachineHost({ dir: join(dir, name, "machines"), ...hostOptions });
  const logFile = join(dir, "tenantry.log");
  const logger = pino({ level: "info" }, pino.destination({ dest: logFile, sync: false }));
  const start = (local: LocalMachineHost) =>
    startEmbeddedTenantry(state!, logger, {
      nodes: { localMachines: local, timings: { pollMs: 500, runningCheckMs: 2000, orphanGraceMs: 10_000 } },
    });
  const cluster: DedicatedCluster = {
    state: state!,
    kc: (() => {
      const kc = new KubeConfig();
      kc.loadFromFile(state!.kubeconfig);
      return kc;
    })(),
    kubeconfigPath: state!.kubeconfig,
    machines,
    tenantry: await start(host ? host(machines) : machines),
    logFile,
    // Bounded, so an API server that stops answering fails the test instead of hanging the run.
    kubectlAs: (user, args, input) =>
      kubectl(state!.kubeconfig, ["--request-timeout=60s", "--as", user, ...args], input),
    async startTenantry(local) {
      cluster.tenantry = await start(local ?? machines);
      return cluster.tenantry;
    },
    async createTenant(tenant, spec) {
      await applyObject(cluster.tenantry.client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "Tenant",
        metadata: { name: tenant },
        spec,
      } as Tenant);
    },
    async stop() {
      await cluster.tenantry.stop().catch(() => {});
      machines.close();
      await machines.stopAll();
      await harness.reset();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}
