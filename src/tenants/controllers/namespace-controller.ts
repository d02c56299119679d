import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyIfChanged,
  type ClusterClient,
  Controller,
  describeError,
  Informer,
  isConflict,
  isNotFound,
  objectKey,
  type ReconcileContext,
  reconcileDone,
} from "../../kube/index.js";
import type { NamespaceTemplate } from "../api/namespace-template.js";
import type { Tenant } from "../api/tenant.js";
import type { TenantInformers } from "../informers.js";
import { MANAGED_BY, MANAGED_BY_LABEL, TENANT_LABEL } from "./labels.js";
import { objectId, planNamespace, TEMPLATE_OBJECTS_ANNOTATION } from "./namespace-plan.js";
import { TemplateError } from "./render.js";
import { applyManaged, ObjectFailure, removeManaged } from "./writes.js";

/** Kinds the controller writes in every tenant namespace and watches for drift. */
const MANAGED_KINDS = [
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding" },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role" },
  { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy" },
  { apiVersion: "v1", kind: "LimitRange" },
] as const;

/** A namespace's last failure, so that its tenant's status can say which object failed and why. */
export interface NamespaceFailure {
  tenant: string;
  namespace: string;
  message: string;
  /** A template that cannot be rendered: the user's to fix, retrying changes nothing. */
  template: boolean;
}

/** The namespaces whose last reconcile failed; tells the tenant's controller when that changes. */
export class NamespaceFailures {
  private readonly byNamespace = new Map<string, NamespaceFailure>();
  /** The same failures per tenant, so that a tenant's status costs its own namespaces, not every failure. */
  private readonly byTenant = new Map<string, Map<string, NamespaceFailure>>();

  constructor(private readonly onChange: (tenant: string) => void) {}

  set(failure: NamespaceFailure): void {
    const previous = this.byNamespace.get(failure.namespace);
    if (previous) this.forgetOfTenant(previous);
    this.byNamespace.set(failure.namespace, failure);
    const ofTenant = this.byTenant.get(failure.tenant) ?? new Map<string, NamespaceFailure>();
    ofTenant.set(failure.namespace, failure);
    this.byTenant.set(failure.tenant, ofTenant);
    if (previous?.message !== failure.message || previous.tenant !== failure.tenant) {
      if (previous && previous.tenant !== failure.tenant) this.onChange(previous.tenant);
      this.onChange(failure.tenant);
    }
  }

  clear(namespace: string): void {
    const previous = this.byNamespace.get(namespace);
    if (!previous) return;
    this.byNamespace.delete(namespace);
    this.forgetOfTenant(previous);
    this.onChange(previous.tenant);
  }

  /** The tenant's failing namespace that sorts first, so the status message is stable. */
  firstOf(tenant: string): NamespaceFailure | undefined {
    return [...(this.byTenant.get(tenant)?.values() ?? [])].sort((a, b) =>
      a.namespace.localeCompare(b.namespace),
    )[0];
  }

  private forgetOfTenant(failure: NamespaceFailure): void {
    const ofTenant = this.byTenant.get(failure.tenant);
    ofTenant?.delete(failure.namespace);
    if (ofTenant?.size === 0) this.byTenant.delete(failure.tenant);
  }
}

export interface TenantNamespaceControllerOptions {
  client: ClusterClient;
  informers: TenantInformers;
  failures: NamespaceFailures;
  logger: Logger;
  workers?: number;
}

/**
 * Keeps what is inside one tenant namespace (owner and user RBAC, isolation policy, limit ranges,
 * template objects) and the namespace's own labels as its Tenant says. Keyed per namespace, so a
 * change to one namespace costs work for that namespace only, and objects the cache shows as
 * already applied cost no request at all.
 */
export class TenantNamespaceController {
  private readonly tenants: Informer<Tenant>;
  private readonly templates: Informer<NamespaceTemplate>;
  private readonly namespaces: Informer<V1Namespace>;
  private readonly managed = new Map<string, Informer<KubernetesObject>>();
  private readonly controller: Controller;
  private readonly cluster: string;
  /** The generation of each Tenant (by uid) whose namespaces were last queued. */
  private readonly queuedGenerations = new Map<string, number | undefined>();

