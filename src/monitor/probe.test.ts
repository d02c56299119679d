import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { type ProbeResult, Prober, renderEndpointUrl } from "./probe.js";

describe("endpoint URL template", () => {
  const pod = {
    metadata: { name: "web-1", labels: { "app.kubernetes.io/name": "web" }, annotations: { port: "8888" } },
    status: { podIP: "10.1.2.3" },
  };

  it("fills the pod's fields, labels and annotations", () => {
    assert.equal(
      renderEndpointUrl(
        "http://{{status.podIP}}:{{ metadata.annotations.port }}/api/{{metadata.labels.app.kubernetes.io/name}}",
        pod,
      ),
      "http://10.1.2.3:8888/api/web",
    );
  });

  it("names the field the pod lacks", () => {
    assert.throws(() => renderEndpointUrl("http://{{status.hostIP}}/", pod), /no value at status\.hostIP/);
    assert.throws(() => renderEndpointUrl("http://{{metadata}}/", pod), /no value at metadata/);
  });
});

describe("prober", () => {
  let server: Server;
  let base: string;
  let inFlight = 0;
  let maxInFlight = 0;
  const hangs = false;

  before(async () => {
    server = createServer((req, res) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const end = (status: number) => {
        inFlight--;
        res.writeHead(status).end();
      };
      if (req.url === "/hang" || hangs) return void req.on("close", () => inFlight--);
      setTimeout(() => end(req.url === "/fail" ? 503 : 200), 50);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const probe = {
    endpointUrl: "",
    // Generous: a loaded machine must not turn an answer into a timeout.
    timeoutSeconds: 30,
    retries: 1,
    statusCode: 200,
    initialDelaySeconds: 0,
    periodSeconds: 30,
  };
  const run = (prober: Prober, keys: string[], path: string, timeoutSeconds = probe.timeoutSeconds) =>
    new Promise<Map<string, ProbeResult>>((resolve) => {
      const results = new Map<string, ProbeResult>();
      for (const key of keys) prober.request(key, `${base}${path}`, { ...probe, timeoutSeconds });
      const timer = setInterval(() => {
        for (const key of keys) {
          const result = prober.result(key);
          if (result) results.set(key, result);
        }
        if (results.size === keys.length) {
          clearInterval(timer);
          resolve(results);
        }
      }, 10);
    });

  it("keeps no more probes in flight than its concurrency, and reports each result", async () => {
    maxInFlight = 0;
    const reported: string[] = [];
    const observed: boolean[] = [];
    const prober = new Prober({
      concurrency: 3,
      onResult: (key) => reported.push(key),
      observe: (_, ok) => observed.push(ok),
    });
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
    const results = await run(prober, keys, "/ok");
    assert.ok(maxInFlight <= 3, `at most 3 at once, saw ${maxInFlight}`);
    assert.ok([...results.values()].every((r) => r.ok));
    assert.deepEqual(reported.sort(), keys.sort());
    assert.equal(observed.length, 12);
    prober.stop();
  });

  it("fails on the wrong status and on no answer within the timeout, after its retries", async () => {
    const observed: boolean[] = [];
    const prober = new Prober({
      onResult: () => {},
      observe: (_, ok) => observed.push(ok),
      retryDelayMs: 10,
    });
    const wrong = (await run(prober, ["w"], "/fail")).get("w")!;
    assert.equal(wrong.ok, false);
    assert.match(wrong.message, /answered 503, not 200/);
    const silent = (await run(prober, ["s"], "/hang", 0.3)).get("s")!;
    assert.equal(silent.ok, false);
    assert.match(silent.message, /no answer within 0\.3 s/);
    assert.equal(observed.length, 4, "one attempt and one retry each");
    prober.stop();
  });
});
