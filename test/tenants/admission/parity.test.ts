import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { NodeV1Api, type V1Pod } from "@kubernetes/client-node";
import { testEnvironment, uniqueName } from "../../support/clusters.js";
import { eventually } from "../../support/eventually.js";
import { tenantryCli } from "../../support/kubectl.js";
import { type TestUser, testUser } from "../../support/users.js";
import {
  adminKubeConfig,
  as,
  asAdmin,
  core,
  createTenant,
  deleteTenants,
  deniedBy,
  manifest,
  rbac,
  succeeded,
  WEBHOOK,
} from "./support.js";

const nodeApi = adminKubeConfig.makeApiClient(NodeV1Api);
const adminKubeconfig = testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig;

/**
 * What Capsule lets an administrator decide per tenant and tenantry must too: the registries
 * images come from, their pull policies, runtime classes, hostnames that stay one tenant's, and a
 * cordon that freezes a tenant.
 */
describe("registries, pull policies, runtime classes, ingress hosts and cordons", () => {
  const guarded = uniqueName("grd");
  const other = uniqueName("oth");
  const frozen = uniqueName("frz");
  const [sandboxed, unvetted] = [uniqueName("gvisor"), uniqueName("kata")];
  let owner: TestUser;
  let otherOwner: TestUser;

  const pod = (namespace: string, name: string, container: Record<string, unknown>, spec = {}) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: { containers: [{ name: "app", ...container }], ...spec },
  });
  const ingress = (namespace: string, name: string, host: string) => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { name, namespace },
    spec: {
      rules: [
        {
          host,
          http: {
            paths: [
              { path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } },
            ],
          },
        },
      ],
    },
  });

  before(async () => {
    [owner, otherOwner] = await Promise.all([testUser(uniqueName("own")), testUser(uniqueName("own"))]);
    for (const name of [sandboxed, unvetted])
      await nodeApi.createRuntimeClass({ body: { metadata: { name }, handler: "runc" } });
    await Promise.all([
      createTenant(guarded, {
        owners: [{ kind: "User", name: owner.name }],
        namespaces: [{ name: "app" }, { name: "web" }],
        // The cluster's Pod Security admission steps aside, so that what is tested is tenantry's.
        podSecurity: { level: "privileged" },
        allowed: {
          containerRegistries: { names: ["docker.io/library", "quay.io/acme"] },
          imagePullPolicies: ["Always"],
          runtimeClasses: { names: [sandboxed] },
        },
      }),
      createTenant(other, {
        owners: [{ kind: "User", name: otherOwner.name }],
        namespaces: [{ name: "web" }],
      }),
      createTenant(frozen, {
        owners: [{ kind: "User", name: owner.name }],
        namespaces: [{ name: "app" }],
      }),
    ]);
    await eventually(async () => {
      for (const namespace of [`${guarded}-app`, `${guarded}-web`, `${frozen}-app`])
        await rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace });
      await rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: `${other}-web` });
    });
  });

  after(async () => {
    await tenantryCli(["tenant", "uncordon", frozen, "--kubeconfig", adminKubeconfig]);
    await deleteTenants([guarded, other, frozen]);
    for (const name of [sandboxed, unvetted]) await nodeApi.deleteRuntimeClass({ name }).catch(() => {});
  });

  it("images come only from the tenant's registries, also when changed on a running pod", async () => {
    const namespace = `${guarded}-app`;
    deniedBy(
      await as(owner, ["-n", namespace, "run", "miner", "--image=ghcr.io/evil/miner:1"]),
      WEBHOOK.podSafety,
      `spec.containers[0].image: image "ghcr.io/evil/miner:1" (ghcr.io/evil/miner, registry "ghcr.io") is not allowed in tenant "${guarded}" (spec.allowed.containerRegistries: names "docker.io/library", "quay.io/acme")`,
    );
    succeeded(await as(owner, ["-n", namespace, "run", "web", "--image=nginx:1.27"]));
    deniedBy(
      await as(owner, ["-n", namespace, "set", "image", "pod/web", "web=ghcr.io/evil/miner:1"]),
      WEBHOOK.podSafety,
      `spec.containers[0].image: image "ghcr.io/evil/miner:1" (ghcr.io/evil/miner, registry "ghcr.io") is not allowed in tenant "${guarded}" (spec.allowed.containerRegistries: names "docker.io/library", "quay.io/acme")`,
    );
    succeeded(await as(owner, ["-n", namespace, "set", "image", "pod/web", "web=quay.io/acme/web:2"]));
  });

  it("a pull policy kubectl left out becomes Always; one chosen otherwise is refused", async () => {
    const namespace = `${guarded}-app`;
    const created = JSON.parse(
      succeeded(
        await as(
          owner,
          ["create", "-f", "-", "-o", "json"],
          manifest(pod(namespace, "tagged", { image: "nginx:1.27" })),
        ),
      ),
    ) as V1Pod;
    assert.equal(created.spec?.containers[0]?.imagePullPolicy, "Always");
    deniedBy(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(pod(namespace, "cached", { image: "nginx:1.27", imagePullPolicy: "Never" })),
      ),
      WEBHOOK.podSafety,
      `spec.containers[0].imagePullPolicy: "Never" is not allowed in tenant "${guarded}" (spec.allowed.imagePullPolicies: Always)`,
    );
  });

  it("only the tenant's runtime classes; none at all is the cluster's default", async () => {
    const namespace = `${guarded}-app`;
    deniedBy(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(pod(namespace, "vm", { image: "nginx" }, { runtimeClassName: unvetted })),
      ),
      WEBHOOK.podSafety,
      `spec.runtimeClassName: runtime class "${unvetted}" is not allowed in tenant "${guarded}" (spec.allowed.runtimeClasses: names "${sandboxed}")`,
    );
    succeeded(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(pod(namespace, "sandboxed", { image: "nginx" }, { runtimeClassName: sandboxed })),
      ),
    );
  });

  it("a hostname one tenant routes cannot be claimed by another, but by the same tenant elsewhere", async () => {
    const host = `${uniqueName("shop")}.example.com`;
    succeeded(await as(owner, ["create", "-f", "-"], manifest(ingress(`${guarded}-app`, "shop", host))));
    deniedBy(
      await as(otherOwner, ["create", "-f", "-"], manifest(ingress(`${other}-web`, "shop", host))),
      WEBHOOK.classes,
      `spec.rules[0].host: host "${host}" is already used by an Ingress outside tenant "${other}"; a hostname belongs to one tenant`,
    );
    succeeded(await as(owner, ["create", "-f", "-"], manifest(ingress(`${guarded}-web`, "shop-api", host))));
    // Once the first tenant gives the host up, it is free.
    succeeded(await as(owner, ["-n", `${guarded}-app`, "delete", "ingress", "shop"]));
    succeeded(await as(owner, ["-n", `${guarded}-web`, "delete", "ingress", "shop-api"]));
    await eventually(
      async () =>
        succeeded(
          await as(otherOwner, ["create", "-f", "-"], manifest(ingress(`${other}-web`, "shop", host))),
        ),
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
  });

  it("a cordoned tenant's users can create, change and delete nothing; administrators can", async () => {
    const namespace = `${frozen}-app`;
    succeeded(await as(owner, ["-n", namespace, "create", "configmap", "settings", "--from-literal=a=1"]));
    const cordon = await tenantryCli(["tenant", "cordon", frozen, "--kubeconfig", adminKubeconfig]);
    assert.equal(cordon.code, 0, cordon.stderr);
    assert.equal(cordon.stdout.trim(), `tenant/${frozen} cordoned`);
    deniedBy(
      await as(owner, ["-n", namespace, "create", "configmap", "more"]),
      WEBHOOK.ownerLabels,
      `metadata.namespace: tenant "${frozen}" is cordoned (spec.cordoned): nothing new may be created in its namespaces`,
    );
    // Changes and deletions wait until the tenant controller has labelled the namespace.
    await eventually(
      async () =>
        deniedBy(
          await as(owner, ["-n", namespace, "label", "configmap", "settings", "changed=yes"]),
          WEBHOOK.cordoned,
          `metadata.namespace: tenant "${frozen}" is cordoned (spec.cordoned): nothing in its namespaces may be changed by its users until it is uncordoned`,
        ),
      { timeoutMs: 60_000 },
    );
    deniedBy(
      await as(owner, ["-n", namespace, "delete", "configmap", "settings"]),
      WEBHOOK.cordoned,
      `metadata.namespace: tenant "${frozen}" is cordoned (spec.cordoned): nothing in its namespaces may be deleted by its users until it is uncordoned`,
    );
    succeeded(await asAdmin(["-n", namespace, "label", "configmap", "settings", "checked=yes"]));
    const namespaceObject = await core.readNamespace({ name: namespace });
    assert.equal(namespaceObject.metadata?.labels?.["tenantry.dev/cordoned"], "true");

    const uncordon = await tenantryCli(["tenant", "uncordon", frozen, "--kubeconfig", adminKubeconfig]);
    assert.equal(uncordon.code, 0, uncordon.stderr);
    // Uncordoning counts at once: the webhook reads the tenant, not the label.
    await eventually(async () =>
      succeeded(await as(owner, ["-n", namespace, "label", "configmap", "settings", "changed=yes"])),
    );
    succeeded(await as(owner, ["-n", namespace, "delete", "configmap", "settings"]));
  });
});
