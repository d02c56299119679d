/**
 * Nodes reserved for runtimes (the process node of the local clusters carries their taint): a
 * tenant owner who tolerates the taint, on a pod or in a workload's template, is refused; what
 * tenantry applies for a RuntimeService still lands there (test/runtimes/process-node.test.ts).
 */
import { after, before, describe, it } from "node:test";
import { PROCESS_NODE_PLACEMENT } from "../../../src/localcluster/index.js";
import { RUNTIMES_NODE_TAINT_KEY } from "../../../src/tenants/index.js";
import { uniqueName } from "../../support/clusters.js";
import { type TestUser, testUser } from "../../support/users.js";
import {
  as,
  asAdmin,
  createTenant,
  deleteTenants,
  deniedBy,
  manifest,
  succeeded,
  WEBHOOK,
} from "./support.js";

describe("nodes reserved for runtimes", () => {
  const tenant = uniqueName("reserved");
  const namespace = `${tenant}-work`;
  let owner: TestUser;
  const refusal = (field: string, kind: string, name: string) =>
    `${field}: only workloads tenantry applies for a RuntimeService may tolerate the taint ${RUNTIMES_NODE_TAINT_KEY} (nodes reserved for runtimes); ${kind} "${name}" in namespace "${namespace}" is refused`;

  const pod = (name: string) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: { ...PROCESS_NODE_PLACEMENT, containers: [{ name: "app", image: "busybox:1.36" }] },
  });

  before(async () => {
    owner = await testUser(uniqueName("owner"));
    await createTenant(tenant, {
      owners: [{ kind: "User", name: owner.name }],
      namespaces: [{ name: "work" }],
      podSecurity: { level: "privileged" },
    });
  });
  after(() => deleteTenants([tenant]));

  it("refuses a tenant owner's pod tolerating the taint", async () => {
    deniedBy(
      await as(owner, ["create", "-f", "-"], manifest(pod("onto-reserved"))),
      WEBHOOK.reservedNodes,
      refusal("spec.tolerations[0]", "Pod", "onto-reserved"),
    );
  });

  it("refuses a Deployment whose pods would tolerate it, and a toleration of every taint", async () => {
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "sneaky", namespace },
      spec: {
        selector: { matchLabels: { app: "sneaky" } },
        template: { metadata: { labels: { app: "sneaky" } }, spec: pod("x").spec },
      },
    };
    deniedBy(
      await as(owner, ["create", "-f", "-"], manifest(deployment)),
      WEBHOOK.reservedNodes,
      refusal("spec.template.spec.tolerations[0]", "Deployment", "sneaky"),
    );
    const everything = {
      ...pod("tolerates-all"),
      spec: { ...pod("x").spec, tolerations: [{ operator: "Exists" }] },
    };
    deniedBy(
      await as(owner, ["create", "-f", "-"], manifest(everything)),
      WEBHOOK.reservedNodes,
      refusal("spec.tolerations[0]", "Pod", "tolerates-all"),
    );
  });

  it("admits the same pod from the cluster administrator, and the owner's pods without the toleration", async () => {
    succeeded(await asAdmin(["create", "--dry-run=server", "-f", "-"], manifest(pod("by-admin"))));
    const plain = { ...pod("plain"), spec: { containers: pod("x").spec.containers } };
    succeeded(await as(owner, ["create", "--dry-run=server", "-f", "-"], manifest(plain)));
  });
});
