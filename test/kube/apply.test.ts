import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  type KubernetesObject,
  PatchStrategy,
  type V1ConfigMap,
  type V1ManagedFieldsEntry,
  type V1Secret,
} from "@kubernetes/client-node";
import {
  applyObject,
  applyStatus,
  ClusterClient,
  type Condition,
  FIELD_MANAGER,
  isConflict,
  isNotFound,
  statusCode,
} from "../../src/kube/index.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { createWidgetCrd } from "../support/widgets.js";

let client: ClusterClient;
let namespace: string;
const cleanups: Array<() => Promise<unknown>> = [];

before(async () => {
  client = new ClusterClient("home", testKubeConfig("home"));
  namespace = uniqueName("kube-apply");
  await client.core.createNamespace({ body: { metadata: { name: namespace } } });
});

after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  if (!namespace) return;
  await client.core.deleteNamespace({ name: namespace }).catch((error) => {
    if (!isNotFound(error)) throw error;
  });
});

function entriesOf(obj: KubernetesObject, manager: string): V1ManagedFieldsEntry[] {
  return (obj.metadata?.managedFields ?? []).filter((entry) => entry.manager === manager);
}

/** Whether `manager` owns `data.<key>` according to the server's managedFields. */
function ownsDataKey(obj: KubernetesObject, manager: string, key: string): boolean {
  return entriesOf(obj, manager).some((entry) => {
    const fields = entry.fieldsV1 as { "f:data"?: Record<string, unknown> } | undefined;
    return fields?.["f:data"]?.[`f:${key}`] !== undefined;
  });
}

function configMap(name: string, data: Record<string, string>): V1ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data };
}

function readConfigMap(name: string): Promise<V1ConfigMap> {
  return client.core.readNamespacedConfigMap({ name, namespace });
}

describe("applyObject against a real API server", () => {
  test("creates the object owned by the tenantry apply manager; the caller's managedFields are not sent", async () => {
    const secret: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: "web-mirror",
        namespace,
        managedFields: [{ manager: "someone", operation: "Update", apiVersion: "v1" }],
      },
      type: "Opaque",
      data: { a: "MQ==" },
    };
    // The server refuses apply requests carrying managedFields, so applyObject has to leave them out.
    await assert.rejects(
      client.objects.patch(secret, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
      (error) => statusCode(error) === 400,
    );

    const stored = await applyObject(client, secret);
    assert.deepEqual(stored.data, { a: "MQ==" });
    assert.ok(stored.metadata?.resourceVersion);
    const [entry, ...others] = entriesOf(stored, FIELD_MANAGER);
    assert.equal(others.length, 0);
    assert.equal(entry?.operation, "Apply");
    assert.equal(entry?.subresource, undefined);
    assert.deepEqual(entriesOf(stored, "someone"), []);
    assert.equal(
      secret.metadata?.managedFields?.[0]?.manager,
      "someone",
      "the caller's object is not modified",
    );
  });

  test("sends the object as written: fields client-node's models spell differently survive", async () => {
    // client-node's V1NetworkPolicyIngressRule calls `from` `_from`; a typed re-serialization would
    // drop it and turn a deny-by-default policy into allow-all.
    const policy = {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: "only-same-tenant", namespace },
      spec: {
        podSelector: {},
        policyTypes: ["Ingress"],
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { "tenantry.dev/tenant": "a" } } }] }],
      },
    };
    await applyObject(client, policy);
    const stored = (await client.objects.getJson(
      `/apis/networking.k8s.io/v1/namespaces/${namespace}/networkpolicies/only-same-tenant`,
    )) as { spec: { ingress: { from?: unknown[] }[] } };
    assert.deepEqual(stored.spec.ingress[0]?.from, [
      { namespaceSelector: { matchLabels: { "tenantry.dev/tenant": "a" } } },
    ]);
  });

  test("applying the same object again is a no-op: the resourceVersion stays", async () => {
    const desired = configMap("idempotent", { color: "blue", size: "3" });
    const first = await applyObject(client, desired);
    const second = await applyObject(client, desired);
    const third = await applyObject(client, { ...desired, data: { size: "3", color: "blue" } });
    assert.equal(second.metadata?.resourceVersion, first.metadata?.resourceVersion);
    assert.equal(third.metadata?.resourceVersion, first.metadata?.resourceVersion);
    assert.equal(
      (await readConfigMap("idempotent")).metadata?.resourceVersion,
      first.metadata?.resourceVersion,
    );
  });

  test("a later apply that leaves out a field it owned removes that field", async () => {
    await applyObject(client, configMap("shrinking", { kept: "1", dropped: "2" }));
    const shrunk = await applyObject(client, configMap("shrinking", { kept: "1" }));
    assert.deepEqual(shrunk.data, { kept: "1" });
    assert.deepEqual((await readConfigMap("shrinking")).data, { kept: "1" });
  });

  test("takes over fields of other managers by default; with force: false the conflict is classifiable", async () => {
    await client.core.createNamespacedConfigMap({
      namespace,
      fieldManager: "someone-else",
      body: { metadata: { name: "contested" }, data: { owner: "someone-else", theirs: "x" } },
    });
    const desired = configMap("contested", { owner: "tenantry" });

    await assert.rejects(applyObject(client, desired, { force: false }), (error) => isConflict(error));
    const untouched = await readConfigMap("contested");
    assert.equal(untouched.data?.owner, "someone-else");

    const taken = await applyObject(client, desired);
    assert.deepEqual(taken.data, { owner: "tenantry", theirs: "x" }, "fields owned by others stay");
    assert.ok(ownsDataKey(taken, FIELD_MANAGER, "owner"));
    assert.ok(!ownsDataKey(taken, "someone-else", "owner"), "the other manager lost the field");
    assert.ok(ownsDataKey(taken, "someone-else", "theirs"));
  });

  test("dryRun returns the result without persisting it", async () => {
    const preview = await applyObject(client, configMap("dry", { a: "1" }), { dryRun: true });
    assert.equal(preview.metadata?.name, "dry");
    assert.deepEqual(preview.data, { a: "1" });
    await assert.rejects(readConfigMap("dry"), (error) => isNotFound(error));

    const stored = await applyObject(client, configMap("dry", { a: "1" }));
    const changed = await applyObject(client, configMap("dry", { a: "2" }), { dryRun: true });
    assert.deepEqual(changed.data, { a: "2" });
    const after = await readConfigMap("dry");
    assert.deepEqual(after.data, { a: "1" });
    assert.equal(after.metadata?.resourceVersion, stored.metadata?.resourceVersion);
  });
});

