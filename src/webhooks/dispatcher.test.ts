import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { webhookConfigurations } from "./configuration.js";
import {
  type AdmissionCheck,
  admissionEntries,
  labelsMatch,
  oncePerRequest,
  ruleMatches,
} from "./dispatcher.js";
import { type AdmissionRequest, allow, deny } from "./review.js";

const TENANT = "tenantry.dev/tenant";
const inTenants = { matchExpressions: [{ key: TENANT, operator: "Exists" }] };
const podRule = (operations: string[]) => ({
  apiGroups: [""],
  apiVersions: ["v1"],
  operations,
  resources: ["pods"],
  scope: "Namespaced",
});

const podCreate = (spec: Record<string, unknown> = {}): AdmissionRequest => ({
  uid: "u1",
  kind: { group: "", version: "v1", kind: "Pod" },
  resource: { group: "", version: "v1", resource: "pods" },
  namespace: "team-a",
  operation: "CREATE",
  userInfo: { username: "alice" },
  object: { metadata: { name: "p" }, spec },
});

function check(
  name: string,
  kind: "mutating" | "validating",
  extra: Partial<AdmissionCheck> = {},
): AdmissionCheck {
  return {
    name: `${name}.tenantry.dev`,
    kind,
    path: `/${kind}/${name}`,
    failurePolicy: "Fail",
    namespaceSelector: inTenants,
    rules: [podRule(["CREATE"])],
    handle: () => allow(),
    ...extra,
  };
}

const entryOf = (checks: AdmissionCheck[], kind: string) =>
  admissionEntries(checks, { tenantLabel: TENANT }).find(
    (e) => e.kind === kind && e.name.startsWith("tenant-namespaces."),
  )!;

