import assert from "node:assert/strict";
import { Agent, request } from "node:https";
import { before, describe, test } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { type HttpsJsonAnswer, httpsJson } from "../../test/support/https-json.js";
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from "../pki/index.js";
import type { AdmissionReviewRequest } from "./schema.js";
import { type AdmissionWebhook, malformedReview, type WebhookCallers, WebhookServer } from "./server.js";
import type { WebhookTls } from "./tls.js";

const namespaces = {
  rules: [
    {
      apiGroups: [""],
      apiVersions: ["v1"],
      operations: ["CREATE", "UPDATE", "DELETE"],
      resources: ["namespaces"],
    },
  ],
};
const review = (fields: Partial<AdmissionReviewRequest["request"]>): AdmissionReviewRequest["request"] => ({
  uid: "u",
  kind: { group: "", version: "v1", kind: "Namespace" },
  resource: { group: "", version: "v1", resource: "namespaces" },
  operation: "CREATE",
  userInfo: { username: "alice" },
  ...fields,
});

test("an operation the webhook does not intercept is refused naming request.operation", () => {
  // The fuzzer's CONNECT with a null oldObject crashed the namespace webhook's UPDATE path.
  const message = malformedReview(namespaces, review({ operation: "CONNECT", object: {}, oldObject: null }));
  assert.equal(
    message,
    "request.operation: CONNECT is not intercepted by this webhook (CREATE, DELETE, UPDATE)",
  );
  assert.equal(
    malformedReview({ rules: [{ operations: ["*"] }] }, review({ operation: "CONNECT", object: {} })),
    undefined,
  );
});

test("the objects each operation carries are required, naming the field", () => {
  assert.equal(malformedReview(namespaces, review({ object: null })), "request.object: required for CREATE");
  assert.equal(
    malformedReview(namespaces, review({ operation: "UPDATE", object: {}, oldObject: null })),
    "request.oldObject: required for UPDATE",
  );
  assert.equal(malformedReview(namespaces, review({ operation: "DELETE", oldObject: {} })), undefined);
  assert.equal(malformedReview(namespaces, review({ object: {} })), undefined);
});

describe("stopping the webhook server", () => {
  let caPem: string;
  let tls: WebhookTls;
  /** kube-apiserver's webhook client certificate, and the CA the server trusts it by. */
  let apiServer: KeyPairPem;
  let callers: WebhookCallers;

  before(async () => {
    const ca = await createCertificateAuthority("drain-test-ca");
    caPem = ca.certPem;
    tls = {
      caPem,
      serving: await issueCertificate(ca, {
        commonName: "webhooks",
        ipAddresses: ["127.0.0.1"],
        usage: "server",
      }),
    };
    const clientCa = await createCertificateAuthority("drain-test-client-ca");
    apiServer = await issueCertificate(clientCa, { commonName: "kube-apiserver", usage: "client" });
    callers = { clientCaPem: clientCa.certPem };
  });

  /** A validating webhook whose answers wait until `release` is called. */
  function gatedWebhook(): { webhook: AdmissionWebhook; entered: Promise<void>; release: () => void } {
    let entered!: () => void;
    let release!: () => void;
    const enteredPromise = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    return {
      entered: enteredPromise,
      release,
      webhook: {
        name: "slow.test.tenantry.dev",
        kind: "validating",
        path: "/validate/slow",
        failurePolicy: "Fail",
        ...namespaces,
        async handle() {
          entered();
          await released;
          return { allowed: true };
        },
      },
    };
  }

  function post(
    url: string,
    body: unknown,
    agent?: Agent,
  ): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }> {
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method: "POST",
          ca: caPem,
          cert: apiServer.certPem,
          key: apiServer.keyPem,
          agent: agent ?? false,
          headers: { "content-type": "application/json" },
        },
        (res) => {
          let text = "";
          res.on("data", (c: Buffer) => {
            text += c.toString();
          });
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }),
          );
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify(body));
    });
  }

  const admissionReview = {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: review({ uid: "in-flight-1", object: { metadata: { name: "ns" } } }),
  };

  test("answers the admission request in flight, closes its connection, then stops; new connections are refused", async () => {
    const gate = gatedWebhook();
    const server = new WebhookServer({ tls, callers });
    server.register(gate.webhook);
    const url = await server.start();
    // A keep-alive connection, as kube-apiserver holds to its webhooks.
    const agent = new Agent({ keepAlive: true, ca: caPem, cert: apiServer.certPem, key: apiServer.keyPem });
    const answer = post(`${url}/validate/slow`, admissionReview, agent);
    await gate.entered;
    let stopped = false;
    const stopping = server.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(stopped, false, "stop waits for the request in flight");
    assert.equal(server.pending, 1);
    gate.release();
    const { status, headers, body } = await answer;
    assert.equal(status, 200);
    assert.deepEqual((body.response as { uid: string; allowed: boolean }).uid, "in-flight-1");
    assert.equal((body.response as { allowed: boolean }).allowed, true);
    assert.equal(headers.connection, "close");
    assert.match(String(headers["x-request-id"]), /^[0-9a-f-]{36}$/);
    await stopping;
    await assert.rejects(post(`${url}/validate/slow`, admissionReview), /ECONNREFUSED/);
    agent.destroy();
  });

  test("cuts a request still unanswered after the drain timeout instead of waiting forever", async () => {
    const gate = gatedWebhook();
    const server = new WebhookServer({ tls, callers });
    server.register(gate.webhook);
    const url = await server.start();
    const answer = post(`${url}/validate/slow`, admissionReview);
    await gate.entered;
    await server.stop(100);
    await assert.rejects(answer, /socket hang up|ECONNRESET/);
    gate.release();
  });

  test("while draining, answers carry Connection: close; the caller's request id is echoed and logged with the review's uid", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: "info" },
      {
        write(line: string) {
          lines.push(JSON.parse(line));
        },
      },
    );
    const server = new WebhookServer({ tls, callers, logger });
    server.register({
      ...gatedWebhook().webhook,
      handle() {
        throw new Error("the quota store is down");
      },
    });
    const url = await server.start();
    server.drain();
    const answer = await new Promise<{ status: number; headers: Record<string, unknown> }>(
      (resolve, reject) => {
        const req = request(
          `${url}/validate/slow`,
          {
            method: "POST",
            ca: caPem,
            cert: apiServer.certPem,
            key: apiServer.keyPem,
            agent: false,
            headers: { "content-type": "application/json", "x-request-id": "req-42" },
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify(admissionReview));
      },
    );
    await server.stop();
    assert.equal(answer.status, 500);
    assert.equal(answer.headers.connection, "close");
    assert.equal(answer.headers["x-request-id"], "req-42");
    const failure = lines.find((l) => l.msg === "webhook handler failed");
    assert.equal(failure?.requestId, "req-42");
    assert.equal(failure?.uid, "in-flight-1");
    assert.equal(failure?.webhook, "slow.test.tenantry.dev");
  });
});

