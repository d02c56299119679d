import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { KubernetesObject, V1ConfigMap } from "@kubernetes/client-node";
import {
  ClusterClient,
  type Condition,
  isGone,
  isNotFound,
  isTrue,
  KubeListWatch,
  type RawWatchEvent,
  type ResourceSelector,
  statusOf,
  WatchAbortedError,
} from "../../src/kube/index.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";

const TEST_LABEL = "tenantry.dev/test";
const run = uniqueName("lw");

let client: ClusterClient;
let namespace: string;
let otherNamespace: string;
const cleanups: Array<() => Promise<unknown>> = [];

before(async () => {
  client = new ClusterClient("home", testKubeConfig("home"));
  namespace = uniqueName("kube-lw");
  otherNamespace = uniqueName("kube-lw-other");
  for (const name of [namespace, otherNamespace]) {
    await client.core.createNamespace({ body: { metadata: { name } } });
  }
});

after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  for (const name of [namespace, otherNamespace]) {
    if (!name) continue;
    await client.core.deleteNamespace({ name }).catch((error) => {
      if (!isNotFound(error)) throw error;
    });
  }
});

function configMaps(selector: Omit<ResourceSelector, "apiVersion" | "kind">): KubeListWatch<V1ConfigMap> {
  return new KubeListWatch<V1ConfigMap>(client, { apiVersion: "v1", kind: "ConfigMap", ...selector });
}

async function createConfigMap(
  name: string,
  labelValue?: string,
  inNamespace = namespace,
): Promise<V1ConfigMap> {
  return client.core.createNamespacedConfigMap({
    namespace: inNamespace,
    body: { metadata: { name, labels: labelValue ? { [TEST_LABEL]: labelValue } : {} }, data: { v: "1" } },
  });
}

interface WatchRun {
  events: RawWatchEvent[];
  /** Resolves with what onClose reported. */
  closed: Promise<unknown>;
  abort: () => void;
  closes: () => number;
}

function startWatch(
  source: KubeListWatch<KubernetesObject>,
  resourceVersion: string,
  timeoutSeconds = 60,
): WatchRun {
  const events: RawWatchEvent[] = [];
  let closes = 0;
  let resolveClosed!: (error: unknown) => void;
  const closed = new Promise<unknown>((resolve) => {
    resolveClosed = resolve;
  });
  const handle = source.watch(
    resourceVersion,
    timeoutSeconds,
    (event) => events.push(event),
    (error) => {
      closes++;
      resolveClosed(error);
    },
  );
  cleanups.push(async () => handle.abort());
  return { events, closed, abort: () => handle.abort(), closes: () => closes };
}

/** `type name` of each object event, leaving out bookmarks. */
function objectEvents(events: RawWatchEvent[]): string[] {
  return events
    .filter((event) => event.type !== "BOOKMARK")
    .map((event) => `${event.type} ${(event.object as KubernetesObject).metadata?.name}`);
}

function sawObject(run: WatchRun, name: string): void {
  assert.ok(
    objectEvents(run.events).some((event) => event.endsWith(` ${name}`)),
    `saw ${name}`,
  );
}

