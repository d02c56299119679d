import type { Logger } from "pino";
import {
  applyObject,
  type Capability,
  type ClusterClient,
  type InformerCache,
  type SharedContext,
  Slot,
  type Started,
  StartedState,
} from "../kube/index.js";
import { TENANT_INFORMERS, TENANTS_API_VERSION, type TenantInformers } from "../tenants/index.js";
import type { AdmissionCheck, AdmissionSource } from "../webhooks/index.js";
import { NodeAdmission } from "./admission.js";
import type { NodeProvider } from "./api/node-provider.js";
import { NodeInformers } from "./informers.js";
import { NodeIdentityAdmission } from "./node-identity.js";
import { NodeProviderController } from "./provider-controller.js";
import { ProviderRegistry } from "./providers/registry.js";
import type { LocalMachineHost } from "./providers/simulated.js";
import { nodesRbac } from "./rbac.js";
import { WorkerNodeController, type WorkerNodeControllerOptions } from "./worker-node-controller.js";

/** The NodeProvider tenantry creates for the embedded default's simulated machines. */
export const SIMULATED_PROVIDER = "simulated";

export interface NodesOptions {
  client: ClusterClient;
  /** The process's shared cache; without it the capability watches on its own. */
  cache?: InformerCache;
  tenants: TenantInformers;
  /** tenantry's namespace (credentials Secrets by default). */
  namespace: string;
  clusterId: string;
  logger: Logger;
  /** The harness's machines (embedded default only): a NodeProvider `simulated` is created for them. */
  localMachines?: LocalMachineHost;
  /** How machines reach kube-apiserver; default what tenantry's kubeconfig says. */
  apiServer?: WorkerNodeControllerOptions["apiServer"];
  /** Controller timings (tests and benchmarks shorten them). */
  timings?: Pick<WorkerNodeControllerOptions, "pollMs" | "runningCheckMs" | "orphanGraceMs">;
}

/**
 * Worker nodes on demand (capability C6): the caches, the admission webhooks (served on every
 * replica) and the controllers (run by the leader, built afresh each time it starts leading).
 */
export class Nodes {
  readonly informers: NodeInformers;
  readonly registry: ProviderRegistry;
  private readonly admission: NodeAdmission;
  private readonly identity: NodeIdentityAdmission;

  constructor(private readonly options: NodesOptions) {
    this.informers = new NodeInformers(options.client, options.cache);
    this.registry = new ProviderRegistry({
      client: options.client,
      namespace: options.namespace,
      ...(options.localMachines ? { localMachines: options.localMachines } : {}),
    });
    this.admission = new NodeAdmission({
      client: options.client,
      informers: this.informers,
      tenants: options.tenants,
      ownNamespace: options.namespace,
    });
    this.identity = new NodeIdentityAdmission(this.informers, options.tenants);
  }

  /** Installs the RBAC (and the simulated NodeProvider) and fills the caches. */
  async start(): Promise<void> {
    for (const object of nodesRbac) await applyObject(this.options.client, object);
    if (this.options.localMachines) {
      const provider: NodeProvider = {
        apiVersion: TENANTS_API_VERSION,
        kind: "NodeProvider",
        metadata: { name: SIMULATED_PROVIDER, labels: { "app.kubernetes.io/managed-by": "tenantry" } },
        spec: { type: "simulated" },
      };
      await applyObject(this.options.client, provider);
    }
    await this.informers.start();
  }

  webhooks(): AdmissionCheck[] {
    return [...this.admission.webhooks(), ...this.identity.webhooks()];
  }

  controllers(): { start(): Promise<void>; stop(): Promise<void> }[] {
    const { client, logger, clusterId, tenants } = this.options;
    return [
      new NodeProviderController({ client, informers: this.informers, registry: this.registry, logger }),
      new WorkerNodeController({
        client,
        informers: this.informers,
        tenants,
        registry: this.registry,
        clusterId,
        logger,
        ...(this.options.apiServer ? { apiServer: this.options.apiServer } : {}),
        ...this.options.timings,
      }),
    ];
  }

  stop(): Promise<void> {
    return this.informers.stop();
  }
}

/** Worker nodes' caches and provider registry. */
export const NODES = new Slot<Nodes>("worker nodes");

/** What tenantry's options say of worker nodes. */
export type NodesCapabilityOptions = Pick<NodesOptions, "localMachines" | "apiServer" | "timings">;

/** Worker nodes on demand as one of tenantry's capabilities: needs the tenants' informers. */
export class NodesCapability implements Capability, AdmissionSource {
  readonly name = "nodes";
  readonly dependsOn = ["tenants"];
  private readonly started = new StartedState<Nodes>("nodes");

  constructor(private readonly options: NodesCapabilityOptions = {}) {}

  async start({
    client,
    cache,
    namespace,
    clusterId,
    logger,
    lifecycle,
    values,
  }: SharedContext): Promise<Started> {
    const nodes = new Nodes({
      client,
      cache,
      tenants: values.get(TENANT_INFORMERS),
      namespace,
      clusterId,
      logger,
      ...this.options,
    });
    await nodes.start();
    lifecycle.started("nodes", nodes);
    this.started.set(values.set(NODES, nodes));
    return { leaderControllers: () => nodes.controllers() };
  }

  admissionChecks(): AdmissionCheck[] {
    return this.started.get().webhooks();
  }
}
