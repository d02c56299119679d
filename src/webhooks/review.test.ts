import assert from "node:assert/strict";
import { test } from "node:test";
import { allow, deny, pointerSegment, setLabelsPatch, toReviewResponse } from "./review.js";

test("a denial carries the code and message; an allowed patch is base64 JSON Patch", () => {
  assert.deepEqual(toReviewResponse("u1", deny("spec.x: too big")).response, {
    uid: "u1",
    allowed: false,
    status: { code: 403, message: "spec.x: too big" },
  });
  const patch = [{ op: "add" as const, path: "/a", value: 1 }];
  const response = toReviewResponse("u2", allow(patch)).response;
  assert.equal(response.patchType, "JSONPatch");
  assert.deepEqual(JSON.parse(Buffer.from(response.patch!, "base64").toString()), patch);
  assert.deepEqual(toReviewResponse("u3", allow([])).response, { uid: "u3", allowed: true });
});

test("label patches create missing parents and touch only labels that differ", () => {
  assert.deepEqual(setLabelsPatch({ metadata: {} }, { a: "1" }), [
    { op: "add", path: "/metadata/labels", value: { a: "1" } },
  ]);
  assert.deepEqual(setLabelsPatch({}, { a: "1" }), [
    { op: "add", path: "/metadata", value: { labels: { a: "1" } } },
  ]);
  assert.deepEqual(
    setLabelsPatch({ metadata: { labels: { "x/y": "old", a: "1" } } }, { "x/y": "new", a: "1", b: "2" }),
    [
      { op: "replace", path: "/metadata/labels/x~1y", value: "new" },
      { op: "add", path: "/metadata/labels/b", value: "2" },
    ],
  );
  assert.equal(pointerSegment("a~b/c"), "a~0b~1c");
});
