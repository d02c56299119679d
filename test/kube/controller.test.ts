import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject, V1ConfigMap, V1Secret } from "@kubernetes/client-node";
import {
  applyObject,
  applyStatus,
  ClusterClient,
  type Condition,
  Controller,
  FIELD_MANAGER,
  Informer,
  isNotFound,
  isTrue,
  LeaderElector,
  type ReconcileContext,
  reconcileDone,
  setCondition,
} from "../../src/kube/index.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { createWidgetCrd } from "../support/widgets.js";

const TEST_LABEL = "tenantry.dev/test";
const KEY_COUNT_ANNOTATION = "tenantry.dev/mirrored-keys";
const CONVERGE = { timeoutMs: 30_000, intervalMs: 200 };

let client: ClusterClient;
let namespace: string;
/** Label value shared by this run's objects; each scenario appends its own suffix. */
const run = uniqueName("kube");
/** Whatever is still running when a test fails is stopped in `after`, so the process can exit. */
const cleanups: Array<() => Promise<unknown>> = [];

before(async () => {
  client = new ClusterClient("home", testKubeConfig("home"));
  namespace = uniqueName("kube-it");
  await client.core.createNamespace({
    body: { metadata: { name: namespace, labels: { [TEST_LABEL]: run } } },
  });
});

after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  if (!namespace) return;
  try {
    await client.core.deleteNamespace({ name: namespace });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
});

interface MirrorOptions {
  name: string;
  labelValue: string;
  /** Runs between writing the Secret and annotating the ConfigMap. */
  midReconcile?: (ctx: ReconcileContext) => Promise<void>;
}

/**
 * The controller under test: for each ConfigMap carrying the test label, server-side
 * applies a Secret `<cm>-mirror` with the same data, then annotates the ConfigMap with its
 * number of keys. It reads the ConfigMap from the informer cache (level-based).
 */
function mirrorController({ name, labelValue, midReconcile }: MirrorOptions) {
  const informer = Informer.forResource<V1ConfigMap>(client, {
    apiVersion: "v1",
    kind: "ConfigMap",
    namespace,
    labelSelector: `${TEST_LABEL}=${labelValue}`,
  });
  const controller = new Controller({
    name,
    workers: 2,
    reconcile: async (_key, ctx) => {
      const { namespace: objectNamespace, name: objectName } = ctx.ref;
      const configMap = informer.get(objectNamespace, objectName);
      if (!configMap) return reconcileDone();
      const data = configMap.data ?? {};
      await applyObject<V1Secret>(client, {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name: `${objectName}-mirror`,
          namespace: objectNamespace,
          labels: { [TEST_LABEL]: labelValue },
        },
        type: "Opaque",
        data: Object.fromEntries(
          Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
        ),
      });
      await midReconcile?.(ctx);
      await applyObject<V1ConfigMap>(client, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: objectName,
          namespace: objectNamespace,
          annotations: { [KEY_COUNT_ANNOTATION]: String(Object.keys(data).length) },
        },
      });
      return reconcileDone();
    },
  });
  controller.watch(informer);
  const stop = async () => {
    await controller.stop({ timeoutMs: 5_000 });
    await informer.stop();
  };
  cleanups.push(stop);
  return {
    informer,
    controller,
    start: async () => {
      informer.start();
      await informer.waitForSync({ timeoutMs: 15_000 });
      await controller.start();
    },
    stop,
  };
}

async function createConfigMap(name: string, labelValue: string, keyCount: number): Promise<void> {
  const data = Object.fromEntries(
    Array.from({ length: keyCount }, (_, i) => [`key-${i}`, `value-${i}-of-${name}`]),
  );
  await client.core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name, labels: { [TEST_LABEL]: labelValue } }, data },
  });
}

/** Throws unless the Secret mirrors the ConfigMap exactly and the ConfigMap carries the right count. */
async function assertMirrored(name: string): Promise<void> {
  const configMap = await client.core.readNamespacedConfigMap({ name, namespace });
  let secret: V1Secret;
  try {
    secret = await client.core.readNamespacedSecret({ name: `${name}-mirror`, namespace });
  } catch (error) {
    if (isNotFound(error)) throw new Error(`secret ${name}-mirror does not exist yet`);
    throw error;
  }
  const expected = configMap.data ?? {};
  const mirrored = Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
  );
  assert.deepEqual(mirrored, expected, `secret ${name}-mirror data`);
  assert.equal(
    configMap.metadata?.annotations?.[KEY_COUNT_ANNOTATION],
    String(Object.keys(expected).length),
    `key count annotation on ${name}`,
  );
}

