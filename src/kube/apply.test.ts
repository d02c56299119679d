import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import {
  APPLIED_DIGEST_ANNOTATION,
  applyIfChanged,
  applyObject,
  applyStatus,
  applyStatusUnlessGone,
  FIELD_MANAGER,
  holdsFields,
  isApplied,
  sameStoredJson,
  withAppliedDigest,
} from "./apply.js";
import { ClusterClient } from "./clients.js";

/**
 * A client whose server cannot be reached: a request that did go out would fail with a
 * connection error, so a validation message proves that nothing was sent.
 */
function unreachableClient(server = "https://127.0.0.1:1"): ClusterClient {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "nowhere", server, skipTLSVerify: server.startsWith("http:") }],
    users: [{ name: "admin", token: "unused" }],
    contexts: [{ name: "nowhere", cluster: "nowhere", user: "admin" }],
    currentContext: "nowhere",
  });
  return new ClusterClient("home", kubeConfig);
}

describe("server-side apply input checks", () => {
  const client = unreachableClient();

  test("every apply is made by the single tenantry field manager", () => {
    assert.equal(FIELD_MANAGER, "tenantry");
  });

  test("applyObject rejects objects without a name, apiVersion or kind before sending anything", async () => {
    await assert.rejects(
      applyObject(client, { apiVersion: "v1", kind: "ConfigMap", metadata: {} }),
      /needs metadata.name/,
    );
    await assert.rejects(
      applyObject(client, { kind: "ConfigMap", metadata: { name: "x" } }),
      /needs apiVersion and kind/,
    );
    await assert.rejects(
      applyObject(client, { apiVersion: "v1", metadata: { name: "x" } }),
      /needs apiVersion and kind/,
    );
  });

  test("applyStatus rejects the same objects before sending anything", async () => {
    await assert.rejects(
      applyStatus(client, { apiVersion: "v1", kind: "Namespace", metadata: {}, status: {} }),
      /needs metadata.name/,
    );
    await assert.rejects(
      applyStatus(client, { kind: "Namespace", metadata: { name: "x" }, status: {} }),
      /needs apiVersion and kind/,
    );
  });
});

describe("apply only what changed", () => {
  const desired: KubernetesObject & { spec: Record<string, unknown> } = {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: "p", namespace: "a", labels: { x: "1" } },
    spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { t: "a" } } }] }] },
  };

  test("the digest ignores key order and the resourceVersion precondition", () => {
    const reordered = {
      kind: desired.kind,
      spec: desired.spec,
      metadata: desired.metadata,
      apiVersion: desired.apiVersion,
    };
    const withVersion = { ...desired, metadata: { ...desired.metadata, resourceVersion: "42" } };
    const digest = (o: typeof desired) =>
      withAppliedDigest(o).metadata?.annotations?.[APPLIED_DIGEST_ANNOTATION];
    assert.equal(digest(reordered), digest(desired));
    assert.equal(digest(withVersion), digest(desired));
    assert.notEqual(digest({ ...desired, metadata: { ...desired.metadata, labels: {} } }), digest(desired));
  });

  test("a stored object with server defaults and bookkeeping still holds what was applied", () => {
    const stamped = withAppliedDigest(desired);
    const stored = {
      ...stamped,
      metadata: { ...stamped.metadata, uid: "u", resourceVersion: "7", managedFields: [] },
      spec: { ...stamped.spec, policyTypes: ["Ingress"] },
    };
    assert.ok(isApplied(stored, stamped));
  });

  test("a changed value, a dropped list item or a removed wanted field is not applied yet", () => {
    const stamped = withAppliedDigest(desired);
    const changed = { ...stamped, metadata: { ...stamped.metadata, labels: { x: "2" } } };
    assert.equal(isApplied(changed, stamped), false);
    const fewer = { ...stamped, spec: { ...stamped.spec, ingress: [] } };
    assert.equal(isApplied(fewer, stamped), false);
    // tenantry now wants the label gone: the stored object still matches field by field, the digest does not.
    const wantedLess = withAppliedDigest({ ...desired, metadata: { ...desired.metadata, labels: {} } });
    assert.equal(isApplied(stamped, wantedLess), false);
    assert.equal(isApplied(undefined, stamped), false);
  });

  test("fields are compared as values: lists item by item, objects may hold more", () => {
    assert.ok(holdsFields({ a: 1, b: [1, { c: 2, d: 3 }] }, { a: 1, b: [1, { c: 2 }] }));
    assert.equal(holdsFields({ a: [1, 2] }, { a: [1] }), false);
    assert.equal(holdsFields({ a: "1" }, { a: 1 }), false);
    assert.equal(holdsFields({ a: null }, { a: {} }), false);
  });

  test("applyIfChanged sends nothing when the cached object holds the desired one", async () => {
    const stamped = withAppliedDigest(desired);
    // The client cannot reach any server: a request would fail.
    assert.equal(await applyIfChanged(unreachableClient(), desired, stamped), false);
    await assert.rejects(applyIfChanged(unreachableClient(), desired, undefined));
  });
});

