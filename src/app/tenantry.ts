import { hostname } from "node:os";
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
import { CONTROLLERS_LEASE, type RunningTenantry, type TenantryOptions } from "./options.js";

export {
  CONTROLLERS_LEASE,
  type RunningTenantry,
  TENANTRY_NAMESPACE,
  type TenantryOptions,
} from "./options.js";

/**
 * The composition root: tenantry's capabilities on one cluster, started by a Manager. Servers and
 * admission run on every replica; leader-only controllers on the replica holding the Lease.
 */
export async function startTenantry(options: TenantryOptions): Promise<RunningTenantry> {
  const lifecycle = new kube.Lifecycle(options.logger);
  try {
    // Made first: wrong options (storage, the webhook client CA) are refused before anything starts.
    const manager = new kube.Manager(capabilities(options), options.logger);
    const { context, clusterIdentity } = await sharedContext(options, lifecycle);
    await manager.start(context);
    const identity = options.identity ?? `${hostname()}-${process.pid}`;
    const lease = { client: context.client, namespace: context.namespace, name: CONTROLLERS_LEASE };
    const elector = (callbacks: kube.LeadershipCallbacks) =>
      new kube.LeaderElector({ lease, identity, logger: options.logger, ...callbacks });
    const leadership = manager.lead(context, elector, options.controllers !== false);
    return runningTenantry(context, clusterIdentity, manager, leadership);
  } catch (err) {
    // Nothing started on the way stays running (or keeps the process alive) after a failed start.
    await lifecycle.stop().catch(() => undefined);
    throw err;
  }
}

/** Every capability, listed in the order the leader starts their controllers. */
export function capabilities(options: TenantryOptions): kube.Capability[] {
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
    certificate.keeper(["webhooks", "identity", "clouds"]),
  ];
}
