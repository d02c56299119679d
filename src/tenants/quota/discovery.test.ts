import assert from "node:assert/strict";
import { test } from "node:test";
import type { ClusterClient } from "../../kube/index.js";
import { KindResolver } from "./discovery.js";

function discovery(answers: Array<"fail" | "absent" | "present">) {
  let calls = 0;
  const getJson = async (path: string) => {
    if (path === "/apis/example.com") return { preferredVersion: { groupVersion: "example.com/v1" } };
    calls++;
    const answer = answers.shift() ?? "present";
    if (answer === "fail") throw Object.assign(new Error("etcd leader changed"), { code: 503 });
    return {
      resources: answer === "present" ? [{ name: "widgets", kind: "Widget", namespaced: true }] : [],
    };
  };
  return {
    client: { objects: { getJson } } as unknown as Pick<ClusterClient, "objects">,
    calls: () => calls,
  };
}

test("a failed or empty discovery is asked again after a while, never kept for good", async () => {
  let now = 0;
  const { client, calls } = discovery(["fail", "absent", "present"]);
  const resolver = new KindResolver(client, { now: () => now, retryAfterMs: 1000 });
  const widgets = { group: "example.com", resource: "widgets" };
  assert.equal(await resolver.resolve(widgets), undefined, "the API server failed");
  assert.equal(await resolver.resolve(widgets), undefined, "not asked again at once");
  assert.equal(calls(), 1);
  now += 1001;
  assert.equal(await resolver.resolve(widgets), undefined, "the CRD is not installed yet");
  now += 1001;
  assert.deepEqual(await resolver.resolve(widgets), {
    ...widgets,
    apiVersion: "example.com/v1",
    kind: "Widget",
  });
  now += 1_000_000;
  await resolver.resolve(widgets);
  assert.equal(calls(), 3, "what was found is kept");
});

test("concurrent resolutions share one discovery", async () => {
  const { client, calls } = discovery(["present"]);
  const resolver = new KindResolver(client);
  const widgets = { group: "example.com", resource: "widgets" };
  await Promise.all([resolver.resolve(widgets), resolver.resolve(widgets), resolver.resolve(widgets)]);
  assert.equal(calls(), 1);
});
