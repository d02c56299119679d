/**
 * A runtimes namespace made ready for a start, in whichever cluster the runtime runs:
 *
 * - in the Runtime objects' own cluster the Admin API created it in the user's tenant (quota,
 *   admission policies and the tenant's isolation come from the tenants capability); it is created
 *   again if it went missing;
 * - in another runtimes cluster it is created there for the same tenant. tenantry runs on that
 *   cluster too, so the tenant's machinery there applies as soon as the Tenant exists there: if the
 *   runtimes cluster has no Tenant of that name, a mirror of the tenant's policies is kept there
 *   (owners, users, quota limits, limit ranges, pod security, allowed classes, isolation; no
 *   declared namespaces, templates or node pool, and owners may create no namespaces there),
 *   labelled `tenantry.dev/mirror-of`. A Tenant of that name that the runtimes cluster's
 *   administrator made is used as it is.
 *
 * Every runtimes namespace also gets the NetworkPolicy `tenantry-runtimes` (ingress from the
 * namespace itself and from tenantry's namespace, where the runtimes proxy runs; from nowhere
 * else) and the runtime pods' service account `tenantry-runtime-agent` (no API token mounted).
 */
import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import { PatchStrategy } from "@kubernetes/client-node";
import { applyIfChanged, applyObject, isAlreadyExists, isNotFound } from "../../kube/index.js";
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NAMESPACE_ORIGIN_LABEL,
  RUNTIME_USER_ANNOTATION,
  TENANTS_API_VERSION,
  type Tenant,
} from "../../tenants/index.js";
import { runtimeNamespaceAnnotations, runtimeNamespaceLabels } from "../api/placement.js";
import { AGENT_SERVICE_ACCOUNT } from "./manifest.js";
import type { Target } from "./targets.js";

export const RUNTIMES_NETWORK_POLICY = "tenantry-runtimes";
/** On a Tenant kept in a runtimes cluster as a copy of one elsewhere: the cluster it copies. */
export const MIRROR_LABEL = "tenantry.dev/mirror-of";
const POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce";

export interface RuntimeNamespacesOptions {
  /** The tenant's object in the Runtime objects' cluster. */
  tenantOf: (name: string) => Tenant | undefined;
  /** Where the runtimes proxy runs (tenantry's namespace). */
  tenantryNamespace: string;
  /** The Runtime objects' cluster, named on mirrored Tenants. */
  homeCluster: string;
  /** A namespace of the Runtime objects' cluster from the shared cache, if it holds it. */
  cachedNamespace?: (name: string) => V1Namespace | undefined;
}

export class NamespaceNotReady extends Error {}

/** The policy fields of `tenant`, for a runtimes cluster. */
export function mirrorTenant(tenant: Tenant, homeCluster: string): Tenant {
  const {
    namespaces: _namespaces,
    templates: _templates,
    firstLoginGroups: _firstLoginGroups,
    nodePool: _nodePool,
    namespacePrefix: _namespacePrefix,
    quota,
    ...policies
  } = tenant.spec;
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "Tenant",
    metadata: {
      name: tenant.metadata!.name!,
      labels: { [MIRROR_LABEL]: homeCluster, [MANAGED_BY_LABEL]: MANAGED_BY },
    },
    spec: { ...policies, namespaceQuota: 0, ...(quota?.hard ? { quota: { hard: quota.hard } } : {}) },
  } as Tenant;
}

export class RuntimeNamespaces {
  /** `<cluster>/<namespace>/<uid>` whose policy and account were applied by this process. */
  private readonly prepared = new Set<string>();

  constructor(private readonly options: RuntimeNamespacesOptions) {}

