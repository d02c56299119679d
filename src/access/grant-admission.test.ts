import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { describePermission, grantPermissions } from "./grant-admission.js";

describe("AccessGrant permissions", () => {
  test("every group × resource × verb × name a grant hands out, with its rule", () => {
    const permissions = grantPermissions({
      spec: {
        grantees: [{ kind: "User", name: "bob" }],
        rules: [
          { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] },
          {
            apiGroups: ["apps"],
            resources: ["deployments/scale"],
            verbs: ["update"],
            resourceNames: ["a", "b"],
          },
        ],
      },
    });
    assert.deepEqual(permissions.map(describePermission), [
      "get configmaps",
      "list configmaps",
      'update deployments/scale.apps "a"',
      'update deployments/scale.apps "b"',
    ]);
    assert.deepEqual(
      permissions.map((p) => p.field),
      ["spec.rules[0]", "spec.rules[0]", "spec.rules[1]", "spec.rules[1]"],
    );
  });
});
