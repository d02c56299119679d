import type { V1Ingress } from "@kubernetes/client-node";
import type { AdmissionRequest } from "../../webhooks/index.js";
import { ingressHosts } from "../informers.js";
import { KeyedMutex } from "./keyed-mutex.js";

/** What the claims read: Ingresses by host and namespaces' tenants (TenantInformers, from their caches). */
export interface IngressHostIndex {
  ingressesWithHost(host: string): V1Ingress[];
  /** The cached Ingress of that name, if the cache has seen it. */
  ingress(namespace: string, name: string): V1Ingress | undefined;
  /** The tenant a namespace belongs to, by name; undefined for a namespace of no tenant. */
  tenantNameOfNamespace(namespace: string): string | undefined;
}

/** Who holds a hostname: an Ingress in a namespace, of a tenant or of none. */
interface Holder {
  namespace: string;
  name: string;
  /** undefined: a namespace outside every tenant. */
  tenant: string | undefined;
}

interface PendingClaim extends Holder {
  expiresAt: number;
}

export interface IngressHostClaimsOptions {
  /** How long an admitted claim counts before its Ingress shows up in the cache. */
  pendingTtlMs?: number;
  now?: () => number;
}

/** Where a hostname appears in an Ingress, for the message. */
function hostField(ingress: V1Ingress, host: string): string {
  const rule = (ingress.spec?.rules ?? []).findIndex((r) => r.host === host);
  if (rule >= 0) return `spec.rules[${rule}].host`;
  for (const [i, tls] of (ingress.spec?.tls ?? []).entries()) {
    const j = (tls.hosts ?? []).indexOf(host);
    if (j >= 0) return `spec.tls[${i}].hosts[${j}]`;
  }
  return "spec.rules";
}

/**
 * A hostname belongs to one tenant (Capsule's hostname collision check at cluster scope): an
 * Ingress of a tenant may not route or serve TLS for a host an Ingress outside that tenant already
 * uses — another tenant's, or one in a namespace of no tenant. Holders are found through the
 * informer's index by host, never by listing. Decisions are taken one at a time, and a host just
 * admitted counts until its Ingress reaches the cache (or a while, if it never does), so two tenants racing for one host cannot
 * both win on one tenantry. Hosts are compared exactly (Kubernetes keeps them lower case); a
 * wildcard host is a name of its own.
 */
export class IngressHostClaims {
  private readonly mutex = new KeyedMutex();
  private readonly pending = new Map<string, PendingClaim[]>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(
    private readonly index: IngressHostIndex,
    options: IngressHostClaimsOptions = {},
  ) {
    this.ttlMs = options.pendingTtlMs ?? 30_000;
    this.now = options.now ?? Date.now;
  }

  /** undefined when the Ingress may use its hosts, else the refusal naming the field. */
  async check(request: AdmissionRequest, tenant: string): Promise<string | undefined> {
    const ingress = request.object as V1Ingress;
    const namespace = request.namespace!;
    const name = ingress.metadata?.name ?? request.name ?? "";
    const before = new Set(request.oldObject ? ingressHosts(request.oldObject as V1Ingress) : []);
    // Hosts it already had were checked when it got them.
    const added = ingressHosts(ingress).filter((host) => !before.has(host));
    if (added.length === 0) return;
    // One decision at a time: claims are rare, and a global order rules out two tenants winning one host.
    return this.mutex.run("ingress-hosts", async () => {
      for (const host of added) {
        const rival = this.holders(host).find(
          (h) => !(h.namespace === namespace && h.name === name) && h.tenant !== tenant,
        );
        if (rival) {
          return `${hostField(ingress, host)}: host "${host}" is already used by an Ingress outside tenant "${tenant}"; a hostname belongs to one tenant`;
        }
      }
      if (!request.dryRun) {
        const expiresAt = this.now() + this.ttlMs;
        for (const host of added) {
          const claims = (this.pending.get(host) ?? []).filter(
            (c) => !(c.namespace === namespace && c.name === name),
          );
          this.pending.set(host, [...claims, { namespace, name, tenant, expiresAt }]);
        }
      }
      return undefined;
    });
  }

  private holders(host: string): Holder[] {
    const cached = this.index.ingressesWithHost(host).map((ingress) => {
      const namespace = ingress.metadata?.namespace ?? "";
      return {
        namespace,
        name: ingress.metadata?.name ?? "",
        tenant: this.index.tenantNameOfNamespace(namespace),
      };
    });
    const now = this.now();
    // Once the cache has seen a claimed Ingress, the cache speaks for it (also when it is deleted).
    const pending = (this.pending.get(host) ?? []).filter(
      (c) => c.expiresAt > now && !this.index.ingress(c.namespace, c.name),
    );
    if (pending.length) this.pending.set(host, pending);
    else this.pending.delete(host);
    return [...cached, ...pending];
  }
}
