import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  applyStatus,
  type ClusterClient,
  type Condition,
  Controller,
  describeError,
  Informer,
  isConflict,
  isNotFound,
  objectKey,
  type ReconcileContext,
  reconcileDone,
  setCondition,
} from "../../kube/index.js";
import { EXEMPT_NAMESPACES } from "../../webhooks/index.js";
import { TENANTS_API_VERSION } from "../api/group.js";
import type { NamespaceTemplate } from "../api/namespace-template.js";
import { formatOwnerSummary, formatUsageSummary } from "../api/summary.js";
import type { Tenant, TenantStatus } from "../api/tenant.js";
import type { TenantResourceQuota } from "../api/tenant-resource-quota.js";
import type { TenantInformers } from "../informers.js";
import { MANAGED_BY, MANAGED_BY_LABEL, NAMESPACE_ORIGIN_LABEL, TENANT_LABEL } from "./labels.js";
import { tenantQuotas } from "./quotas.js";
import {
  declaredNamespaceName,
  namespaceContents,
  namespaceObject,
  ownersProvisionerBinding,
  TemplateError,
} from "./render.js";

/** Kinds the controller writes in every tenant namespace and watches for drift. */
const MANAGED_KINDS = [
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding" },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role" },
  { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy" },
  { apiVersion: "v1", kind: "LimitRange" },
] as const;

/** Objects rendered from templates, remembered on the namespace so that removed ones are deleted. */
const TEMPLATE_OBJECTS_ANNOTATION = "tenantry.dev/template-objects";

/** Never part of a tenant: the cluster's own namespaces and tenantry's. */
const SYSTEM_NAMESPACES = new Set([...EXEMPT_NAMESPACES, "default", "tenantry-system"]);

class ObjectFailure extends Error {}

function objectId(o: KubernetesObject): string {
  return `${o.apiVersion}/${o.kind}/${o.metadata?.name}`;
}

export interface TenantControllerOptions {
  client: ClusterClient;
  informers: TenantInformers;
  logger: Logger;
  workers?: number;
}

/**
 * Keeps each Tenant's namespaces and everything inside them (owner and user RBAC, isolation
 * policy, limit ranges, template objects, quotas) as the Tenant says, and reports what it found in
 * the Tenant's status, even when reconciling fails.
 */
export class TenantController {
  private readonly tenants: Informer<Tenant>;
  private readonly templates: Informer<NamespaceTemplate>;
  private readonly namespaces: Informer<V1Namespace>;
  private readonly quotas: Informer<TenantResourceQuota>;
  private readonly managed: Informer<KubernetesObject>[];
  private readonly controller: Controller;
  private readonly cluster: string;

