import { hostname } from "node:os";
import { Gauge, type Registry } from "prom-client";
import { AccessCapability } from "../access/index.js";
import { BackupCapability } from "../backup/index.js";
import { CloudsCapability } from "../clouds/index.js";
import { ClustersCapability } from "../clusters/index.js";
import { DashboardCapability } from "../dashboard/index.js";
import { GatewayCapability } from "../gateway/index.js";
import { IdentityCapability } from "../identity/index.js";
import * as kube from "../kube/index.js";
import { MonitorCapability } from "../monitor/index.js";
import { MulticlusterCapability } from "../multicluster/index.js";
import { NodesCapability } from "../nodes/index.js";
import { RuntimesCapability } from "../runtimes/index.js";
import { StorageCapability } from "../storage/index.js";
import { TENANT_LABEL, TenantsCapability } from "../tenants/index.js";
import { AdmissionCapability, WebhookCertificateCapability } from "../webhooks/index.js";
import { sharedContext } from "./context.js";
import { runningTenantry } from "./handle.js";
import { controllersLease, ElectorAfter, fenceOutPreviousVersion } from "./leases.js";
import { CAPABILITY_NAMES, type RunningTenantry, type TenantryOptions } from "./options.js";

export { leaderLeases } from "./doctor.js";
export { controllersLease, LEGACY_CONTROLLERS_LEASE } from "./leases.js";
export {
  CAPABILITY_NAMES,
  LEADING_CAPABILITIES,
  type RunningTenantry,
  TENANTRY_NAMESPACE,
  type TenantryOptions,
} from "./options.js";

/**
 * The composition root: tenantry's capabilities on one cluster (those `options.capabilities`
 * names, with what they depend on), started by a Manager. Servers and admission run on every
 * replica; each capability's leader-only controllers on the replica holding its Lease.
 */
export async function startTenantry(options: TenantryOptions): Promise<RunningTenantry> {
  const lifecycle = new kube.Lifecycle(options.logger);
  try {
    // Made first: wrong options (storage, the webhook client CA, a capability's name) are refused
    // before anything starts.
    const named = options.capabilities ?? CAPABILITY_NAMES;
    const manager = new kube.Manager(selectedCapabilities(options, named), options.logger);
    const { context, clusterIdentity } = await sharedContext(options, lifecycle);
    await manager.start(context);
    const leadership = lead(manager, context, options, named);
    return runningTenantry(context, clusterIdentity, manager, leadership);
  } catch (err) {
    // Nothing started on the way stays running (or keeps the process alive) after a failed start.
    await lifecycle.stop().catch(() => undefined);
    throw err;
  }
}

/**
 * The capabilities named and those they depend on. A dependency starts for what it provides to
 * others (informers, the authenticator, the registry) and serves nothing: its servers are off.
 */
export function selectedCapabilities(options: TenantryOptions, named: readonly string[]): kube.Capability[] {
  const unknown = named.filter((n) => !(CAPABILITY_NAMES as readonly string[]).includes(n));
  if (unknown.length || named.length === 0) {
    throw new Error(
      `capabilities: ${unknown.length ? `unknown ${unknown.map((n) => `"${n}"`).join(", ")}` : "none named"}; known: ${CAPABILITY_NAMES.join(", ")}`,
    );
  }
  const started = new Set(kube.withDependencies(capabilities(options), named).map((c) => c.name));
  const only = (name: string) => !named.includes(name);
  const serving: TenantryOptions = {
    ...options,
    ...(only("webhooks") ? { webhooks: false } : {}),
    ...(only("identity") ? { identityApi: false } : {}),
    ...(only("gateway") ? { gateway: false } : {}),
    ...(only("runtimes") ? { runtimesAdmin: false, runtimesProxy: false } : {}),
    ...(only("clouds") ? { logicalClouds: false } : {}),
    ...(only("dashboard") ? { dashboard: false } : {}),
  };
  return capabilities(serving, started).filter((c) => started.has(c.name) || started.has(keeperOf(c)));
}

/** The keeper of the webhook certificate starts with the certificate. */
function keeperOf(capability: kube.Capability): string {
  return capability.name === "webhook certificate keeper" ? "webhook certificate" : capability.name;
}

/**
 * Competes for the Lease `tenantry-<capability>` of each capability whose controllers this process
 * runs (`options.controllers`, default every one named), once a replica of this version holds the
 * previous version's one Lease `tenantry-controllers` (so none of that version leads beside it).
 */
function lead(
  manager: kube.Manager,
  context: kube.SharedContext,
  options: TenantryOptions,
  named: readonly string[],
): kube.LeaderControllers {
  const identity = options.identity ?? `${hostname()}-${process.pid}`;
  const { client, namespace } = context;
  let fenced: Promise<void> | undefined;
  const previousVersionFenced = () => {
    fenced ??= fenceOutPreviousVersion(context, identity);
    return fenced;
  };
  const elector = (capability: string, callbacks: kube.LeadershipCallbacks) => {
    const lease = { client, namespace, name: controllersLease(capability) };
    const elector = new kube.LeaderElector({ lease, identity, logger: options.logger, ...callbacks });
    return new ElectorAfter(previousVersionFenced(), elector);
  };
  const leading = options.controllers === false ? [] : (options.controllers ?? named);
  const leadership = manager.lead(context, elector, leading);
  leadingGauge(context.metrics, leadership);
  return leadership;
}

/** `tenantry_leading{capability}`: 1 while this replica runs that capability's controllers, else 0. */
function leadingGauge(metrics: Registry, leadership: kube.LeaderControllers): void {
  const name = "tenantry_leading";
  metrics.removeSingleMetric(name);
  new Gauge({
    name,
    help: "Whether this replica holds the capability's Lease and runs its leader-only controllers (one series per capability it competes for).",
    labelNames: ["capability"],
    registers: [metrics],
    collect() {
      this.reset();
      const now = leadership.leading();
      for (const capability of leadership.electing())
        this.set({ capability }, now.includes(capability) ? 1 : 0);
    },
  });
}

/** Every capability, listed in the order the leader starts their controllers. */
export function capabilities(options: TenantryOptions, started?: ReadonlySet<string>): kube.Capability[] {
  const certificate = new WebhookCertificateCapability(options.webhookCertificate);
  const [tenants, multicluster, access] = [
    new TenantsCapability(),
    new MulticlusterCapability(options.multicluster),
    new AccessCapability(),
  ];
  const nodes = new NodesCapability(options.nodes);
  return [
    certificate,
    tenants,
    new ClustersCapability(options.clusterRegistry),
    multicluster,
    new RuntimesCapability(options),
    new MonitorCapability(options.monitor),
    new BackupCapability({
      ...(options.backup ? { backup: options.backup } : {}),
      adminApi: options.runtimesAdmin !== false,
    }),
    new StorageCapability(options.storage),
    new CloudsCapability(options.logicalClouds),
    nodes,
    access,
    // The declared order of admission: mutators change the object in this order, and the quota
    // reservation runs after every other validator allowed the request. The nodes' checks come after
    // the tenants' pod checks: the node pool's tolerations are in place when they look.
    new AdmissionCapability([tenants, multicluster, access, nodes], {
      webhooks: options.webhooks,
      clientCa: options.webhookClientCa,
      port: options.webhookPort,
      tenantLabel: TENANT_LABEL,
    }),
    new IdentityCapability(options),
    new GatewayCapability(options),
    new DashboardCapability(options.dashboard),
    certificate.keeper(["webhooks", "identity", "clouds"].filter((s) => !started || started.has(s))),
  ];
}
