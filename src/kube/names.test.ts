import assert from "node:assert/strict";
import { test } from "node:test";
import type { CoreV1Api } from "@kubernetes/client-node";
import { isDnsLabel, readNamespaceIfExists } from "./names.js";

test("DNS labels: lower-case alphanumerics and inner dashes, at most 63 characters", () => {
  for (const name of ["a", "demo-dev", "0a", "a".repeat(63)]) assert.ok(isDnsLabel(name), name);
  for (const name of ["", "Not_A_Name", "-a", "a-", "a.b", "a".repeat(64), "Êå%"])
    assert.ok(!isDnsLabel(name), name);
});

test("a namespace that cannot exist is not asked for; not found is undefined; other errors go on", async () => {
  const asked: string[] = [];
  const core = (answer: (name: string) => unknown) =>
    ({
      readNamespace: async ({ name }: { name: string }) => {
        asked.push(name);
        return answer(name);
      },
    }) as unknown as CoreV1Api;
  assert.equal(
    await readNamespaceIfExists(
      core(() => ({})),
      "Not_A_Name",
    ),
    undefined,
  );
  assert.deepEqual(asked, []);
  const notFound = core(() => {
    throw Object.assign(new Error("not found"), {
      code: 404,
      body: { kind: "Status", code: 404, reason: "NotFound" },
    });
  });
  assert.equal(await readNamespaceIfExists(notFound, "gone"), undefined);
  assert.deepEqual(
    await readNamespaceIfExists(
      core((name) => ({ metadata: { name } })),
      "here",
    ),
    {
      metadata: { name: "here" },
    },
  );
  const down = core(() => {
    throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
  });
  await assert.rejects(readNamespaceIfExists(down, "here"), /ECONNREFUSED/);
});
