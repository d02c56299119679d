import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { addFinalizer, type FinalizerWriter, removeFinalizer } from "./finalizers.js";

/** One object kept as kube-apiserver would: a merge patch with a stale resourceVersion is a 409. */
function store(initial: KubernetesObject | undefined) {
  const object = initial && structuredClone(initial);
  const patches: KubernetesObject[] = [];
  const status = (code: number, reason: string) =>
    Object.assign(new Error(reason), { code, body: JSON.stringify({ kind: "Status", code, reason }) });
  const writer: FinalizerWriter = {
    async read<T extends KubernetesObject>() {
      if (!object) throw status(404, "NotFound");
      return structuredClone(object) as T;
    },
    async patchRaw<T extends KubernetesObject>(patch: T) {
      patches.push(structuredClone(patch));
      if (!object) throw status(404, "NotFound");
      if (patch.metadata?.resourceVersion !== object.metadata?.resourceVersion) throw status(409, "Conflict");
      object.metadata = {
        ...object.metadata,
        finalizers: patch.metadata?.finalizers,
        resourceVersion: String(Number(object.metadata?.resourceVersion) + 1),
      };
      return structuredClone(object) as T;
    },
  };
  return {
    writer,
    patches,
    current: () => object,
    change: (f: (o: KubernetesObject) => void) => object && f(object),
  };
}

const cached = (finalizers?: string[], resourceVersion = "1"): KubernetesObject => ({
  apiVersion: "tenantry.dev/v1alpha1",
  kind: "Runtime",
  metadata: { name: "r", namespace: "ns", resourceVersion, ...(finalizers ? { finalizers } : {}) },
});

describe("finalizers", () => {
  it("adds a finalizer with the resourceVersion it was decided on, and only once", async () => {
    const s = store(cached(["other"]));
    assert.equal(await addFinalizer(s.writer, cached(["other"]), "mine"), true);
    assert.deepEqual(s.current()?.metadata?.finalizers, ["other", "mine"]);
    assert.equal(s.patches[0]?.metadata?.resourceVersion, "1");
    assert.equal(await addFinalizer(s.writer, s.current()!, "mine"), false, "already there: no write");
    assert.equal(s.patches.length, 1);
  });

  it("keeps a finalizer another writer added meanwhile: a conflict is decided again on a fresh read", async () => {
    const s = store(cached(["mine"]));
    s.change((o) => {
      o.metadata!.finalizers = ["mine", "theirs"];
      o.metadata!.resourceVersion = "2";
    });
    assert.equal(await removeFinalizer(s.writer, cached(["mine"]), "mine"), true);
    assert.deepEqual(s.current()?.metadata?.finalizers, ["theirs"]);
    assert.deepEqual(
      s.patches.map((p) => p.metadata?.resourceVersion),
      ["1", "2"],
    );
  });

  it("counts an object already gone as done", async () => {
    const s = store(undefined);
    assert.equal(await removeFinalizer(s.writer, cached(["mine"]), "mine"), false);
    assert.equal(await addFinalizer(s.writer, cached([]), "mine"), false);
  });

  it("gives a conflict that keeps coming back to the caller", async () => {
    const s = store(cached(["mine"]));
    const writer: FinalizerWriter = {
      read: s.writer.read,
      patchRaw: async (patch, strategy) => {
        s.change((o) => {
          o.metadata!.resourceVersion = String(Number(o.metadata!.resourceVersion) + 1);
        });
        return s.writer.patchRaw(patch, strategy);
      },
    };
    await assert.rejects(removeFinalizer(writer, cached(["mine"]), "mine"), /Conflict/);
  });

  it("refuses an object without apiVersion or kind, which it could not address", async () => {
    const s = store(cached());
    await assert.rejects(
      addFinalizer(s.writer, { metadata: { name: "r" } }, "mine"),
      /apiVersion, kind and name/,
    );
  });
});