async function assertAllMirrored(names: string[]): Promise<void> {
  for (const name of names) await assertMirrored(name);
}

describe("controller runtime against a real cluster", { timeout: 180_000 }, () => {
  test("(a) converges for five ConfigMaps; applying again changes nothing", { timeout: 60_000 }, async () => {
    const labelValue = `${run}-a`;
    const names = [1, 2, 3, 4, 5].map((n) => `cm-a-${n}`);
    await Promise.all(names.map((name, i) => createConfigMap(name, labelValue, i + 1)));
    const mirror = mirrorController({ name: "mirror-a", labelValue });
    await mirror.start();
    await eventually(() => assertAllMirrored(names), CONVERGE);

    const secret = await client.core.readNamespacedSecret({ name: "cm-a-3-mirror", namespace });
    assert.ok(
      secret.metadata?.managedFields?.some(
        (entry) => entry.manager === FIELD_MANAGER && entry.operation === "Apply",
      ),
      "the Secret's fields are owned by the tenantry apply manager",
    );
    // Idempotence: the same apply again must not produce a new resourceVersion.
    const again = await applyObject<V1Secret>(client, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "cm-a-3-mirror", namespace, labels: { [TEST_LABEL]: labelValue } },
      type: "Opaque",
      data: secret.data ?? {},
    });
    assert.equal(again.metadata?.resourceVersion, secret.metadata?.resourceVersion);
    assert.equal(mirror.controller.stats().reconcileErrorsTotal, 0);
    await mirror.stop();
  });

  test("(b) keeps reconciling after the informer's watch connection drops", { timeout: 60_000 }, async () => {
    const labelValue = `${run}-b`;
    const mirror = mirrorController({ name: "mirror-b", labelValue });
    await mirror.start();
    await createConfigMap("cm-b-1", labelValue, 2);
    await eventually(() => assertMirrored("cm-b-1"), CONVERGE);

    const watchesBefore = mirror.informer.stats().watches;
    assert.equal(mirror.informer.disconnectForTest(), true, "a watch was open");
    await createConfigMap("cm-b-2", labelValue, 3);
    await eventually(() => assertMirrored("cm-b-2"), CONVERGE);
    const stats = mirror.informer.stats();
    assert.ok(stats.watches > watchesBefore, "a new watch connection was opened");
    assert.ok(stats.failures >= 1, "the drop was seen as a failure");
    assert.equal(stats.lists, 1, "resumed from the last resourceVersion without a relist");
    await mirror.stop();
  });

  test("(c) a fresh controller converges after one was killed mid-reconcile", {
    timeout: 60_000,
  }, async () => {
    const labelValue = `${run}-c`;
    const names = [0, 1, 2, 3].map((n) => `cm-c-${n}`);
    await Promise.all(names.map((name) => createConfigMap(name, labelValue, 2)));

    let blockedSignal: AbortSignal | undefined;
    let markBlocked!: () => void;
    const blocked = new Promise<void>((resolve) => {
      markBlocked = resolve;
    });
    const first = mirrorController({
      name: "mirror-c-first",
      labelValue,
      midReconcile: async (ctx) => {
        if (ctx.ref.name !== "cm-c-0") return;
        blockedSignal = ctx.signal;
        markBlocked();
        // Never finishes: the Secret is written, the annotation never is.
        await new Promise<never>(() => {});
      },
    });
    await first.start();
    await blocked;
    await first.controller.stop({ timeoutMs: 0 });
    await first.informer.stop();
    assert.equal(blockedSignal?.aborted, true, "the abandoned reconcile was told to give up");
    const leftBehind = await client.core.readNamespacedConfigMap({ name: "cm-c-0", namespace });
    assert.equal(
      leftBehind.metadata?.annotations?.[KEY_COUNT_ANNOTATION],
      undefined,
      "cm-c-0 was left half done",
    );

    // While no controller runs, the half-done object changes: a key disappears, another appears.
    await client.core.replaceNamespacedConfigMap({
      name: "cm-c-0",
      namespace,
      body: { ...leftBehind, data: { "key-1": "kept", late: "added while down" } },
    });

    const second = mirrorController({ name: "mirror-c-second", labelValue });
    await second.start();
    await eventually(() => assertAllMirrored(names), CONVERGE);
    await second.stop();
  });

  test("(d) exactly one of two electors leads, and the other takes over when it stops", {
    timeout: 60_000,
  }, async () => {
    const leaseName = uniqueName("lease");
    const started: string[] = [];
    const elector = (suffix: string) => {
      const identity = `${run}-${suffix}`;
      const candidate = new LeaderElector({
        lease: { client, namespace, name: leaseName },
        identity,
        leaseDurationMs: 4_000,
        renewDeadlineMs: 3_000,
        retryPeriodMs: 500,
        onStartedLeading: () => {
          started.push(identity);
        },
      });
      cleanups.push(() => candidate.stop());
      return candidate;
    };
    const a = elector("a");
    const b = elector("b");
    a.start();
    b.start();

    const leader = await eventually(
      () => {
        const leaders = [a, b].filter((candidate) => candidate.isLeader());
        assert.equal(leaders.length, 1, "exactly one leader");
        return leaders[0]!;
      },
      { timeoutMs: 15_000 },
    );
    const follower = leader === a ? b : a;
    // Leadership is stable: over several renew periods, never two leaders and no change.
    const until = Date.now() + 2_000;
    while (Date.now() < until) {
      assert.ok(leader.isLeader() && !follower.isLeader(), "leadership stayed put");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const lease = await client.coordination.readNamespacedLease({ name: leaseName, namespace });
    assert.equal(lease.spec?.holderIdentity, leader.identity);
    assert.deepEqual(started, [leader.identity]);

    const stoppedAt = Date.now();
    await leader.stop();
    await eventually(() => assert.ok(follower.isLeader(), "follower leads"), { timeoutMs: 5_000 });
    const takeoverMs = Date.now() - stoppedAt;
    assert.ok(takeoverMs < 5_000, `takeover took ${takeoverMs} ms`);
    const taken = await client.coordination.readNamespacedLease({ name: leaseName, namespace });
    assert.equal(taken.spec?.holderIdentity, follower.identity);
    assert.ok((taken.spec?.leaseTransitions ?? 0) >= 1);

    await follower.stop();
    const released = await client.coordination.readNamespacedLease({ name: leaseName, namespace });
    assert.equal(released.spec?.holderIdentity ?? "", "", "the last leader released the lease");
  });

  test("applyStatus writes the status subresource idempotently", { timeout: 60_000 }, async () => {
    const group = `${run}.test.tenantry.dev`;
    cleanups.push(await createWidgetCrd(client, group));

    type Widget = KubernetesObject & { spec?: { size: number }; status?: { conditions?: Condition[] } };
    const apiVersion = `${group}/v1`;
    const widget: Widget = {
      apiVersion,
      kind: "Widget",
      metadata: { name: "w1", namespace },
      spec: { size: 3 },
      status: { conditions: [] },
    };
    // Discovery of a just-established group can lag for a moment.
    const created = await eventually(() => applyObject(client, widget), {
      timeoutMs: 20_000,
      intervalMs: 500,
    });
    assert.equal(created.status, undefined, "status in the main resource apply is ignored by the server");

    const conditions = setCondition(
      [],
      { type: "Ready", status: "True", reason: "Reconciled", message: "ok", observedGeneration: 1 },
      Date.now(),
    );
    const withStatus = await applyStatus<Widget>(client, {
      apiVersion,
      kind: "Widget",
      metadata: { name: "w1", namespace },
      status: { conditions },
    });
    assert.ok(isTrue(withStatus.status?.conditions, "Ready"));
    assert.equal(withStatus.spec?.size, 3, "the status apply left the spec alone");
    const again = await applyStatus<Widget>(client, {
      apiVersion,
      kind: "Widget",
      metadata: { name: "w1", namespace },
      status: { conditions },
    });
    assert.equal(
      again.metadata?.resourceVersion,
      withStatus.metadata?.resourceVersion,
      "second status apply is a no-op",
    );
    const stored = await client.objects.read<Widget>({
      apiVersion,
      kind: "Widget",
      metadata: { name: "w1", namespace },
    });
    assert.deepEqual(stored.status?.conditions, conditions);
  });
});