  constructor(private readonly options: TenantControllerOptions) {
    const { client } = options;
    this.cluster = client.name;
    // Shared with the quota controller and the webhooks; started and stopped by their owner.
    this.tenants = options.informers.tenants;
    this.templates = options.informers.templates;
    this.namespaces = options.informers.tenantNamespaces;
    this.quotas = options.informers.quotas;
    this.managed = MANAGED_KINDS.map((k) =>
      Informer.forResource<KubernetesObject>(client, {
        ...k,
        labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
      }),
    );
    this.controller = new Controller({
      name: "tenants",
      workers: options.workers ?? 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    const byTenantLabel = (o: KubernetesObject) => {
      const tenant = o.metadata?.labels?.[TENANT_LABEL];
      return tenant ? [objectKey(this.cluster, undefined, tenant)] : [];
    };
    this.controller.watch(this.tenants);
    this.controller.watch(this.namespaces, byTenantLabel);
    this.controller.watch(this.quotas, (q) => [objectKey(this.cluster, undefined, q.spec.tenant)]);
    for (const informer of this.managed) this.controller.watch(informer, byTenantLabel);
    this.controller.watch(this.templates, (template) =>
      this.tenants
        .list()
        .filter((t) => usesTemplate(t, template.metadata!.name!))
        .map((t) => objectKey(this.cluster, undefined, t.metadata!.name!)),
    );
  }

  /** Starts the controller's own informers (managed objects); the shared ones run already. */
  async start(): Promise<void> {
    for (const informer of this.managed) informer.start();
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    await Promise.all(this.managed.map((i) => i.stop()));
  }

  stats() {
    return this.controller.stats();
  }

  private async apply(object: KubernetesObject): Promise<void> {
    try {
      await applyObject(this.options.client, object);
    } catch (err) {
      const where = object.metadata?.namespace
        ? `${object.metadata.namespace}/${object.metadata.name}`
        : object.metadata?.name;
      throw new ObjectFailure(`${object.kind} ${where}: ${describeError(err)}`);
    }
  }

  /** A conditional apply (the object carries its resourceVersion); false when it changed or is gone. */
  private async applyIfUnchanged(object: KubernetesObject): Promise<boolean> {
    try {
      await applyObject(this.options.client, object);
      return true;
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) return false;
      throw new ObjectFailure(`${object.kind} ${object.metadata?.name}: ${describeError(err)}`);
    }
  }

  private async remove(object: KubernetesObject): Promise<void> {
    try {
      await this.options.client.objects.delete(
        object,
        undefined,
        undefined,
        undefined,
        undefined,
        "Background",
      );
    } catch (err) {
      if (!isNotFound(err))
        throw new ObjectFailure(
          `deleting ${object.kind} ${object.metadata?.namespace}/${object.metadata?.name}: ${describeError(err)}`,
        );
    }
  }

  private async reconcile(ctx: ReconcileContext) {
    const tenant = this.tenants.get(undefined, ctx.ref.name);
    if (!tenant || tenant.metadata?.deletionTimestamp) return reconcileDone();
    const name = tenant.metadata!.name!;
    const status: TenantStatus = { ownerSummary: formatOwnerSummary(tenant.spec.owners) };
    let failure: Error | undefined;
    try {
      status.namespaces = await this.reconcileNamespaces(tenant);
      status.namespaceCount = status.namespaces.length;
      for (const quota of tenantQuotas(tenant)) await this.apply(quota);
      await this.reconcileProvisionerBinding(tenant);
      await this.pruneQuotas(tenant);
    } catch (err) {
      failure = err as Error;
    } finally {
      // Status is written whatever happened, so `kubectl get tenant` tells the truth.
      const quota = this.quotas.get(undefined, tenant.spec.quota?.quotaRef?.name ?? name);
      if (quota?.status) {
        status.usage = { hard: quota.status.hard ?? quota.spec.hard, used: quota.status.used ?? {} };
        status.usage.summary = formatUsageSummary(status.usage.hard, status.usage.used);
      }
      status.namespaces ??= this.namespacesOf(name)
        .map((n) => n.metadata!.name!)
        .sort();
      status.namespaceCount = status.namespaces.length;
      status.observedGeneration = tenant.metadata!.generation;
      const ready: Omit<Condition, "lastTransitionTime"> = failure
        ? {
            type: "Ready",
            status: "False",
            reason: failure instanceof TemplateError ? "TemplateInvalid" : "ReconcileFailed",
            message: failure.message.slice(0, 1000),
            observedGeneration: tenant.metadata!.generation,
          }
        : {
            type: "Ready",
            status: "True",
            reason: "Reconciled",
            message: `${status.namespaceCount} namespaces in place`,
            observedGeneration: tenant.metadata!.generation,
          };
      status.conditions = setCondition(
        tenant.status?.conditions as Condition[] | undefined,
        ready,
        new Date(),
      );
      await applyStatus(this.options.client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "Tenant",
        metadata: { name },
        status,
      });
    }
    // A broken template is the user's to fix: retrying sooner changes nothing, a template change re-queues.
    if (failure && !(failure instanceof TemplateError)) throw failure;
    return reconcileDone();
  }

  private namespacesOf(tenant: string): V1Namespace[] {
    return this.namespaces.list().filter((n) => n.metadata?.labels?.[TENANT_LABEL] === tenant);
  }