describe("sameStoredJson", () => {
  test("undefined fields count as absent; values, order of lists and absence still matter", () => {
    assert.ok(sameStoredJson({ a: 1, b: undefined }, { a: 1 }));
    assert.ok(sameStoredJson({ a: { x: 1, y: 2 } }, { a: { y: 2, x: 1 } }));
    assert.equal(sameStoredJson({ a: [1, 2] }, { a: [2, 1] }), false);
    assert.equal(sameStoredJson({ a: 1 }, { a: "1" }), false);
    assert.equal(sameStoredJson(undefined, {}), false);
  });
});

const DISCOVERY = {
  kind: "APIResourceList",
  apiVersion: "v1",
  groupVersion: "tenantry.dev/v1alpha1",
  resources: [
    {
      name: "workernodes",
      singularName: "workernode",
      namespaced: false,
      kind: "WorkerNode",
      verbs: ["patch"],
    },
  ],
};

describe("applyStatusUnlessGone", () => {
  /** An API server on loopback answering every status apply with `code` (and the request's object on 200). */
  async function answering(code: number, run: (client: ClusterClient, paths: string[]) => Promise<void>) {
    const paths: string[] = [];
    const server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        if (request.method === "GET") {
          // Discovery: how the object API learns the kind's plural and scope.
          response.writeHead(200, { "content-type": "application/json" });
          response.end(JSON.stringify(DISCOVERY));
          return;
        }
        paths.push(`${request.method} ${request.url}`);
        response.writeHead(code, { "content-type": "application/json" });
        response.end(
          code === 200
            ? body
            : JSON.stringify({
                kind: "Status",
                apiVersion: "v1",
                status: "Failure",
                code,
                reason: "NotFound",
              }),
        );
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      await run(unreachableClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), paths);
    } finally {
      server.close();
    }
  }
  const node = {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "WorkerNode",
    metadata: { name: "n1" },
    status: { phase: "Running" },
  };

  test("writes the status subresource and hands back what was stored", async () => {
    await answering(200, async (client, paths) => {
      const stored = await applyStatusUnlessGone(client, node);
      assert.deepEqual(stored?.status, { phase: "Running" });
      assert.match(
        paths[0]!,
        /^PATCH \/apis\/tenantry\.dev\/v1alpha1\/workernodes\/n1\/status\?.*fieldManager=tenantry/,
      );
    });
  });

  test("an object gone (404) has no status to write: undefined, no failure", async () => {
    await answering(404, async (client) => {
      assert.equal(await applyStatusUnlessGone(client, node), undefined);
      await assert.rejects(applyStatus(client, node), "applyStatus itself still fails");
    });
  });

  test("any other failure still throws", async () => {
    await answering(500, async (client) => {
      await assert.rejects(applyStatusUnlessGone(client, node));
    });
    await assert.rejects(applyStatusUnlessGone(unreachableClient(), node));
  });
});