describe("KubeListWatch against a real API server", () => {
  test("lists every page, only objects matching the labels, with apiVersion and kind filled in", async () => {
    const labelValue = `${run}-pages`;
    // One more than a page (500 objects) holds.
    const names = Array.from({ length: 501 }, (_, i) => `page-${String(i).padStart(3, "0")}`);
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((name) => createConfigMap(name, labelValue)));
    }
    await createConfigMap("unlabelled");
    await createConfigMap("other-label", `${run}-other`);

    const source = configMaps({ namespace, labelSelector: `${TEST_LABEL}=${labelValue}` });
    const firstPage = (await client.objects.getJson(`/api/v1/namespaces/${namespace}/configmaps`, {
      limit: "500",
      labelSelector: `${TEST_LABEL}=${labelValue}`,
    })) as { items: unknown[]; metadata: { continue?: string } };
    assert.equal(firstPage.items.length, 500);
    assert.ok(firstPage.metadata.continue, "the server needs a second page");

    const result = await source.list(new AbortController().signal);
    assert.deepEqual(result.items.map((item) => item.metadata?.name).sort(), names);
    assert.ok(result.items.every((item) => item.apiVersion === "v1" && item.kind === "ConfigMap"));
    assert.match(result.resourceVersion, /^\d+$/);
    assert.equal(source.cluster, "home");
  });

  test("watches from the list's resourceVersion: later changes only, filtered by labels, with bookmarks, then a clean close", async () => {
    const labelValue = `${run}-watch`;
    await createConfigMap("listed-before", labelValue);
    const source = configMaps({ namespace, labelSelector: `${TEST_LABEL}=${labelValue}` });
    const { resourceVersion } = await source.list(new AbortController().signal);
    // The API server sends a bookmark shortly before the watch's own timeout.
    const watch = startWatch(source, resourceVersion, 5);

    await createConfigMap("created", labelValue);
    await createConfigMap("not-matching", `${run}-elsewhere`);
    await client.core.patchNamespacedConfigMap({
      name: "created",
      namespace,
      body: [{ op: "replace", path: "/data/v", value: "2" }],
    });
    await client.core.deleteNamespacedConfigMap({ name: "listed-before", namespace });

    assert.equal(await watch.closed, undefined, "the server ended the watch cleanly at its timeout");
    assert.equal(watch.closes(), 1);
    assert.deepEqual(objectEvents(watch.events), [
      "ADDED created",
      "MODIFIED created",
      "DELETED listed-before",
    ]);
    const modified = watch.events.find((event) => event.type === "MODIFIED")?.object as V1ConfigMap;
    assert.deepEqual(modified.data, { v: "2" });
    assert.equal(modified.kind, "ConfigMap", "watch events carry their kind");
    const bookmark = watch.events.find((event) => event.type === "BOOKMARK")?.object as KubernetesObject;
    assert.ok(bookmark, "a bookmark arrived");
    assert.equal(bookmark.kind, "ConfigMap");
    assert.match(bookmark.metadata?.resourceVersion ?? "", /^\d+$/);
  });

  test("abort() ends the watch once with WatchAbortedError and no event follows", async () => {
    const labelValue = `${run}-abort`;
    const source = configMaps({ namespace, labelSelector: `${TEST_LABEL}=${labelValue}` });
    const { resourceVersion } = await source.list(new AbortController().signal);
    const aborted = startWatch(source, resourceVersion);
    // A second watch shows when the server has delivered what the aborted one no longer gets.
    const witness = startWatch(source, resourceVersion);

    await createConfigMap("first", labelValue);
    await eventually(() => sawObject(aborted, "first"), { timeoutMs: 10_000, intervalMs: 20 });
    aborted.abort();
    aborted.abort();
    assert.ok((await aborted.closed) instanceof WatchAbortedError);

    await createConfigMap("second", labelValue);
    await eventually(() => sawObject(witness, "second"), { timeoutMs: 10_000, intervalMs: 20 });
    assert.deepEqual(objectEvents(aborted.events), ["ADDED first"]);
    assert.equal(aborted.closes(), 1);
    witness.abort();
  });

  test("abort() while the watch is still connecting reports WatchAbortedError once and delivers nothing", async () => {
    const labelValue = `${run}-early-abort`;
    const source = configMaps({ namespace, labelSelector: `${TEST_LABEL}=${labelValue}` });
    const { resourceVersion } = await source.list(new AbortController().signal);
    const witness = startWatch(source, resourceVersion);
    // watch() connects asynchronously, so an abort right after it returns lands before the request is made.
    const aborted = startWatch(source, resourceVersion);
    aborted.abort();
    assert.ok((await aborted.closed) instanceof WatchAbortedError);

    await createConfigMap("after-abort", labelValue);
    await eventually(() => sawObject(witness, "after-abort"), { timeoutMs: 10_000, intervalMs: 20 });
    await sleep(200);
    assert.deepEqual(aborted.events, []);
    assert.equal(aborted.closes(), 1);
    witness.abort();
  });

  test("without a namespace, lists and watches span all namespaces", async () => {
    const labelValue = `${run}-wide`;
    await createConfigMap("here", labelValue);
    await createConfigMap("there", labelValue, otherNamespace);
    const selector = `${TEST_LABEL}=${labelValue}`;
    const clusterWide = configMaps({ labelSelector: selector });
    const { items, resourceVersion } = await clusterWide.list(new AbortController().signal);
    assert.deepEqual(
      items.map((item) => `${item.metadata?.namespace}/${item.metadata?.name}`).sort(),
      [`${namespace}/here`, `${otherNamespace}/there`].sort(),
    );
    const namespaced = await configMaps({ namespace, labelSelector: selector }).list(
      new AbortController().signal,
    );
    assert.deepEqual(
      namespaced.items.map((item) => item.metadata?.name),
      ["here"],
    );

    const watch = startWatch(clusterWide, resourceVersion);
    await createConfigMap("there-later", labelValue, otherNamespace);
    await eventually(() => sawObject(watch, "there-later"), { timeoutMs: 10_000, intervalMs: 20 });
    watch.abort();
  });

  test("a watch from before the API server's watch-cache window ends with 410 Expired", async () => {
    // The watch cache of a new resource starts at the resourceVersion current when it is
    // created; anything older is "too old" even though etcd still has it.
    const { resourceVersion: beforeCrd } = await configMaps({ namespace }).list(new AbortController().signal);
    const group = `${uniqueName("lw")}.test.tenantry.dev`;
    const crdName = `gadgets.${group}`;
    await client.apiextensions.createCustomResourceDefinition({
      body: {
        metadata: { name: crdName },
        spec: {
          group,
          scope: "Namespaced",
          names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
          versions: [
            {
              name: "v1",
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: "object", x_kubernetes_preserve_unknown_fields: true } },
            },
          ],
        },
      },
    });
    cleanups.push(() => client.apiextensions.deleteCustomResourceDefinition({ name: crdName }));
    await eventually(
      async () => {
        const crd = await client.apiextensions.readCustomResourceDefinition({ name: crdName });
        assert.ok(
          isTrue(crd.status?.conditions as Condition[] | undefined, "Established"),
          "CRD established",
        );
      },
      { timeoutMs: 20_000 },
    );
    const gadgets = new KubeListWatch<KubernetesObject>(client, {
      apiVersion: `${group}/v1`,
      kind: "Gadget",
      namespace,
    });
    // Discovery of a just-established group can lag for a moment.
    const { resourceVersion: current } = await eventually(() => gadgets.list(new AbortController().signal), {
      timeoutMs: 20_000,
      intervalMs: 500,
    });

    const expired = startWatch(gadgets, beforeCrd);
    assert.equal(await expired.closed, undefined, "the server ends the stream after the error");
    assert.equal(expired.events.length, 1);
    const [event] = expired.events;
    assert.equal(event?.type, "ERROR");
    assert.ok(isGone(event?.object), `410 Gone, got ${JSON.stringify(event?.object)}`);
    assert.equal(statusOf(event?.object)?.reason, "Expired");
    assert.match(statusOf(event?.object)?.message ?? "", /too old resource version/);

    // From a resourceVersion inside the window the same collection watches normally.
    const fresh = startWatch(gadgets, current);
    await client.objects.create({
      apiVersion: `${group}/v1`,
      kind: "Gadget",
      metadata: { name: "g1", namespace },
    });
    await eventually(() => sawObject(fresh, "g1"), { timeoutMs: 10_000, intervalMs: 20 });
    assert.equal(fresh.closes(), 0);
    fresh.abort();
  });
});
