/**
 * One admission call each way: what kube-apiserver would call for a tenant user's pod creation in a
 * tenant namespace, read from the webhook configurations registered in the cluster; and the quota
 * reservation, which runs last, for a pod another check refuses.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  AdmissionregistrationV1Api,
  CustomObjectsApi,
  type V1LabelSelector,
  type V1MutatingWebhook,
  type V1ValidatingWebhook,
} from "@kubernetes/client-node";
import { labelsMatch, ruleMatches } from "../../../src/webhooks/dispatcher.js";
import { type AdmissionRequest, WEBHOOK_CONFIGURATION } from "../../../src/webhooks/index.js";
import { uniqueName } from "../../support/clusters.js";
import { eventually } from "../../support/eventually.js";
import { type TestUser, testUser } from "../../support/users.js";
import {
  adminKubeConfig,
  as,
  core,
  createTenant,
  deleteTenants,
  deniedBy,
  manifest,
  rbac,
  succeeded,
  WEBHOOK,
} from "./support.js";

/**
 * What each of tenantry's match conditions says of an ordinary tenant user creating a plain pod (no
 * nodeName, no tolerations). A condition not listed fails the test: say what it does for such a pod.
 */
const CONDITIONS_FOR_A_TENANT_USERS_POD: Record<string, boolean> = {
  "not-privileged-requester": true,
  "privileged-requester": false,
  "not-namespace-bootstrap": true,
  "not-a-cluster-component": true,
  "not-a-cluster-administrator": true,
  "from-a-node": false,
  "may-reach-private-nodes": false,
  "bootstrap-token-requests": false,
};

type Entry = V1MutatingWebhook | V1ValidatingWebhook;

function matches(entry: Entry, request: AdmissionRequest, namespaceLabels: Record<string, string>): boolean {
  if (!(entry.rules ?? []).some((rule) => ruleMatches(rule, request))) return false;
  if (!labelsMatch(entry.namespaceSelector ?? {}, namespaceLabels)) return false;
  if (!labelsMatch(entry.objectSelector ?? ({} as V1LabelSelector), {})) return false;
  return (entry.matchConditions ?? []).every((c) => {
    const value = CONDITIONS_FOR_A_TENANT_USERS_POD[c.name];
    assert.notEqual(value, undefined, `match condition ${c.name} of ${entry.name}: ${c.expression}`);
    return value;
  });
}

describe("one admission call each way", () => {
  const tenant = uniqueName("onecall");
  const namespace = `${tenant}-run`;
  let owner: TestUser;

  before(async () => {
    owner = await testUser(uniqueName("owner"));
    await createTenant(tenant, {
      owners: [{ kind: "User", name: owner.name }],
      namespaces: [{ name: "run" }],
      // The cluster's Pod Security admission steps aside: the refusal tested is tenantry's own.
      podSecurity: { level: "privileged" },
      // One pod: a reservation left behind by a refused pod would refuse the next one.
      quota: { hard: { pods: "1" } },
    });
    await eventually(async () => {
      await rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace });
    });
  });

  after(async () => {
    await deleteTenants([tenant]);
  });

  it("a pod creation in a tenant namespace matches one mutating and one validating entry", async () => {
    const admission = adminKubeConfig.makeApiClient(AdmissionregistrationV1Api);
    const labels = (await core.readNamespace({ name: namespace })).metadata?.labels ?? {};
    const request: AdmissionRequest = {
      uid: "count",
      kind: { group: "", version: "v1", kind: "Pod" },
      resource: { group: "", version: "v1", resource: "pods" },
      namespace,
      operation: "CREATE",
      userInfo: { username: owner.name, groups: ["system:authenticated"] },
      object: { metadata: { name: "p" }, spec: { containers: [{ name: "c", image: "nginx" }] } },
    };
    const ours = (name: string) =>
      name === WEBHOOK_CONFIGURATION || name === `${WEBHOOK_CONFIGURATION}-privileged`;
    const mutating = (await admission.listMutatingWebhookConfiguration()).items
      .filter((c) => ours(c.metadata?.name ?? ""))
      .flatMap((c) => c.webhooks ?? []);
    const validating = (await admission.listValidatingWebhookConfiguration()).items
      .filter((c) => ours(c.metadata?.name ?? ""))
      .flatMap((c) => c.webhooks ?? []);
    assert.ok(mutating.length > 1 && validating.length > 1, "tenantry's configurations are registered");
    const called = (entries: Entry[]) =>
      entries.filter((e) => matches(e, request, labels)).map((e) => e.name);
    assert.deepEqual(called(mutating), ["tenant-namespaces.admission.tenantry.dev"]);
    assert.deepEqual(called(validating), ["tenant-namespaces.admission.tenantry.dev"]);
  });

  it("a pod another check refuses reserves none of the quota", async () => {
    const pod = (name: string, container: Record<string, unknown> = {}) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace },
      spec: { containers: [{ name: "app", image: "nginx", ...container }] },
    });
    deniedBy(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(pod("refused", { securityContext: { privileged: true } })),
      ),
      WEBHOOK.podSafety,
      `spec.containers[0].securityContext.privileged: privileged containers are not allowed in tenant "${tenant}"`,
    );
    const quota = (await adminKubeConfig.makeApiClient(CustomObjectsApi).getClusterCustomObject({
      group: "tenantry.dev",
      version: "v1alpha1",
      plural: "tenantresourcequotas",
      name: tenant,
    })) as { status?: { reservations?: { name: string }[] } };
    assert.deepEqual(
      (quota.status?.reservations ?? []).filter((r) => r.name === "refused"),
      [],
      "the refused pod holds a reservation",
    );
    // The tenant's one pod is still free: a reservation of the refused pod would hold it for 30 s.
    succeeded(await as(owner, ["create", "-f", "-"], manifest(pod("admitted"))), "the one pod of quota");
  });
});
