/**
 * One admission call each way: what kube-apiserver would call for a tenant user's pod creation in a
 * tenant namespace, read from the webhook configurations registered in the cluster; and the quota
 * reservation, which runs last, for a pod another check refuses.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { entriesCalledFor, podCreateRequest } from "../../../testing/admission-entries.js";
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
    const labels = (await core.readNamespace({ name: namespace })).metadata?.labels ?? {};
    const called = await entriesCalledFor(adminKubeConfig, podCreateRequest(namespace, owner.name), labels);
    assert.ok(called.registered > 2, "tenantry's configurations are registered");
    assert.deepEqual(
      called.mutating.map((e) => e.name),
      ["tenant-namespaces.admission.tenantry.dev"],
    );
    assert.deepEqual(
      called.validating.map((e) => e.name),
      ["tenant-namespaces.admission.tenantry.dev"],
    );
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
