import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1PersistentVolume } from "@kubernetes/client-node";
import { POOLED_VOLUME_LABEL } from "../api/names.js";
import { assignmentState } from "./provisioner.js";

const pvOf = (volume: string): V1PersistentVolume => ({
  metadata: { name: "pvc-1", labels: { [POOLED_VOLUME_LABEL]: volume } },
});

describe("a volume given to a claim", () => {
  test("is in use while its claim exists, before and after its PersistentVolume is made", () => {
    assert.equal(assignmentState("pool-a", true, undefined), "in-use");
    assert.equal(assignmentState("pool-a", true, pvOf("pool-a")), "in-use");
    // The claim is deleted; its PersistentVolume (Released) still names the volume.
    assert.equal(assignmentState("pool-a", false, pvOf("pool-a")), "in-use");
  });

  test("is superseded when the claim's PersistentVolume is another volume's, claim or no claim", () => {
    // Two reconciles of one claim in a burst, the second before the cache showed the first's
    // volume given: the second volume must not stay given to a claim that never uses it.
    assert.equal(assignmentState("pool-b", true, pvOf("pool-a")), "superseded");
    assert.equal(assignmentState("pool-b", false, pvOf("pool-a")), "superseded");
  });

  test("is orphaned when neither its claim nor the claim's PersistentVolume exists", () => {
    assert.equal(assignmentState("pool-a", false, undefined), "orphaned");
  });
});
