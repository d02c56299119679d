import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NOT_NAMESPACE_BOOTSTRAP, privilegedRequester, webhookConfigurations } from "./configuration.js";
import { allow } from "./review.js";
import type { AdmissionWebhook } from "./server.js";

const rules = [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["pods"] }];
const webhook = (name: string, failurePolicy: "Fail" | "Ignore"): AdmissionWebhook => ({
  name,
  kind: "validating",
  path: `/validate/${name}`,
  failurePolicy,
  rules,
  matchConditions: [NOT_NAMESPACE_BOOTSTRAP],
  handle: () => allow(),
});

interface Entry {
  name: string;
  failurePolicy: string;
  matchConditions?: { name: string; expression: string }[];
  clientConfig: { url?: string; service?: { namespace: string; name: string; port: number; path: string } };
}
type Configuration = { metadata: { name: string }; webhooks: Entry[] };

describe("webhook configurations", () => {
  const [main, privileged] = webhookConfigurations(
    "tenantry",
    [webhook("strict.tenantry.dev", "Fail"), webhook("lenient.tenantry.dev", "Ignore")],
    { service: { namespace: "platform", name: "tenantry-webhooks", port: 443 }, caPem: "CA" },
    "platform",
  ) as unknown as Configuration[];

  test("a Fail webhook fails closed for everyone but privileged requesters", () => {
    assert.equal(main?.metadata.name, "tenantry");
    const strict = main!.webhooks.find((w) => w.name === "strict.tenantry.dev")!;
    assert.equal(strict.failurePolicy, "Fail");
    assert.deepEqual(
      strict.matchConditions?.map((c) => c.name),
      ["not-namespace-bootstrap", "not-privileged-requester"],
    );
    assert.equal(strict.matchConditions?.[1]?.expression, `!(${privilegedRequester("platform")})`);
    assert.deepEqual(strict.clientConfig.service, {
      namespace: "platform",
      name: "tenantry-webhooks",
      port: 443,
      path: "/validate/strict.tenantry.dev",
    });
  });

  test("its copy for privileged requesters, same name, ignores an outage", () => {
    assert.equal(privileged?.metadata.name, "tenantry-privileged");
    assert.deepEqual(
      privileged!.webhooks.map((w) => [w.name, w.failurePolicy, w.matchConditions?.at(-1)?.name]),
      [["strict.tenantry.dev", "Ignore", "privileged-requester"]],
    );
  });

  test("an Ignore webhook is registered once, for everyone", () => {
    const lenient = main!.webhooks.find((w) => w.name === "lenient.tenantry.dev")!;
    assert.deepEqual(lenient.matchConditions, [NOT_NAMESPACE_BOOTSTRAP]);
  });

  test("privileged: administrators, nodes, kube-system, the control plane and tenantry's namespace", () => {
    const expression = privilegedRequester("platform");
    for (const who of [
      "'system:masters'",
      "'system:nodes'",
      "'system:serviceaccounts:kube-system'",
      "'system:serviceaccounts:platform'",
      "'system:kube-controller-manager'",
    ]) {
      assert.ok(expression.includes(who), `${who} missing from ${expression}`);
    }
  });

  test("a webhook for everywhere fails closed for everyone, kube-system and tenantry's namespace included", () => {
    const [only] = webhookConfigurations(
      "tenantry",
      [{ ...webhook("node-guard.tenantry.dev", "Fail"), everywhere: true }],
      { url: "https://127.0.0.1:9443", caPem: "CA" },
      "platform",
    ) as unknown as (Configuration & { webhooks: (Entry & { namespaceSelector?: unknown })[] })[];
    const entry = only!.webhooks[0]!;
    assert.equal(entry.failurePolicy, "Fail");
    assert.deepEqual(entry.matchConditions, [NOT_NAMESPACE_BOOTSTRAP]);
    assert.equal(entry.namespaceSelector, undefined);
    assert.equal(
      webhookConfigurations(
        "tenantry",
        [{ ...webhook("node-guard.tenantry.dev", "Fail"), everywhere: true }],
        { url: "https://127.0.0.1:9443", caPem: "CA" },
        "platform",
      ).length,
      1,
      "no privileged copy",
    );
  });
});