  constructor(private readonly options: TenantNamespaceControllerOptions) {
    const { client } = options;
    this.cluster = client.name;
    this.tenants = options.informers.tenants;
    this.templates = options.informers.templates;
    this.namespaces = options.informers.tenantNamespaces;
    for (const kind of MANAGED_KINDS) {
      this.managed.set(
        `${kind.apiVersion}/${kind.kind}`,
        Informer.forResource<KubernetesObject>(client, {
          ...kind,
          labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
        }),
      );
    }
    this.controller = new Controller({
      name: "tenant-namespaces",
      workers: options.workers ?? 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    const ownNamespace = (o: KubernetesObject) =>
      o.metadata?.namespace ? [this.keyOf(o.metadata.namespace)] : [];
    this.controller.watch(this.namespaces, (ns) => [this.keyOf(ns.metadata!.name!)]);
    for (const informer of this.managed.values()) this.controller.watch(informer, ownNamespace);
    // Only a spec change (a new generation) concerns every namespace; status writes do not.
    this.controller.watch(this.tenants, (tenant) => {
      const uid = tenant.metadata!.uid!;
      if (tenant.metadata?.deletionTimestamp) {
        this.queuedGenerations.delete(uid);
        return [];
      }
      if (this.queuedGenerations.get(uid) === tenant.metadata?.generation) return [];
      this.queuedGenerations.set(uid, tenant.metadata?.generation);
      return this.keysOfTenant(tenant.metadata!.name!);
    });
    this.controller.watch(this.templates, (template) =>
      this.tenants
        .list()
        .filter((t) => usesTemplate(t, template.metadata!.name!))
        .flatMap((t) => this.keysOfTenant(t.metadata!.name!)),
    );
  }

  private keyOf(namespace: string): string {
    return objectKey(this.cluster, undefined, namespace);
  }

  private keysOfTenant(tenant: string): string[] {
    return this.options.informers.namespacesOf(tenant).map((n) => this.keyOf(n.metadata!.name!));
  }

  async start(): Promise<void> {
    for (const informer of this.managed.values()) informer.start();
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    await Promise.all([...this.managed.values()].map((i) => i.stop()));
  }

  stats() {
    return this.controller.stats();
  }

  /** The caches of what this controller writes into namespaces: their events tell when contents appear. */
  contentInformers(): Informer<KubernetesObject>[] {
    return [...this.managed.values()];
  }

  /**
   * Whether the namespace exists with every object its plan holds, as far as the kinds cached here
   * tell (from the cache alone, so it holds across restarts). A template that cannot be rendered is
   * a failure, reported as such rather than as pending; a namespace being deleted is not waited for.
   */
  contentsInPlace(tenant: Tenant, namespace: string): boolean {
    const current = this.namespaces.get(undefined, namespace);
    if (!current) return false;
    // Being deleted: its contents go with it, and nothing is waited for.
    if (current.metadata?.deletionTimestamp) return true;
    const templates = new Map(this.templates.list().map((t) => [t.metadata!.name!, t]));
    let plan: ReturnType<typeof planNamespace>;
    try {
      plan = planNamespace(tenant, namespace, current, templates);
    } catch (err) {
      if (err instanceof TemplateError) return true;
      throw err;
    }
    return (plan?.contents ?? []).every(
      (object) =>
        !this.managed.has(`${object.apiVersion}/${object.kind}`) || this.cached(object) !== undefined,
    );
  }

  /** The cached copy of an object the controller writes, when its kind is one it watches. */
  private cached(object: KubernetesObject): KubernetesObject | undefined {
    return this.managed
      .get(`${object.apiVersion}/${object.kind}`)
      ?.get(object.metadata?.namespace, object.metadata!.name!);
  }

  private async reconcile(ctx: ReconcileContext) {
    const name = ctx.ref.name;
    const current = this.namespaces.get(undefined, name);
    const tenantName = current?.metadata?.labels?.[TENANT_LABEL];
    const tenant = tenantName ? this.tenants.get(undefined, tenantName) : undefined;
    if (!current || current.metadata?.deletionTimestamp || !tenant || tenant.metadata?.deletionTimestamp) {
      this.options.failures.clear(name);
      return reconcileDone();
    }
    try {
      const templates = new Map(this.templates.list().map((t) => [t.metadata!.name!, t]));
      const plan = planNamespace(tenant, name, current, templates);
      if (!plan) {
        this.options.failures.clear(name);
        return reconcileDone();
      }
      if (plan.origin === "owner") {
        // Never created here: with its resourceVersion the apply is a conditional update, so a
        // namespace deleted since the cache saw it is not brought back. Changed or gone meanwhile:
        // its watch event brings it back here.
        plan.namespace.metadata!.resourceVersion = current.metadata!.resourceVersion!;
        try {
          await applyIfChanged(this.options.client, plan.namespace, current);
        } catch (err) {
          if (isConflict(err) || isNotFound(err)) return reconcileDone();
          throw new ObjectFailure(`Namespace ${name}: ${describeError(err)}`);
        }
      } else {
        await applyManaged(this.options.client, plan.namespace, current);
      }
      // One at a time: kube-apiserver is what limits provisioning, and more of tenantry's writes in
      // flight only lengthen every request's wait there, its Lease renewals' too.
      for (const object of plan.contents)
        await applyManaged(this.options.client, object, this.cached(object));
      const previousTemplateIds: string[] = JSON.parse(
        current.metadata?.annotations?.[TEMPLATE_OBJECTS_ANNOTATION] ?? "[]",
      );
      await this.prune(tenantName!, name, plan.contents, previousTemplateIds);
      this.options.failures.clear(name);
      return reconcileDone();
    } catch (err) {
      const template = err instanceof TemplateError;
      this.options.failures.set({
        tenant: tenantName!,
        namespace: name,
        message: (err as Error).message,
        template,
      });
      // A broken template is the user's to fix: a template or tenant change re-queues.
      if (template) return reconcileDone();
      throw err;
    }
  }

  private async prune(
    tenant: string,
    namespace: string,
    desired: KubernetesObject[],
    previousTemplateIds: string[],
  ) {
    const wanted = new Set(desired.map(objectId));
    for (const informer of this.managed.values()) {
      for (const object of informer.inNamespace(namespace)) {
        if (object.metadata?.labels?.[TENANT_LABEL] !== tenant) continue;
        if (!wanted.has(objectId(object))) await removeManaged(this.options.client, object);
      }
    }
    for (const id of previousTemplateIds) {
      if (wanted.has(id)) continue;
      const [group, version, kind, objectName] =
        id.split("/").length === 4 ? id.split("/") : ["", ...id.split("/")];
      const apiVersion = group ? `${group}/${version}` : version!;
      await removeManaged(this.options.client, {
        apiVersion,
        kind: kind!,
        metadata: { name: objectName!, namespace },
      });
    }
  }
}

export function usesTemplate(tenant: Tenant, template: string): boolean {
  return [
    ...(tenant.spec.templates ?? []),
    ...(tenant.spec.namespaces ?? []).flatMap((n) => n.templates ?? []),
  ].some((ref) => ref.name === template);
}
