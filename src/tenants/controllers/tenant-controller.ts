import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyStatus,
  type ClusterClient,
  type Condition,
  Controller,
  Informer,
  objectKey,
  type ReconcileContext,
  reconcileDone,
  sameStoredJson,
  setCondition,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../api/group.js";
import type { NamespaceTemplate } from "../api/namespace-template.js";
import { formatOwnerSummary, formatUsageSummary } from "../api/summary.js";
import type { Tenant, TenantStatus } from "../api/tenant.js";
import type { TenantResourceQuota } from "../api/tenant-resource-quota.js";
import type { TenantInformers } from "../informers.js";
import { MANAGED_BY, MANAGED_BY_LABEL, NAMESPACE_ORIGIN_LABEL, TENANT_LABEL } from "./labels.js";
import { NamespaceFailures, TenantNamespaceController, usesTemplate } from "./namespace-controller.js";
import { declaredNamespaces, planNamespace, SYSTEM_NAMESPACES } from "./namespace-plan.js";
import { tenantQuotas } from "./quotas.js";
import { ownersProvisionerBinding, TemplateError } from "./render.js";
import { applyManaged, removeManaged } from "./writes.js";

export interface TenantControllerOptions {
  client: ClusterClient;
  informers: TenantInformers;
  logger: Logger;
  workers?: number;
}

/**
 * Keeps each Tenant's tenant-wide objects (its declared namespaces, quotas, the owners' right to
 * create namespaces) as the Tenant says, and reports what it found in the Tenant's status, even
 * when reconciling fails. What is inside each namespace is the {@link TenantNamespaceController}'s,
 * run alongside, whose failures this status names too.
 */
export class TenantController {
  private readonly tenants: Informer<Tenant>;
  private readonly templates: Informer<NamespaceTemplate>;
  private readonly namespaces: Informer<V1Namespace>;
  private readonly quotas: Informer<TenantResourceQuota>;
  /** The owners' ClusterRoleBindings to the namespace provisioner role. */
  private readonly clusterBindings: Informer<KubernetesObject>;
  private readonly controller: Controller;
  private readonly namespaceController: TenantNamespaceController;
  private readonly failures: NamespaceFailures;
  private readonly cluster: string;

