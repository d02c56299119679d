import assert from "node:assert/strict";
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { openTokens, sharedRunAsUser, volumeOwner } from "./ownership.js";

const pod = (spec: Partial<NonNullable<V1Pod["spec"]>>): V1Pod => ({
  metadata: { name: "p", namespace: "ns", uid: "u" },
  spec: { containers: [], ...spec },
});

describe("a projected token's owner and mode, by the kubelet's rule", () => {
  test("the containers share a user only when each has that runAsUser, its own or the pod's", () => {
    assert.equal(sharedRunAsUser(pod({ containers: [{ name: "a" }, { name: "b" }] })), undefined);
    assert.equal(
      sharedRunAsUser(
        pod({ securityContext: { runAsUser: 1000 }, containers: [{ name: "a" }, { name: "b" }] }),
      ),
      1000,
    );
    assert.equal(
      sharedRunAsUser(
        pod({
          securityContext: { runAsUser: 1000 },
          containers: [{ name: "a" }, { name: "b", securityContext: { runAsUser: 2000 } }],
        }),
      ),
      undefined,
    );
    // An image's own user is not known to the kubelet: one container without a user is enough.
    assert.equal(
      sharedRunAsUser(
        pod({ containers: [{ name: "a", securityContext: { runAsUser: 1000 } }, { name: "b" }] }),
      ),
      undefined,
    );
    assert.equal(
      sharedRunAsUser(
        pod({
          initContainers: [{ name: "i", securityContext: { runAsUser: 3000 } }],
          securityContext: { runAsUser: 1000 },
          containers: [{ name: "a" }],
        }),
      ),
      undefined,
    );
  });

  const dir = mkdtemp(join(tmpdir(), "tenantry-ownership-"));
  after(async () => rm(await dir, { recursive: true, force: true }));

  async function tokenModeFor(spec: Partial<NonNullable<V1Pod["spec"]>>, defaultMode = 0o644) {
    const file = join(await dir, `token-${Math.random().toString(36).slice(2)}`);
    await writeFile(file, "t", { mode: 0o600 });
    await openTokens([{ file, defaultMode }], volumeOwner(pod(spec), { uid: 1000, gid: 1000 }));
    return (await stat(file)).mode & 0o777;
  }

  test("one user: the token stays that user's alone", async () => {
    assert.equal(
      await tokenModeFor({ securityContext: { runAsUser: 1000 }, containers: [{ name: "a" }] }),
      0o600,
    );
  });

  test("several users with an fsGroup: group read for that group", async () => {
    assert.equal(
      await tokenModeFor({ securityContext: { fsGroup: 2000 }, containers: [{ name: "a" }, { name: "b" }] }),
      0o640,
    );
  });

  test("several users without an fsGroup: the volume's defaultMode, so each can read it", async () => {
    assert.equal(await tokenModeFor({ containers: [{ name: "a" }, { name: "b" }] }), 0o644);
    assert.equal(await tokenModeFor({ containers: [{ name: "a" }, { name: "b" }] }, 0o440), 0o440);
  });
});
