import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { ActionError, Actions, actionErrorOf, RestClient, stamped } from "./actions.js";

// Nothing listens here: input refused locally never reaches it.
const actions = new Actions({ url: "https://127.0.0.1:9", caPem: "" });

async function refusal(promise: Promise<unknown>): Promise<ActionError> {
  const err = await promise.then(
    () => assert.fail("accepted"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ActionError, String(err));
  return err;
}

test("creating a tenant is validated as `tenantry tenant create` validates it, naming the field", async () => {
  const base = { name: "acme", ownerKind: "User", ownerName: "alice" };
  const cases: [object, string, RegExp][] = [
    [{ ...base, name: "" }, "metadata.name", /required/],
    [{ ...base, ownerKind: "Robot" }, "spec.owners[0].kind", /User, Group, ServiceAccount/],
    [{ ...base, ownerName: "" }, "spec.owners[0].name", /required/],
    [{ ...base, quota: "pods" }, "spec.quota.hard", /name=quantity/],
    [{ ...base, quota: "pods=lots" }, "spec.quota.hard.pods", /pods/],
    [{ ...base, namespaceQuota: "many" }, "spec.namespaceQuota", /integer/],
    [{ ...base, name: "Not_A_Name" }, "metadata.name", /Not_A_Name|must match/],
  ];
  for (const [body, field, message] of cases) {
    const error = await refusal(actions.createTenant("token", body));
    assert.equal(error.status, 400, JSON.stringify(body));
    assert.equal(error.field, field, `${JSON.stringify(body)}: ${error.message}`);
    assert.match(error.message, message);
  }
});

test("an AccessGrant needs its namespace, name and grantee before it is sent", async () => {
  const full = {
    namespace: "demo-dev",
    name: "read",
    granteeName: "bob",
    resources: "configmaps",
    verbs: "get",
  };
  for (const field of ["namespace", "name", "granteeName"] as const) {
    const error = await refusal(actions.grantAccess("token", { ...full, [field]: "" }));
    assert.equal(
      error.field,
      { namespace: "metadata.namespace", name: "metadata.name", granteeName: "spec.grantees[0].name" }[field],
    );
  }
});

test("backup and restore names fit a label value (the backup controller labels its Jobs with them)", () => {
  const long = "a-runtime-name-of-many-characters-for-a-long-tenant-and-user-prefix";
  for (const name of [stamped(long), stamped(stamped(long), "-restore"), stamped("echo-one")]) {
    assert.ok(name.length <= 63, name);
    assert.match(name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, name);
  }
  assert.match(stamped("echo-one", "-restore"), /^echo-one-restore-\d{8}-\d{6}$/);
});

test("a REST API that is not running or does not answer is named in the refusal", async () => {
  const absent = await refusal(
    new RestClient("the runtimes Admin API", () => undefined).call("t", "GET", "/x"),
  );
  assert.equal(absent.status, 503);
  assert.match(absent.message, /the runtimes Admin API is not running/);
  // A port that was just free, so nothing listens there.
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  const gone = await refusal(
    new RestClient("the logical clouds API", () => ({ url: `http://127.0.0.1:${port}` })).call(
      "t",
      "GET",
      "/x",
    ),
  );
  assert.equal(gone.status, 502);
  assert.match(gone.message, /the logical clouds API did not answer: .*ECONNREFUSED/);
});

test("an admission refusal names its field after the refusing check's name, as tenantry's dispatcher writes it", () => {
  const message =
    'admission webhook "tenant-namespaces.admission.tenantry.dev" denied the request: accessgrants: spec.rules[0]: you may not grant "get nodes"';
  const refused = actionErrorOf({ body: JSON.stringify({ kind: "Status", code: 403, message }) });
  assert.equal(refused.field, "spec.rules[0]");
  const plain = actionErrorOf({
    body: JSON.stringify({ kind: "Status", code: 422, message: "spec.owners: required" }),
  });
  assert.equal(plain.field, "spec.owners");
});