  /**
   * Makes `namespace` ready in `target`; a message for the Namespace step. `owner`: the tenant and
   * user whose runtimes namespace it is (segregated mode); none for the combined one.
   */
  async ensure(target: Target, namespace: string, owner?: { tenant: string; user: string }): Promise<string> {
    const { client } = target;
    // The cache first (a user's namespace is made by the Admin API before the Runtime); read when
    // it does not show it (yet), or in another runtimes cluster.
    let current = target.local ? this.options.cachedNamespace?.(namespace) : undefined;
    if (!current) {
      try {
        current = await client.core.readNamespace({ name: namespace });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    if (current?.metadata?.deletionTimestamp) {
      throw new NamespaceNotReady(`namespace ${namespace} in cluster ${target.name} is being deleted`);
    }
    const labels = runtimeNamespaceLabels(owner?.tenant);
    const annotations = owner ? runtimeNamespaceAnnotations(owner.user) : {};
    if (!current) {
      const extra = owner && !target.local ? await this.ensureTenant(target, owner.tenant) : {};
      try {
        current = await client.core.createNamespace({
          body: { metadata: { name: namespace, labels: { ...labels, ...extra }, annotations } },
        });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        current = await client.core.readNamespace({ name: namespace });
      }
    }
    await this.keepMarks(target, current, labels, annotations);
    // Keyed by uid: a namespace deleted and made again needs its policy and account again.
    const key = `${target.name}/${namespace}/${current.metadata?.uid}`;
    if (!this.prepared.has(key)) {
      await Promise.all(this.contents(namespace).map((object) => applyObject(client, object)));
      this.prepared.add(key);
    }
    return `namespace ${namespace} ready in cluster ${target.name}`;
  }

  /**
   * Its tenant, isolation and user, set again when missing (a namespace from before it was marked
   * as its user's gets the mark); the pod security level is its administrator's (or its tenant's).
   * A namespace marked as another user's is never used.
   */
  private async keepMarks(
    target: Target,
    current: V1Namespace,
    labels: Record<string, string>,
    annotations: Record<string, string>,
  ): Promise<void> {
    const name = current.metadata!.name!;
    const user = current.metadata?.annotations?.[RUNTIME_USER_ANNOTATION];
    const wanted = annotations[RUNTIME_USER_ANNOTATION];
    if (wanted !== undefined && user !== undefined && user !== wanted) {
      throw new NamespaceNotReady(
        `namespace ${name} in cluster ${target.name} is the runtimes namespace of another user`,
      );
    }
    const { [POD_SECURITY_ENFORCE_LABEL]: _level, ...required } = labels;
    const differs = (want: Record<string, string>, have: Record<string, string> | undefined) =>
      Object.entries(want).some(([k, v]) => have?.[k] !== v);
    if (differs(required, current.metadata?.labels) || differs(annotations, current.metadata?.annotations)) {
      // A merge patch, not an apply: the namespace's other labels are the tenants capability's.
      await target.client.objects.patchRaw(
        { apiVersion: "v1", kind: "Namespace", metadata: { name, labels: required, annotations } },
        PatchStrategy.MergePatch,
      );
    }
  }

  /** The Tenant in a runtimes cluster (a mirror unless its administrator made one); the namespace labels it implies. */
  private async ensureTenant(target: Target, name: string): Promise<Record<string, string>> {
    const home = this.options.tenantOf(name);
    if (!home) throw new NamespaceNotReady(`tenant ${name} does not exist`);
    const ref = { apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name } };
    let there: Tenant | undefined;
    try {
      there = (await target.client.objects.read(ref)) as Tenant;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    let tenant = there;
    if (!there || there.metadata?.labels?.[MIRROR_LABEL]) {
      const mirror = mirrorTenant(home, this.options.homeCluster);
      await applyIfChanged(target.client, mirror as KubernetesObject, there as KubernetesObject | undefined);
      tenant = mirror;
    }
    return {
      [NAMESPACE_ORIGIN_LABEL]: "owner",
      [POD_SECURITY_ENFORCE_LABEL]: tenant?.spec.podSecurity?.level ?? "baseline",
    };
  }

  private contents(namespace: string): KubernetesObject[] {
    const metadata = { namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } };
    return [
      {
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: { ...metadata, name: RUNTIMES_NETWORK_POLICY },
        spec: {
          podSelector: {},
          policyTypes: ["Ingress"],
          ingress: [
            {
              from: [
                { podSelector: {} },
                {
                  namespaceSelector: {
                    matchLabels: { "kubernetes.io/metadata.name": this.options.tenantryNamespace },
                  },
                },
              ],
            },
          ],
        },
      } as KubernetesObject,
      {
        apiVersion: "v1",
        kind: "ServiceAccount",
        metadata: { ...metadata, name: AGENT_SERVICE_ACCOUNT },
        automountServiceAccountToken: false,
      } as KubernetesObject,
    ];
  }
}
