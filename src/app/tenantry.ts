import { hostname } from "node:os";
import type { Logger } from "pino";
import { applyObject, type ClusterClient, LeaderElector, loadClusterClient } from "../kube/index.js";
import {
  installCrds,
  namespaceProvisionerClusterRole,
  QuotaAdmission,
  QuotaController,
  QuotaStore,
  TenantController,
  TenantInformers,
  tenantWebhooks,
} from "../tenants/index.js";
import {
  type AdmissionWebhook,
  applyWebhookConfigurations,
  ensureWebhookTls,
  WebhookServer,
  webhookConfigurations,
} from "../webhooks/index.js";
import { ALL_CRDS } from "./crds.js";

export const TENANTRY_NAMESPACE = "tenantry-system";

export interface TenantryOptions {
  /** Cluster name used in work-queue keys and logs. */
  cluster: string;
  kubeconfig: string;
  logger: Logger;
  /** Address the webhook server listens on and the API server calls (embedded default: loopback). */
  webhookHost?: string;
  webhookPort?: number;
  namespace?: string;
  /** Identity in leader election; default host name and pid. */
  identity?: string;
}

export interface RunningTenantry {
  client: ClusterClient;
  webhookUrl: string;
  informers: TenantInformers;
  isLeader(): boolean;
  stop(): Promise<void>;
}

/**
 * The composition root: wires tenantry's components to one cluster. Webhooks serve on every
 * replica (admission must always answer); controllers run only on the replica holding the Lease.
 */
export async function startTenantry(options: TenantryOptions): Promise<RunningTenantry> {
  const { logger } = options;
  const namespace = options.namespace ?? TENANTRY_NAMESPACE;
  const client = loadClusterClient(options.cluster, options.kubeconfig);
  await installCrds(client.kubeConfig, { crds: ALL_CRDS });
  await applyObject(client, namespaceProvisionerClusterRole);

  const informers = new TenantInformers(client);
  await informers.start();
  const store = new QuotaStore(client);
  const quotaAdmission = new QuotaAdmission({
    store,
    namespaces: informers.tenantNamespaces,
    quotas: informers.quotas,
  });
  const webhooks: AdmissionWebhook[] = [
    ...tenantWebhooks(informers, { ownNamespace: namespace }),
    quotaAdmission.webhook(),
  ];

  const host = options.webhookHost ?? "127.0.0.1";
  const tls = await ensureWebhookTls(client.kubeConfig, {
    namespace,
    secretName: "tenantry-webhook-tls",
    ipAddresses: [host],
    dnsNames: ["localhost", `tenantry-webhooks.${namespace}.svc`],
  });
  const server = new WebhookServer({
    tls,
    host,
    ...(options.webhookPort ? { port: options.webhookPort } : {}),
    logger,
  });
  for (const webhook of webhooks) server.register(webhook);
  const webhookUrl = await server.start();
  await applyWebhookConfigurations(
    client.kubeConfig,
    webhookConfigurations("tenantry", webhooks, { url: webhookUrl, caPem: tls.caPem }, namespace),
  );
  logger.info({ webhookUrl, webhooks: webhooks.map((w) => w.name) }, "admission webhooks registered");

  // Controllers are built afresh each time this replica starts leading: stopped ones do not restart.
  let controllers: { start(): Promise<void>; stop(): Promise<void> }[] = [];
  const elector = new LeaderElector({
    lease: { client, namespace, name: "tenantry-controllers" },
    identity: options.identity ?? `${hostname()}-${process.pid}`,
    logger,
    onStartedLeading: async () => {
      logger.info("leading: starting controllers");
      controllers = [
        new TenantController({ client, informers, logger }),
        new QuotaController({
          client,
          store,
          namespaces: informers.tenantNamespaces,
          quotas: informers.quotas,
          logger,
        }),
      ];
      for (const controller of controllers) await controller.start();
    },
    onStoppedLeading: async () => {
      logger.info("no longer leading: stopping controllers");
      await Promise.all(controllers.map((c) => c.stop()));
      controllers = [];
    },
  });
  elector.start();

  return {
    client,
    webhookUrl,
    informers,
    isLeader: () => elector.isLeader(),
    async stop() {
      await elector.stop();
      await server.stop();
      await informers.stop();
    },
  };
}
