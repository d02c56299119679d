import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseMountPoints } from "./mounts.js";

describe("mount points", () => {
  test("are read from mountinfo with their escapes undone", () => {
    const text = [
      "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw",
      "120 22 7:3 / /tmp/cluster/storage/local/mounts/pool-x rw,nosuid,nodev - ext4 /dev/loop3 rw",
      "121 22 7:4 / /tmp/a\\040folder/mnt rw - ext4 /dev/loop4 rw",
      "",
    ].join("\n");
    assert.deepEqual(parseMountPoints(text), [
      "/",
      "/tmp/cluster/storage/local/mounts/pool-x",
      "/tmp/a folder/mnt",
    ]);
  });
});
