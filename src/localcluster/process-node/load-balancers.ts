import { PatchStrategy, setHeaderOptions, type V1Service } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type ClusterClient, describeError } from "../../kube/index.js";
import { type NetworkPlan, podAddressOnUnderlay } from "./network/index.js";

/**
 * The cluster's load-balancer provider, as a cloud's or MetalLB is: a Service of type LoadBalancer
 * whose pods run on this node gets, as its ingress address, the mapped address (198.18.<k>.<n>) of
 * one ready pod — the address every local cluster's pods reach across the underlay (UDP), with
 * the Service's ports served by that pod as they are (port = targetPort). Checked every 2 s.
 */
export class LocalLoadBalancers {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly client: ClusterClient,
    private readonly plan: NetworkPlan,
    private readonly logger: Logger,
  ) {}

  start(): void {
    const tick = () => {
      this.sync()
        .catch((err) => this.logger.warn({ error: describeError(err) }, "load balancers not synced"))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, 2000);
        });
    };
    this.timer = setTimeout(tick, 0);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async sync(): Promise<void> {
    const services = await this.client.core.listServiceForAllNamespaces();
    for (const service of services.items) {
      if (service.spec?.type !== "LoadBalancer" || !service.spec.selector) continue;
      const address = await this.addressOf(service);
      const current = service.status?.loadBalancer?.ingress?.[0]?.ip;
      if (address === current || (!address && !current)) continue;
      await this.client.core.patchNamespacedServiceStatus(
        {
          name: service.metadata!.name!,
          namespace: service.metadata!.namespace!,
          body: { status: { loadBalancer: { ingress: address ? [{ ip: address, ipMode: "VIP" }] : [] } } },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      this.logger.info(
        { service: `${service.metadata?.namespace}/${service.metadata?.name}`, address },
        "load balancer",
      );
    }
  }

  private async addressOf(service: V1Service): Promise<string | undefined> {
    const labelSelector = Object.entries(service.spec!.selector!)
      .map(([k, v]) => `${k}=${v}`)
      .join(",");
    const pods = await this.client.core.listNamespacedPod({
      namespace: service.metadata!.namespace!,
      labelSelector,
    });
    const ready = pods.items
      .filter((p) => !p.metadata?.deletionTimestamp && p.status?.podIP)
      .filter((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
      .map((p) => podAddressOnUnderlay(this.plan, p.status!.podIP!))
      .filter((a): a is string => a !== undefined)
      .sort();
    return ready[0];
  }
}
