import assert from "node:assert/strict";
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  RbacAuthorizationV1Api,
} from "@kubernetes/client-node";
import {
  TENANTRY_GROUP,
  TENANTS_API_VERSION,
  TENANTS_VERSION,
  type Tenant,
} from "../../../src/tenants/index.js";
import { refusalPrefix, type ServedBy } from "../../support/admission.js";
import { testEnvironment, testKubeConfig } from "../../support/clusters.js";
import { eventually } from "../../support/eventually.js";
import { type KubectlResult, kubectl } from "../../support/kubectl.js";
import type { TestUser } from "../../support/users.js";

/** The home cluster's administrator: the identity tenantry runs as in the embedded default. */
export const adminKubeConfig = testKubeConfig("home");
export const adminKubeconfigPath = testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig;
export const customObjects = adminKubeConfig.makeApiClient(CustomObjectsApi);
export const core = adminKubeConfig.makeApiClient(CoreV1Api);
export const rbac = adminKubeConfig.makeApiClient(RbacAuthorizationV1Api);
export const objects = KubernetesObjectApi.makeApiClient(adminKubeConfig);

const tenants = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenants" };

function ignoreNotFound(err: unknown): void {
  if (!(err instanceof ApiException && err.code === 404)) throw err;
}

/** Creates a Tenant as the cluster administrator and waits until the tenant controller reports it Ready. */
export async function createTenant(name: string, spec: Partial<Tenant["spec"]>): Promise<Tenant> {
  await customObjects.createClusterCustomObject({
    ...tenants,
    body: { apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name }, spec },
  });
  return waitForTenantReady(name);
}

export async function getTenant(name: string): Promise<Tenant> {
  return (await customObjects.getClusterCustomObject({ ...tenants, name })) as Tenant;
}

export async function waitForTenantReady(name: string): Promise<Tenant> {
  return eventually(
    async () => {
      const tenant = await getTenant(name);
      const ready = tenant.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(
        ready?.status === "True" && ready.observedGeneration === tenant.metadata?.generation,
        true,
        `tenant ${name} is not Ready: ${JSON.stringify(ready)}`,
      );
      return tenant;
    },
    { timeoutMs: 60_000 },
  );
}

export async function patchTenant(name: string, spec: Partial<Tenant["spec"]>): Promise<Tenant> {
  const tenant = await getTenant(name);
  await customObjects.replaceClusterCustomObject({
    ...tenants,
    name,
    body: { ...tenant, spec: { ...tenant.spec, ...spec } },
  });
  return waitForTenantReady(name);
}

/** Deletes Tenants and waits until they and their namespaces are gone. */
export async function deleteTenants(names: string[]): Promise<void> {
  for (const name of names)
    await customObjects.deleteClusterCustomObject({ ...tenants, name }).catch(ignoreNotFound);
  await eventually(
    async () => {
      const left = (await core.listNamespace({ labelSelector: "tenantry.dev/tenant" })).items.filter((n) =>
        names.includes(n.metadata?.labels?.["tenantry.dev/tenant"] ?? ""),
      );
      assert.deepEqual(
        left.map((n) => n.metadata?.name),
        [],
      );
    },
    { timeoutMs: 120_000 },
  );
}

/**
 * What a platform operator grants tenant owners so that they can manage namespaces themselves
 * (Capsule's namespace provisioner): create, change and delete namespaces. RBAC lets them touch
 * any namespace; tenantry's admission decides which.
 */
export async function grantNamespaceSelfService(name: string, users: string[]): Promise<() => Promise<void>> {
  await rbac.createClusterRole({
    body: {
      metadata: { name },
      rules: [
        {
          apiGroups: [""],
          resources: ["namespaces"],
          verbs: ["create", "get", "update", "patch", "delete"],
        },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: users.map((user) => ({ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user })),
    },
  });
  return async () => {
    await rbac.deleteClusterRoleBinding({ name }).catch(ignoreNotFound);
    await rbac.deleteClusterRole({ name }).catch(ignoreNotFound);
  };
}

/** Runs the real kubectl as a test user. */
export function as(user: TestUser, args: string[], input?: string): Promise<KubectlResult> {
  return kubectl(user.kubeconfigPath, args, input);
}

export function asAdmin(args: string[], input?: string): Promise<KubectlResult> {
  return kubectl(adminKubeconfigPath, args, input);
}

export function succeeded(result: KubectlResult, what = "kubectl"): string {
  assert.equal(result.code, 0, `${what} failed: ${result.stderr}`);
  return result.stdout;
}

/** Where each check of {@link WEBHOOK} is served: a shared entry of the dispatcher, or its own. */
const SERVED_BY: Record<string, ServedBy> = {
  "namespace-owners.tenants.tenantry.dev": "cluster",
  "namespaces.tenants.tenantry.dev": "cluster",
  "tenancy.tenants.tenantry.dev": "cluster",
  "managed-objects.tenants.tenantry.dev": "own",
  "cordoned.tenants.tenantry.dev": "own",
};

/** The start of kube-apiserver's error when this check of {@link WEBHOOK} refuses. */
export function refusedBy(webhook: string): string {
  return refusalPrefix(webhook, SERVED_BY[webhook] ?? "namespaced");
}

/** Asserts that kubectl failed because a tenantry check denied the request with exactly this message. */
export function deniedBy(result: KubectlResult, webhook: string, message: string): void {
  assert.notEqual(result.code, 0, `expected a denial, kubectl succeeded: ${result.stdout}`);
  const expected = `${refusedBy(webhook)}${message}`;
  assert.ok(
    result.stderr.includes(expected),
    `expected stderr to contain\n  ${expected}\ngot\n  ${result.stderr.trim()}`,
  );
}

/** Asserts that kubectl failed with exactly this error line (RBAC and other API server refusals). */
export function failedWith(result: KubectlResult, line: string): void {
  assert.notEqual(result.code, 0, `expected a failure, kubectl succeeded: ${result.stdout}`);
  assert.ok(
    result.stderr.split("\n").some((l) => l.trim() === line),
    `expected stderr to contain the line\n  ${line}\ngot\n  ${result.stderr.trim()}`,
  );
}

/** YAML (JSON is YAML) for `kubectl … -f -`. */
export function manifest(...objects: object[]): string {
  return objects.map((o) => JSON.stringify(o)).join("\n---\n");
}

export const WEBHOOK = {
  namespaceOwners: "namespace-owners.tenants.tenantry.dev",
  namespaces: "namespaces.tenants.tenantry.dev",
  ownerLabels: "owner-labels.tenants.tenantry.dev",
  podDefaults: "pod-defaults.tenants.tenantry.dev",
  podSafety: "pod-safety.tenants.tenantry.dev",
  reservedNodes: "reserved-nodes.tenants.tenantry.dev",
  classes: "classes.tenants.tenantry.dev",
  services: "services.tenants.tenantry.dev",
  managedObjects: "managed-objects.tenants.tenantry.dev",
  tenancy: "tenancy.tenants.tenantry.dev",
  cordoned: "cordoned.tenants.tenantry.dev",
} as const;