  constructor(private readonly options: TenantControllerOptions) {
    const { client } = options;
    this.cluster = client.name;
    // Shared with the quota controller and the webhooks; started and stopped by their owner.
    this.tenants = options.informers.tenants;
    this.templates = options.informers.templates;
    this.namespaces = options.informers.tenantNamespaces;
    this.quotas = options.informers.quotas;
    this.clusterBindings = Informer.forResource<KubernetesObject>(client, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY},${TENANT_LABEL}`,
    });
    this.controller = new Controller({
      name: "tenants",
      workers: options.workers ?? 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.failures = new NamespaceFailures((tenant) => this.controller.enqueue(this.keyOf(tenant)));
    this.namespaceController = new TenantNamespaceController({
      client,
      informers: options.informers,
      failures: this.failures,
      logger: options.logger,
      ...(options.workers ? { workers: options.workers } : {}),
    });
    const byTenantLabel = (o: KubernetesObject) => {
      const tenant = o.metadata?.labels?.[TENANT_LABEL];
      return tenant ? [this.keyOf(tenant)] : [];
    };
    this.controller.watch(this.tenants);
    this.controller.watch(this.namespaces, byTenantLabel);
    this.controller.watch(this.quotas, (q) => [this.keyOf(q.spec.tenant)]);
    this.controller.watch(this.clusterBindings, byTenantLabel);
    // Ready waits for its namespaces' contents: their appearing is what re-queues it.
    for (const informer of this.namespaceController.contentInformers())
      this.controller.watch(informer, byTenantLabel);
    // A declared namespace whose template appears can now be created.
    this.controller.watch(this.templates, (template) =>
      this.tenants
        .list()
        .filter((t) => usesTemplate(t, template.metadata!.name!))
        .map((t) => this.keyOf(t.metadata!.name!)),
    );
  }

  private keyOf(tenant: string): string {
    return objectKey(this.cluster, undefined, tenant);
  }

  /** Starts the controllers' own informers; the shared ones run already. */
  async start(): Promise<void> {
    this.clusterBindings.start();
    await Promise.all([this.controller.start(), this.namespaceController.start()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.controller.stop(), this.namespaceController.stop()]);
    await this.clusterBindings.stop();
  }

  stats() {
    const tenants = this.controller.stats();
    const namespaces = this.namespaceController.stats();
    return Object.fromEntries(
      Object.entries(tenants).map(([k, v]) => [k, v + namespaces[k as keyof typeof namespaces]]),
    ) as typeof tenants;
  }

  private async reconcile(ctx: ReconcileContext) {
    const tenant = this.tenants.get(undefined, ctx.ref.name);
    if (!tenant || tenant.metadata?.deletionTimestamp) return reconcileDone();
    const status: TenantStatus = { ownerSummary: formatOwnerSummary(tenant.spec.owners) };
    let failure: Error | undefined;
    try {
      // Quotas before namespaces: a namespace never exists without its tenant's quota, even when
      // tenantry dies in between (pods admitted then would be counted against nothing).
      for (const quota of tenantQuotas(tenant))
        await applyManaged(this.options.client, quota, this.quotas.get(undefined, quota.metadata!.name!));
      status.namespaces = await this.reconcileNamespaces(tenant);
      await this.reconcileProvisionerBinding(tenant);
      await this.pruneQuotas(tenant);
    } catch (err) {
      failure = err as Error;
    } finally {
      await this.writeStatus(tenant, status, failure);
    }
    // A broken template is the user's to fix: retrying sooner changes nothing, a template change re-queues.
    if (failure && !(failure instanceof TemplateError)) throw failure;
    return reconcileDone();
  }

  /** Status is written whatever happened, so `kubectl get tenant` tells the truth; unchanged, it is not written at all. */
  private async writeStatus(tenant: Tenant, status: TenantStatus, failure: Error | undefined) {
    const name = tenant.metadata!.name!;
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
    // The tenant's own failure first, else the first failing namespace's.
    const namespaceFailure = failure ? undefined : this.failures.firstOf(name);
    const failed = failure
      ? { message: failure.message, template: failure instanceof TemplateError }
      : namespaceFailure;
    // Ready means usable and isolated: not before every namespace holds its bindings and policies.
    const pending = failed
      ? []
      : status.namespaces.filter((ns) => !this.namespaceController.contentsInPlace(tenant, ns));
    const ready: Omit<Condition, "lastTransitionTime"> = failed
      ? {
          type: "Ready",
          status: "False",
          reason: failed.template ? "TemplateInvalid" : "ReconcileFailed",
          message: failed.message.slice(0, 1000),
          observedGeneration: tenant.metadata!.generation,
        }
      : pending.length > 0
        ? {
            type: "Ready",
            status: "False",
            reason: "NamespacesPending",
            // The same text however many are left: each change would be one more status write.
            message: "namespaces and their contents are being put in place",
            observedGeneration: tenant.metadata!.generation,
          }
        : {
            type: "Ready",
            status: "True",
            reason: "Reconciled",
            message: `${status.namespaceCount} namespaces in place`,
            observedGeneration: tenant.metadata!.generation,
          };
    status.conditions = setCondition(tenant.status?.conditions as Condition[] | undefined, ready, new Date());
    if (sameStoredJson(tenant.status ?? {}, status)) return;
    await applyStatus(this.options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name },
      status,
    });
  }

  private namespacesOf(tenant: string): V1Namespace[] {
    return this.options.informers.namespacesOf(tenant);
  }

  /**
   * Creates the declared namespaces that are missing and deletes those the spec dropped; returns
   * every namespace of the tenant. Existing namespaces are the namespace controller's.
   */
  private async reconcileNamespaces(tenant: Tenant): Promise<string[]> {
    const name = tenant.metadata!.name!;
    const templates = new Map(this.templates.list().map((t) => [t.metadata!.name!, t]));
    const declared = declaredNamespaces(tenant);
    for (const nsName of declared.keys()) {
      if (this.namespaces.get(undefined, nsName)) continue;
      const plan = planNamespace(tenant, nsName, undefined, templates);
      if (plan) await applyManaged(this.options.client, plan.namespace, undefined);
    }
    const existing = this.namespacesOf(name);
    for (const n of existing) {
      if (
        n.metadata?.labels?.[NAMESPACE_ORIGIN_LABEL] === "declared" &&
        !declared.has(n.metadata!.name!) &&
        !n.metadata?.deletionTimestamp
      ) {
        await removeManaged(this.options.client, {
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: n.metadata!.name! },
        });
      }
    }
    const ownerCreated = existing
      .filter(
        (n) =>
          n.metadata?.labels?.[NAMESPACE_ORIGIN_LABEL] !== "declared" &&
          !declared.has(n.metadata!.name!) &&
          !SYSTEM_NAMESPACES.has(n.metadata!.name!),
      )
      .map((n) => n.metadata!.name!);
    return [...declared.keys(), ...ownerCreated].sort();
  }

  /** Cluster-scoped, so not covered by the per-namespace pruning. */
  private async reconcileProvisionerBinding(tenant: Tenant) {
    const binding = ownersProvisionerBinding(tenant);
    const name = `tenantry:owners:${tenant.metadata!.name}`;
    if (binding) await applyManaged(this.options.client, binding, this.clusterBindings.get(undefined, name));
    else if (this.clusterBindings.get(undefined, name)) {
      await removeManaged(this.options.client, {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name },
      });
    }
  }

  private async pruneQuotas(tenant: Tenant) {
    const wanted = new Set(tenantQuotas(tenant).map((q) => q.metadata!.name!));
    for (const quota of this.options.informers.quotasOf(tenant.metadata!.name!)) {
      const labels = quota.metadata?.labels ?? {};
      if (
        labels[TENANT_LABEL] === tenant.metadata!.name &&
        labels[MANAGED_BY_LABEL] === MANAGED_BY &&
        !wanted.has(quota.metadata!.name!)
      ) {
        await removeManaged(this.options.client, quota as KubernetesObject);
      }
    }
  }
}
