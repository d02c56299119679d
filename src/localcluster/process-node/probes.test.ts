import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, before, describe, test } from "node:test";
import { resolvePort, runProbe } from "./probes.js";

describe("probes run for real", () => {
  let server: Server;
  let port: number;
  const container = { name: "web", ports: [{ name: "http", containerPort: 0 }] };

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === "/slow") return; // never answers
      res.statusCode = req.url === "/ok" ? 200 : req.url === "/moved" ? 302 : 503;
      res.end(String(req.headers["x-probe"] ?? ""));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.81.0.250", resolve));
    port = (server.address() as { port: number }).port;
    container.ports[0]!.containerPort = port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  test("named ports resolve through the container's ports", () => {
    assert.equal(resolvePort("http", container), port);
    assert.equal(resolvePort(8080, container), 8080);
    assert.equal(resolvePort("8080", container), 8080);
    assert.equal(resolvePort("nope", container), undefined);
  });

  test("httpGet succeeds on 2xx and 3xx, fails on other codes, refusals and timeouts, as the kubelet words them", async () => {
    const probe = (path: string, timeoutSeconds = 1) =>
      runProbe({ httpGet: { path, port: "http" as never }, timeoutSeconds }, "127.81.0.250", container);
    assert.deepEqual(await probe("/ok"), { success: true, output: "" });
    assert.deepEqual(await probe("/moved"), { success: true, output: "" });
    assert.deepEqual(await probe("/down"), {
      success: false,
      output: "HTTP probe failed with statuscode: 503",
    });
    const slow = await probe("/slow");
    assert.equal(slow.success, false);
    assert.match(slow.output, /context deadline exceeded/);
    const refused = await runProbe({ httpGet: { path: "/", port: 1 as never } }, "127.81.0.251", container);
    assert.deepEqual(refused, {
      success: false,
      output: 'Get "http://127.81.0.251:1/": dial tcp 127.81.0.251:1: connect: connection refused',
    });
  });

  test("tcpSocket succeeds when the port accepts", async () => {
    assert.equal(
      (await runProbe({ tcpSocket: { port: port as never } }, "127.81.0.250", container)).success,
      true,
    );
    assert.deepEqual(await runProbe({ tcpSocket: { port: 1 as never } }, "127.81.0.251", container), {
      success: false,
      output: "dial tcp 127.81.0.251:1: connect: connection refused",
    });
  });

  test("exec probes are refused with a reason", async () => {
    const result = await runProbe({ exec: { command: ["true"] } }, "127.81.0.250", container);
    assert.deepEqual(result, {
      success: false,
      output: "exec probes are not run on the process node (httpGet and tcpSocket are)",
    });
  });
});
