/**
 * What happens when a resourceVersion has been compacted away in etcd. Watches on the shared
 * test clusters are served by the API server's watch cache, which keeps its own window of
 * events in memory and answers from it regardless of etcd compaction. So these tests start a
 * cluster of their own with the watch cache off: every watch then reads etcd directly, and a
 * compacted resourceVersion is answered with 410 Expired, exactly as a long-disconnected
 * client meets it on a busy production cluster whose watch cache has moved on.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { V1ConfigMap } from "@kubernetes/client-node";
import {
  type ClusterClient,
  Informer,
  isGone,
  KubeListWatch,
  type ListResult,
  type ListWatchSource,
  loadClusterClient,
  type RawWatchEvent,
  statusOf,
  WatchAbortedError,
  type WatchHandle,
} from "../../src/kube/index.js";
import { ClusterHarness, type ClusterState } from "../../src/localcluster/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";

const TEST_LABEL = "tenantry.dev/test";

let dir: string;
let harness: ClusterHarness;
let cluster: ClusterState;
let client: ClusterClient;
let namespace: string;
const cleanups: Array<() => Promise<unknown>> = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "tenantry-expiry-"));
  harness = new ClusterHarness({ dir, log: () => {} });
  [cluster] = (await harness.up([
    { name: "no-watch-cache", nodes: 1, extraApiserverFlags: ["--watch-cache=false"] },
  ])) as [ClusterState];
  client = loadClusterClient(cluster.name, cluster.kubeconfig);
  namespace = uniqueName("kube-expiry");
  await client.core.createNamespace({ body: { metadata: { name: namespace } } });
});

after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  await harness?.reset().catch(() => {});
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * Compacts etcd up to its current revision through its gRPC gateway and returns that
 * revision: every older resourceVersion is gone for good.
 */
