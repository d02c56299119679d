import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { componentCache, InformerCache, resourceKey } from "./cache.js";
import type { ClusterClient } from "./clients.js";
import { Informer } from "./informer.js";
import {
  type ListResult,
  type ListWatchSource,
  type ResourceSelector,
  WatchAbortedError,
} from "./list-watch.js";

/** A source that lists nothing and whose watches stay open until aborted. */
class QuietSource implements ListWatchSource<KubernetesObject> {
  readonly cluster = "home";
  lists = 0;
  constructor(readonly description: string) {}
  async list(): Promise<ListResult<KubernetesObject>> {
    this.lists++;
    return { items: [], resourceVersion: "1" };
  }
  watch(_rv: string, _timeout: number, _onEvent: unknown, onClose: (error?: unknown) => void) {
    return { abort: () => onClose(new WatchAbortedError()) };
  }
}

function cacheWithSources() {
  const sources: QuietSource[] = [];
  const cache = new InformerCache({ name: "home" } as ClusterClient, {
    make: (selector) => {
      const source = new QuietSource(resourceKey(selector));
      sources.push(source);
      return new Informer(source);
    },
  });
  return { cache, sources };
}

const runtimes: ResourceSelector = { apiVersion: "tenantry.dev/v1alpha1", kind: "Runtime" };

describe("InformerCache", () => {
  test("one informer per kind, namespace and selectors, whoever asks", () => {
    const { cache, sources } = cacheWithSources();
    const a = cache.informer(runtimes);
    const b = cache.informer({ ...runtimes });
    const inNamespace = cache.informer({ ...runtimes, namespace: "x" });
    const labelled = cache.informer({ ...runtimes, labelSelector: "a=b" });
    assert.equal(a, b);
    assert.notEqual(a, inNamespace);
    assert.notEqual(a, labelled);
    assert.equal(sources.length, 3);
    assert.deepEqual(
      cache.watched().map((s) => resourceKey(s)),
      sources.map((s) => s.description),
    );
  });

  test("start lists every informer once; one asked for later starts at once; stop ends them", async () => {
    const { cache, sources } = cacheWithSources();
    const early = cache.informer(runtimes);
    await cache.start();
    assert.ok(early.hasSynced());
    const late = cache.informer({ apiVersion: "v1", kind: "Pod" });
    await late.waitForSync({ timeoutMs: 5000 });
    assert.deepEqual(
      sources.map((s) => s.lists),
      [1, 1],
    );
    await cache.stop();
    assert.throws(() => cache.informer(runtimes), /stopped/);
  });

  test("a component stops the cache it made, never a shared one", async () => {
    const shared = cacheWithSources().cache;
    const given = componentCache({ client: {} as ClusterClient, cache: shared });
    assert.equal(given.cache, shared);
    await given.release();
    assert.doesNotThrow(() => shared.informer(runtimes), "the shared cache still serves");
    const own = componentCache({ client: { name: "home" } as ClusterClient });
    assert.notEqual(own.cache, shared);
    await own.release();
    assert.throws(() => own.cache.informer(runtimes), /stopped/);
  });
});