  private async reconcileNamespaces(tenant: Tenant): Promise<string[]> {
    const name = tenant.metadata!.name!;
    const templates = new Map(this.templates.list().map((t) => [t.metadata!.name!, t]));
    const declared = new Map(
      (tenant.spec.namespaces ?? []).map((ns) => [declaredNamespaceName(name, ns.name), ns]),
    );
    const existing = this.namespacesOf(name);
    // Namespaces the owners created joined the tenant through admission; they stay until deleted.
    // System namespaces are never adopted, whatever labels they carry: the webhooks exempt them,
    // so a label there was not checked, and binding owners as admin there would hand over the cluster.
    const ownerCreated = existing.filter(
      (n) =>
        n.metadata?.labels?.[NAMESPACE_ORIGIN_LABEL] !== "declared" &&
        !declared.has(n.metadata!.name!) &&
        !SYSTEM_NAMESPACES.has(n.metadata!.name!),
    );
    const all: {
      name: string;
      origin: "declared" | "owner";
      templates: { name: string; parameters?: Record<string, string> }[];
      labels?: Record<string, string>;
    }[] = [
      ...[...declared].map(([nsName, ns]) => ({
        name: nsName,
        origin: "declared" as const,
        templates: [...(tenant.spec.templates ?? []), ...(ns.templates ?? [])],
        labels: ns.labels,
      })),
      ...ownerCreated.map((n) => ({
        name: n.metadata!.name!,
        origin: "owner" as const,
        templates: tenant.spec.templates ?? [],
      })),
    ];
    for (const ns of all) {
      const contents = namespaceContents(tenant, ns.name, ns.templates, templates);
      const templateIds = contents
        .filter((o) => o.metadata?.labels?.["tenantry.dev/template"])
        .map(objectId)
        .sort();
      const namespace = namespaceObject(tenant, ns.name, ns.origin, ns.labels);
      namespace.metadata!.annotations = { [TEMPLATE_OBJECTS_ANNOTATION]: JSON.stringify(templateIds) };
      const current = this.namespaces.get(undefined, ns.name);
      if (current?.metadata?.deletionTimestamp) continue;
      // An owner's namespace is never created here: with its resourceVersion the apply is a
      // conditional update, so one deleted since the cache saw it is not brought back.
      if (ns.origin === "owner") {
        if (!current) continue;
        namespace.metadata!.resourceVersion = current.metadata!.resourceVersion!;
      }
      const previousTemplateIds: string[] = JSON.parse(
        current?.metadata?.annotations?.[TEMPLATE_OBJECTS_ANNOTATION] ?? "[]",
      );
      if (ns.origin === "owner") {
        // Changed or gone since the cache saw it: its watch event brings the tenant back here.
        if (!(await this.applyIfUnchanged(namespace))) continue;
      } else {
        await this.apply(namespace);
      }
      for (const object of contents) await this.apply(object);
      await this.prune(name, ns.name, contents, previousTemplateIds);
    }
    // Declared namespaces dropped from the spec go away with their contents.
    for (const n of existing) {
      if (
        n.metadata?.labels?.[NAMESPACE_ORIGIN_LABEL] === "declared" &&
        !declared.has(n.metadata!.name!) &&
        !n.metadata?.deletionTimestamp
      ) {
        await this.remove({ apiVersion: "v1", kind: "Namespace", metadata: { name: n.metadata!.name! } });
      }
    }
    return all.map((n) => n.name).sort();
  }

  private async prune(
    tenant: string,
    namespace: string,
    desired: KubernetesObject[],
    previousTemplateIds: string[],
  ) {
    const wanted = new Set(desired.map(objectId));
    for (const informer of this.managed) {
      for (const object of informer.list()) {
        if (object.metadata?.namespace !== namespace || object.metadata?.labels?.[TENANT_LABEL] !== tenant)
          continue;
        if (!wanted.has(objectId(object))) await this.remove(object);
      }
    }
    for (const id of previousTemplateIds) {
      if (wanted.has(id)) continue;
      const [group, version, kind, objectName] =
        id.split("/").length === 4 ? id.split("/") : ["", ...id.split("/")];
      const apiVersion = group ? `${group}/${version}` : version!;
      await this.remove({ apiVersion, kind: kind!, metadata: { name: objectName!, namespace } });
    }
  }

  /** Cluster-scoped, so not covered by the per-namespace pruning. */
  private async reconcileProvisionerBinding(tenant: Tenant) {
    const binding = ownersProvisionerBinding(tenant);
    if (binding) await this.apply(binding);
    else {
      await this.remove({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: `tenantry:owners:${tenant.metadata!.name}` },
      });
    }
  }

  private async pruneQuotas(tenant: Tenant) {
    const wanted = new Set(tenantQuotas(tenant).map((q) => q.metadata!.name!));
    for (const quota of this.quotas.list()) {
      const labels = quota.metadata?.labels ?? {};
      if (
        labels[TENANT_LABEL] === tenant.metadata!.name &&
        labels[MANAGED_BY_LABEL] === MANAGED_BY &&
        !wanted.has(quota.metadata!.name!)
      ) {
        await this.remove(quota as KubernetesObject);
      }
    }
  }
}

function usesTemplate(tenant: Tenant, template: string): boolean {
  return [
    ...(tenant.spec.templates ?? []),
    ...(tenant.spec.namespaces ?? []).flatMap((n) => n.templates ?? []),
  ].some((ref) => ref.name === template);
}