async function compactEtcd(): Promise<number> {
  const call = async (path: string, body: unknown): Promise<unknown> => {
    const response = await fetch(`http://127.0.0.1:${cluster.ports.etcdClient}/v3/kv/${path}`, {
      method: "POST",
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`etcd ${path}: HTTP ${response.status} ${await response.text()}`);
    return response.json();
  };
  // A range over the key "\0" touches nothing but returns the store's current revision.
  const range = (await call("range", { key: Buffer.from("\0").toString("base64") })) as {
    header: { revision: string };
  };
  await call("compaction", { revision: range.header.revision, physical: true });
  return Number(range.header.revision);
}

function configMap(name: string, labelValue: string, data: Record<string, string>): V1ConfigMap {
  return { metadata: { name, namespace, labels: { [TEST_LABEL]: labelValue } }, data };
}

function selectorFor(labelValue: string) {
  return { apiVersion: "v1", kind: "ConfigMap", namespace, labelSelector: `${TEST_LABEL}=${labelValue}` };
}

/** Names and data of the matching ConfigMaps as the API server has them now. */
async function serverState(labelValue: string): Promise<Record<string, Record<string, string>>> {
  const list = await client.core.listNamespacedConfigMap({
    namespace,
    labelSelector: `${TEST_LABEL}=${labelValue}`,
  });
  return Object.fromEntries(list.items.map((item) => [item.metadata?.name ?? "", item.data ?? {}]));
}

function cachedState(informer: Informer<V1ConfigMap>): Record<string, Record<string, string>> {
  return Object.fromEntries(informer.list().map((item) => [item.metadata?.name ?? "", item.data ?? {}]));
}

/**
 * Passes lists and watches through to the real API server, except that while it is held,
 * new watches wait until release: the informer stays away while the test changes objects
 * and compacts etcd, then resumes from the resourceVersion it had.
 */
class HoldableListWatch<T> implements ListWatchSource<T> {
  readonly cluster: string;
  readonly description: string;
  /** resourceVersion of every watch actually opened, in order. */
  readonly openedFrom: string[] = [];
  private waiting: Array<() => void> | undefined;

  constructor(private readonly inner: ListWatchSource<T>) {
    this.cluster = inner.cluster;
    this.description = inner.description;
  }

  list(signal: AbortSignal): Promise<ListResult<T>> {
    return this.inner.list(signal);
  }

  hold(): void {
    this.waiting ??= [];
  }

  heldWatches(): number {
    return this.waiting?.length ?? 0;
  }

  release(): void {
    const waiting = this.waiting ?? [];
    this.waiting = undefined;
    for (const open of waiting) open();
  }

  watch(
    resourceVersion: string,
    timeoutSeconds: number,
    onEvent: (event: RawWatchEvent) => void,
    onClose: (error?: unknown) => void,
  ): WatchHandle {
    let opened: WatchHandle | undefined;
    let abortedWhileHeld = false;
    const open = () => {
      if (abortedWhileHeld) return;
      this.openedFrom.push(resourceVersion);
      opened = this.inner.watch(resourceVersion, timeoutSeconds, onEvent, onClose);
    };
    if (this.waiting) this.waiting.push(open);
    else open();
    return {
      abort: () => {
        if (opened) return opened.abort();
        if (abortedWhileHeld) return;
        abortedWhileHeld = true;
        onClose(new WatchAbortedError());
      },
    };
  }
}

describe("resourceVersions compacted away in etcd (API server without watch cache)", () => {
  test("KubeListWatch: a watch from a compacted resourceVersion ends with 410 Expired", async () => {
    const labelValue = "watch";
    const source = new KubeListWatch<V1ConfigMap>(client, selectorFor(labelValue));
    const listed = await source.list(new AbortController().signal);
    for (const name of ["a", "b", "c"]) {
      await client.core.createNamespacedConfigMap({
        namespace,
        body: configMap(name, labelValue, { v: "1" }),
      });
    }
    await client.core.replaceNamespacedConfigMap({
      name: "a",
      namespace,
      body: configMap("a", labelValue, { v: "2" }),
    });
    await client.core.deleteNamespacedConfigMap({ name: "b", namespace });
    const compactedAt = await compactEtcd();
    assert.ok(compactedAt > Number(listed.resourceVersion), "the listed resourceVersion was compacted");

    const watch = (resourceVersion: string) => {
      const events: RawWatchEvent[] = [];
      let closes = 0;
      let handle!: WatchHandle;
      const closed = new Promise<unknown>((resolve) => {
        handle = source.watch(
          resourceVersion,
          60,
          (event) => events.push(event),
          (error) => {
            closes++;
            resolve(error);
          },
        );
      });
      cleanups.push(async () => handle.abort());
      return { events, closed, handle, closes: () => closes };
    };

    const stale = watch(listed.resourceVersion);
    assert.equal(await stale.closed, undefined, "the server ends the stream after the error");
    assert.equal(stale.closes(), 1);
    assert.deepEqual(
      stale.events.map((event) => event.type),
      ["ERROR"],
      "no event from before the compaction is replayed",
    );
    const status = stale.events[0]?.object;
    assert.ok(isGone(status), `410 Gone, got ${JSON.stringify(status)}`);
    assert.equal(statusOf(status)?.reason, "Expired");
    assert.match(statusOf(status)?.message ?? "", /too old/);

    // A fresh list gives a resourceVersion that watches normally after the same compaction.
    const relisted = await source.list(new AbortController().signal);
    assert.deepEqual(relisted.items.map((item) => item.metadata?.name).sort(), ["a", "c"]);
    const fresh = watch(relisted.resourceVersion);
    await client.core.deleteNamespacedConfigMap({ name: "c", namespace });
    await eventually(
      () =>
        assert.deepEqual(
          fresh.events.map((event) => `${event.type} ${(event.object as V1ConfigMap).metadata?.name}`),
          ["DELETED c"],
        ),
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    fresh.handle.abort();
    assert.ok((await fresh.closed) instanceof WatchAbortedError);
  });

  test("Informer: resuming from a compacted resourceVersion relists and converges, deletions included", async () => {
    const labelValue = "informer";
    for (const name of ["kept", "changed", "removed"]) {
      await client.core.createNamespacedConfigMap({
        namespace,
        body: configMap(name, labelValue, { v: "1" }),
      });
    }
    const source = new HoldableListWatch(new KubeListWatch<V1ConfigMap>(client, selectorFor(labelValue)));
    const informer = new Informer<V1ConfigMap>(source, { backoff: { initialMs: 20, maxMs: 200 } });
    cleanups.push(() => informer.stop());
    const seen: string[] = [];
    informer.addHandler({
      onAdd: (obj) => seen.push(`add ${obj.metadata?.name}`),
      onUpdate: (_oldObj, newObj) => seen.push(`update ${newObj.metadata?.name}`),
      onDelete: (obj) => seen.push(`delete ${obj.metadata?.name}`),
    });
    informer.start();
    await informer.waitForSync({ timeoutMs: 15_000 });
    assert.deepEqual(cachedState(informer), await serverState(labelValue));

    // Take the informer away: drop its watch and keep the next one from connecting.
    source.hold();
    await eventually(() => assert.ok(informer.disconnectForTest(), "a watch is open"), { intervalMs: 20 });
    await eventually(() => assert.equal(source.heldWatches(), 1), { intervalMs: 20 });
    const resumeFrom = informer.lastResourceVersion();
    const before = informer.stats();
    const watchesBefore = source.openedFrom.length;
    seen.length = 0;

    await client.core.createNamespacedConfigMap({
      namespace,
      body: configMap("added", labelValue, { v: "1" }),
    });
    await client.core.replaceNamespacedConfigMap({
      name: "changed",
      namespace,
      body: configMap("changed", labelValue, { v: "2" }),
    });
    await client.core.deleteNamespacedConfigMap({ name: "removed", namespace });
    const compactedAt = await compactEtcd();
    assert.ok(compactedAt > Number(resumeFrom), "the informer's resourceVersion was compacted");
    source.release();

    const expected = await serverState(labelValue);
    assert.deepEqual(expected, { added: { v: "1" }, changed: { v: "2" }, kept: { v: "1" } });
    await eventually(() => assert.deepEqual(cachedState(informer), expected), { timeoutMs: 20_000 });
    const stats = informer.stats();
    assert.equal(
      source.openedFrom[watchesBefore],
      resumeFrom,
      "the informer first tried to resume where it left off",
    );
    assert.ok(stats.expired > before.expired, "the 410 was recognised as an expired resourceVersion");
    assert.equal(stats.lists, before.lists + 1, "exactly one relist");
    assert.deepEqual(seen.sort(), ["add added", "delete removed", "update changed"]);
    for (const item of informer.list()) {
      const onServer = await client.core.readNamespacedConfigMap({
        name: item.metadata?.name ?? "",
        namespace,
      });
      assert.equal(item.metadata?.resourceVersion, onServer.metadata?.resourceVersion);
    }

    // After the relist the informer follows the cluster again through a normal watch.
    await client.core.deleteNamespacedConfigMap({ name: "kept", namespace });
    await eventually(() => assert.equal(informer.get(namespace, "kept"), undefined), { timeoutMs: 10_000 });
    assert.equal(informer.stats().lists, before.lists + 1);
    await informer.stop();
  });
});