type Widget = KubernetesObject & {
  spec?: { size: number };
  status?: { phase?: string; conditions?: Condition[] };
};

describe("applyStatus against a real API server", () => {
  const group = `${uniqueName("apply")}.test.tenantry.dev`;
  const apiVersion = `${group}/v1`;

  before(async () => {
    cleanups.push(await createWidgetCrd(client, group));
  });

  test("applies only the status, through the /status subresource, idempotently", async () => {
    // Discovery of a just-established group can lag for a moment.
    const created = await eventually(
      () =>
        applyObject<Widget>(client, {
          apiVersion,
          kind: "Widget",
          metadata: { name: "w1", namespace },
          spec: { size: 3 },
        }),
      { timeoutMs: 20_000, intervalMs: 500 },
    );
    assert.equal(created.status, undefined);

    const withStatus = await applyStatus<Widget>(client, {
      apiVersion,
      kind: "Widget",
      metadata: { name: "w1", namespace, labels: { ignored: "yes" } },
      spec: { size: 99 },
      status: { phase: "Ready" },
    });
    assert.equal(withStatus.status?.phase, "Ready");
    assert.equal(withStatus.spec?.size, 3, "the status apply left the spec alone");
    assert.equal(withStatus.metadata?.labels?.ignored, undefined, "only the status was sent");
    assert.ok(
      entriesOf(withStatus, FIELD_MANAGER).some(
        (entry) => entry.operation === "Apply" && entry.subresource === "status",
      ),
      "the status is owned by the tenantry apply manager on the status subresource",
    );

    const again = await applyStatus<Widget>(client, {
      apiVersion,
      kind: "Widget",
      metadata: { name: "w1", namespace },
      status: { phase: "Ready" },
    });
    assert.equal(again.metadata?.resourceVersion, withStatus.metadata?.resourceVersion);

    const preview = await applyStatus<Widget>(
      client,
      { apiVersion, kind: "Widget", metadata: { name: "w1", namespace }, status: { phase: "Failed" } },
      { dryRun: true },
    );
    assert.equal(preview.status?.phase, "Failed");
    const stored = await client.objects.read<Widget>({
      apiVersion,
      kind: "Widget",
      metadata: { name: "w1", namespace },
    });
    assert.equal(stored.status?.phase, "Ready", "a dry-run status apply is not persisted");
    assert.equal(stored.metadata?.resourceVersion, withStatus.metadata?.resourceVersion);
  });

  test("a status apply without force fails with a conflict when another manager owns the field", async () => {
    await eventually(
      () =>
        applyObject<Widget>(client, {
          apiVersion,
          kind: "Widget",
          metadata: { name: "w2", namespace },
          spec: { size: 1 },
        }),
      { timeoutMs: 20_000, intervalMs: 500 },
    );
    await client.objects.patchSubresource<Widget>(
      { apiVersion, kind: "Widget", metadata: { name: "w2", namespace }, status: { phase: "Pending" } },
      "status",
      PatchStrategy.ServerSideApply,
      { fieldManager: "someone-else" },
    );
    const desired: Widget = {
      apiVersion,
      kind: "Widget",
      metadata: { name: "w2", namespace },
      status: { phase: "Ready" },
    };
    await assert.rejects(applyStatus(client, desired, { force: false }), (error) => isConflict(error));
    const taken = await applyStatus(client, desired);
    assert.equal(taken.status?.phase, "Ready");
  });
});