describe("who may send admission reviews", () => {
  let tls: WebhookTls;
  let apiServer: KeyPairPem;
  let stranger: KeyPairPem;
  let clientCaPem: string;
  const calls: string[] = [];
  const webhook: AdmissionWebhook = {
    name: "record.test.tenantry.dev",
    kind: "validating",
    path: "/validate/record",
    failurePolicy: "Fail",
    ...namespaces,
    handle(request) {
      calls.push(request.uid);
      return { allowed: true };
    },
  };
  const body = (uid: string) =>
    JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: review({ uid, object: { metadata: { name: "ns" } } }),
    });

  before(async () => {
    const serving = await createCertificateAuthority("callers-test-ca");
    tls = {
      caPem: serving.certPem,
      serving: await issueCertificate(serving, {
        commonName: "webhooks",
        ipAddresses: ["127.0.0.1"],
        usage: "server",
      }),
    };
    const clientCa = await createCertificateAuthority("callers-test-client-ca");
    clientCaPem = clientCa.certPem;
    apiServer = await issueCertificate(clientCa, { commonName: "kube-apiserver", usage: "client" });
    // Same name, another CA: what anyone can make for themselves.
    const other = await createCertificateAuthority("callers-test-other-ca");
    stranger = await issueCertificate(other, { commonName: "kube-apiserver", usage: "client" });
  });

  function call(url: string, path: string, client?: KeyPairPem, uid = "u"): Promise<HttpsJsonAnswer> {
    return httpsJson(`${url}${path}`, {
      ca: tls.caPem,
      ...(client ? { client } : {}),
      ...(path === "/healthz" ? {} : { body: body(uid) }),
    });
  }

  test("without kube-apiserver's client certificate a review is refused with 401 before any handler runs; with it, answered", async () => {
    const registry = new Registry();
    const server = new WebhookServer({ tls, callers: { clientCaPem }, registry });
    server.register(webhook);
    const url = await server.start();
    try {
      calls.length = 0;
      const anonymous = await call(url, webhook.path, undefined, "anonymous");
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.body.title, "client certificate required");
      assert.match(String(anonymous.body.detail), /no client certificate/);
      const forged = await call(url, webhook.path, stranger, "forged");
      assert.equal(forged.status, 401);
      assert.match(String(forged.body.detail), /not kube-apiserver's webhook client certificate/);
      assert.deepEqual(calls, [], "no handler saw a refused review");
      const real = await call(url, webhook.path, apiServer, "real");
      assert.equal(real.status, 200);
      assert.deepEqual(calls, ["real"]);
      // Probes need no certificate.
      assert.equal((await call(url, "/healthz")).status, 200);
      const metrics = await registry.getSingleMetricAsString("tenantry_admission_refused_callers_total");
      assert.match(metrics, /reason="no-certificate"} 1/);
      assert.match(metrics, /reason="untrusted-certificate"} 1/);
    } finally {
      await server.stop();
    }
  });

  test("a new serving certificate keeps the client CA: still only kube-apiserver is answered", async () => {
    const server = new WebhookServer({ tls, callers: { clientCaPem } });
    server.register(webhook);
    const url = await server.start();
    try {
      const ca = await createCertificateAuthority("callers-test-ca-2");
      const next: WebhookTls = {
        caPem: ca.certPem,
        serving: await issueCertificate(ca, { commonName: "w", ipAddresses: ["127.0.0.1"], usage: "server" }),
      };
      server.rotate(next);
      tls = next;
      assert.equal((await call(url, webhook.path)).status, 401);
      assert.equal((await call(url, webhook.path, stranger)).status, 401);
      assert.equal((await call(url, webhook.path, apiServer)).status, 200);
    } finally {
      await server.stop();
    }
  });

  test("callers: anyone answers without a certificate (a control plane that cannot present one)", async () => {
    const server = new WebhookServer({ tls, callers: "anyone" });
    server.register(webhook);
    const url = await server.start();
    try {
      assert.equal((await call(url, webhook.path)).status, 200);
    } finally {
      await server.stop();
    }
  });
});