describe("admission dispatcher", () => {
  test("mutators change one object in turn and answer one patch computed from the result", async () => {
    const seen: unknown[] = [];
    const first = check("first", "mutating", {
      handle: () => allow([{ op: "add", path: "/spec/tolerations", value: [{ key: "a" }] }]),
    });
    const second = check("second", "mutating", {
      handle: (request) => {
        const spec = (request.object as { spec: { tolerations: unknown[] } }).spec;
        seen.push(spec.tolerations);
        return allow([{ op: "add", path: "/spec/tolerations", value: [...spec.tolerations, { key: "b" }] }]);
      },
    });
    const decision = await entryOf([first, second], "mutating").handle(podCreate());
    assert.deepEqual(seen, [[{ key: "a" }]], "the second saw what the first did");
    assert.deepEqual(decision, {
      allowed: true,
      patch: [{ op: "add", path: "/spec/tolerations", value: [{ key: "a" }, { key: "b" }] }],
    });
  });

  test("every validator runs; the refusal names each check that refused", async () => {
    const entry = entryOf(
      [
        check("pod-safety", "validating", { handle: () => deny("spec.hostPID: not allowed") }),
        check("classes", "validating", { handle: () => deny("spec.x: not allowed", 422) }),
      ],
      "validating",
    );
    const decision = await entry.handle(podCreate());
    assert.deepEqual(decision, {
      allowed: false,
      code: 403,
      message: "pod-safety: spec.hostPID: not allowed; classes: spec.x: not allowed",
    });
  });

  test("a reserving check runs last and never for a request another check refused", async () => {
    const reserved: string[] = [];
    const quota = check("quota", "validating", {
      reserves: true,
      handle: (request) => {
        reserved.push(request.uid);
        return allow();
      },
    });
    const safety = check("pod-safety", "validating", {
      handle: (request) =>
        (request.object as { spec: { hostPID?: boolean } }).spec.hostPID ? deny("spec.hostPID: no") : allow(),
    });
    const entry = entryOf([quota, safety], "validating");
    assert.equal((await entry.handle(podCreate({ hostPID: true }))).allowed, false);
    assert.deepEqual(reserved, []);
    assert.equal((await entry.handle(podCreate())).allowed, true);
    assert.deepEqual(reserved, ["u1"]);
  });

  test("a check that ignores failures is skipped when it throws; one that fails closed fails the request", async () => {
    const lenient = check("lenient", "mutating", {
      failurePolicy: "Ignore",
      handle: () => {
        throw new Error("no informer yet");
      },
    });
    assert.deepEqual(await entryOf([lenient, check("other", "mutating")], "mutating").handle(podCreate()), {
      allowed: true,
    });
    const strict = { ...lenient, failurePolicy: "Fail" as const };
    await assert.rejects(async () => entryOf([strict], "mutating").handle(podCreate()), /no informer yet/);
  });

  test("checks that do not match the request by rules or matches() are not asked", async () => {
    const asked: string[] = [];
    const named = (name: string, extra: Partial<AdmissionCheck>) =>
      check(name, "validating", {
        ...extra,
        handle: () => {
          asked.push(name);
          return allow();
        },
      });
    const entry = entryOf(
      [
        named("updates", { rules: [podRule(["UPDATE"])] }),
        named("never", { matchConditions: [{ name: "x", expression: "false" }], matches: () => false }),
        named("pods", {}),
      ],
      "validating",
    );
    await entry.handle(podCreate());
    assert.deepEqual(asked, ["pods"]);
  });

  test("a pod creation in a tenant namespace matches one mutating and one validating entry", () => {
    const checks = [
      check("defaults", "mutating"),
      check("private-nodes", "mutating", { namespaceSelector: undefined, failurePolicy: "Ignore" }),
      check("safety", "validating"),
      check("quota", "validating", { reserves: true }),
      check("labelled", "mutating", { rules: [podRule(["UPDATE"])], objectSelector: inTenants }),
    ];
    const entries = admissionEntries(checks, { tenantLabel: TENANT });
    const tenantNamespace = { [TENANT]: "a" };
    const matching = entries.filter(
      (e) =>
        e.rules.some((r) => ruleMatches(r, podCreate())) &&
        labelsMatch(e.namespaceSelector ?? {}, tenantNamespace) &&
        !e.objectSelector,
    );
    assert.deepEqual(matching.map((e) => [e.kind, e.name]).sort(), [
      ["mutating", "tenant-namespaces.admission.tenantry.dev"],
      ["validating", "tenant-namespaces.admission.tenantry.dev"],
    ]);
    // Outside tenant namespaces, the check that reaches them keeps an entry of its own, disjoint.
    const outside = entries.find((e) => e.name === "private-nodes.tenantry.dev")!;
    assert.equal(labelsMatch(outside.namespaceSelector!, tenantNamespace), false);
    assert.equal(labelsMatch(outside.namespaceSelector!, {}), true);
    assert.equal(outside.failurePolicy, "Ignore");
  });

  test("shared entries are Fail with an Ignore copy for privileged requesters, never reinvoked", () => {
    const entries = admissionEntries(
      [check("defaults", "mutating"), check("private-nodes", "mutating", { failurePolicy: "Ignore" })],
      { tenantLabel: TENANT },
    );
    const configurations = webhookConfigurations(
      "tenantry",
      entries,
      { url: "https://127.0.0.1:9443", caPem: "CA" },
      "platform",
    ) as unknown as { metadata: { name: string }; webhooks: Record<string, unknown>[] }[];
    assert.deepEqual(
      configurations.map((c) =>
        c.webhooks.map((w) => [c.metadata.name, w.name, w.failurePolicy, w.reinvocationPolicy]),
      ),
      [
        [["tenantry", "tenant-namespaces.admission.tenantry.dev", "Fail", "Never"]],
        [["tenantry-privileged", "tenant-namespaces.admission.tenantry.dev", "Ignore", "Never"]],
      ],
    );
  });

  test("what the checks of one request look up is looked up once for that request", async () => {
    let lookups = 0;
    const tenantOf = () =>
      oncePerRequest("namespace/team-a/tenant", async () => {
        lookups += 1;
        return "a";
      });
    const asking = (name: string) =>
      check(name, "validating", { handle: async () => ((await tenantOf()) === "a" ? allow() : deny("no")) });
    const entry = entryOf([asking("one"), asking("two"), asking("three")], "validating");
    await entry.handle(podCreate());
    assert.equal(lookups, 1);
    await entry.handle(podCreate());
    assert.equal(lookups, 2, "a new request looks up again");
    await tenantOf();
    assert.equal(lookups, 3, "outside a request, every call looks up");
  });

  test("a check with matchConditions in a shared entry must say how it matches in process", () => {
    assert.throws(
      () =>
        admissionEntries(
          [check("guard", "validating", { matchConditions: [{ name: "c", expression: "true" }] })],
          {
            tenantLabel: TENANT,
          },
        ),
      /guard\.tenantry\.dev: matchConditions in a shared entry need matches\(\)/,
    );
  });
});
