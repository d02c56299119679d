import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import {
  type AlertNotification,
  backoffDelay,
  DELIVERY_HEADER,
  type DeliveryOutcome,
  SIGNATURE_HEADER,
  signBody,
  verifySignature,
  WebhookNotifier,
} from "./notifier.js";

const notification: AlertNotification = {
  status: "firing",
  rule: "stuck-pods",
  object: "Pod",
  condition: "long-pending",
  target: { kind: "Pod", namespace: "n", name: "p" },
  cluster: "home",
  since: "2026-01-01T00:00:00Z",
  firedAt: "2026-01-01T00:01:00Z",
  message: "pending for 1.0 min",
};

describe("webhook signature", () => {
  it("is HMAC-SHA256 of the body, hex, and verifies only with the same secret and body", () => {
    // RFC 4231 test case 2.
    assert.equal(
      signBody("Jefe", "what do ya want for nothing?"),
      "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    );
    const signature = signBody("s3cret", "{}");
    assert.ok(verifySignature("s3cret", "{}", signature));
    assert.ok(!verifySignature("other", "{}", signature));
    assert.ok(!verifySignature("s3cret", "{ }", signature));
    assert.ok(!verifySignature("s3cret", "{}", "sha256=00"));
  });

  it("backs off exponentially up to its ceiling", () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, 100, 1000)),
      [100, 200, 400, 800, 1000, 1000],
    );
  });
});

describe("webhook notifier", () => {
  let server: Server;
  let url: string;
  const received: { body: string; headers: IncomingMessage["headers"]; at: number }[] = [];
  let answers: number[] = [];
  let hold = false;

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({ body: Buffer.concat(chunks).toString(), headers: req.headers, at: Date.now() });
        if (hold) return;
        res.writeHead(answers.shift() ?? 200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const until = async (done: () => boolean) => {
    for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(done(), "condition not reached");
  };
  const secretRef = { namespace: "tenantry-system", name: "hook", key: "hmac-secret" };

  it("signs, and retries a 5xx with growing pauses under one delivery id until it is taken", async () => {
    received.length = 0;
    answers = [500, 503, 200];
    const outcomes: DeliveryOutcome[] = [];
    const notifier = new WebhookNotifier({
      baseDelayMs: 40,
      secretOf: async () => "s3cret",
      onOutcome: (o) => outcomes.push(o),
    });
    assert.ok(notifier.enqueue({ url, secretRef }, notification));
    await until(() => outcomes.length === 1);
    assert.deepEqual(outcomes, ["delivered"]);
    assert.equal(received.length, 3);
    for (const r of received) {
      assert.ok(verifySignature("s3cret", r.body, r.headers[SIGNATURE_HEADER] as string));
      assert.equal(r.headers[DELIVERY_HEADER], received[0]!.headers[DELIVERY_HEADER]);
      assert.deepEqual(JSON.parse(r.body), notification);
    }
    const gaps = [received[1]!.at - received[0]!.at, received[2]!.at - received[1]!.at];
    assert.ok(gaps[0]! >= 40 && gaps[1]! >= 80, `backoff gaps ${gaps}`);
    await notifier.stop();
  });

  it("gives up at once on a 4xx, and after its attempts on a dead receiver or a missing secret", async () => {
    received.length = 0;
    answers = [400];
    const outcomes: DeliveryOutcome[] = [];
    const options = { baseDelayMs: 5, maxAttempts: 3, onOutcome: (o: DeliveryOutcome) => outcomes.push(o) };
    const notifier = new WebhookNotifier({ ...options, secretOf: async () => "s3cret" });
    notifier.enqueue({ url }, notification);
    await until(() => outcomes.length === 1);
    assert.equal(received.length, 1);
    assert.equal(received[0]!.headers[SIGNATURE_HEADER], undefined, "unsigned without a secretRef");
    notifier.enqueue({ url: "http://127.0.0.1:1/closed" }, notification);
    await until(() => outcomes.length === 2);
    const noSecret = new WebhookNotifier({ ...options, secretOf: async () => undefined });
    noSecret.enqueue({ url, secretRef }, notification);
    await until(() => outcomes.length === 3);
    assert.deepEqual(outcomes, ["failed", "failed", "failed"]);
    assert.equal(received.length, 1, "nothing sent unsigned when its secret is missing");
    await Promise.all([notifier.stop(), noSecret.stop()]);
  });

  it("never blocks: a full queue drops what comes next while a receiver hangs", async () => {
    received.length = 0;
    hold = true;
    const outcomes: DeliveryOutcome[] = [];
    const notifier = new WebhookNotifier({
      capacity: 2,
      timeoutMs: 60_000,
      secretOf: async () => "s3cret",
      onOutcome: (o) => outcomes.push(o),
    });
    const accepted = [1, 2, 3, 4].map(() => notifier.enqueue({ url }, notification));
    assert.deepEqual(accepted, [true, true, false, false]);
    assert.deepEqual(outcomes, ["dropped", "dropped"]);
    assert.equal(notifier.pending(), 2);
    await until(() => received.length === 2);
    await notifier.stop();
    hold = false;
    server.closeAllConnections();
  });
});
