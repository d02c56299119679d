import assert from "node:assert/strict";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { after, describe, it } from "node:test";
import { createCertificateAuthority, issueCertificate } from "../../pki/index.js";
import { HttpPlugin } from "./http.js";
import { PluginError } from "./spi.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const servers: { close(): void; closeAllConnections(): void }[] = [];
after(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

async function serve(handler: Handler): Promise<string> {
  const server = createHttpServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const json =
  (value: unknown, status = 200): Handler =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(value));
  };

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof PluginError, String(err));
    return err.message;
  }
  assert.fail("the callout succeeded");
}

describe("HTTP plugin transport", () => {
  it("POSTs each callout's JSON to <url>/<callout> and checks the reply", async () => {
    const seen: { url?: string; body: string }[] = [];
    const url = await serve((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => {
        body += c.toString();
      });
      req.on("end", () => {
        seen.push({ ...(req.url ? { url: req.url } : {}), body });
        json({ capabilities: ["deploy-service", "deploy-service"] })(req, res);
      });
    });
    const plugin = new HttpPlugin({ url: `${url}/plugin/` });
    assert.deepEqual(await plugin.init(), { capabilities: ["deploy-service"] });
    assert.deepEqual(seen, [{ url: "/plugin/init", body: "{}" }]);
  });

  it("a reply of the wrong shape, a Failure and a non-2xx answer fail with what was wrong", async () => {
    const wrong = new HttpPlugin({ url: await serve(json({ yaml: 42 })) });
    assert.match(await failure(wrong.deployService({} as never)), /invalid reply: yaml: Invalid value: 42/);
    const refused = new HttpPlugin({ url: await serve(json({ status: "Failure", message: "no capacity" })) });
    assert.match(await failure(refused.init()), /plugin init: no capacity/);
    const broken = new HttpPlugin({ url: await serve(json({ message: "the database is down" }, 500)) });
    assert.match(await failure(broken.init()), /answered 500: the database is down/);
    const text = new HttpPlugin({ url: await serve((_q, res) => res.end("not json")) });
    assert.match(await failure(text.init()), /without a JSON body: not json/);
  });

  it("a plugin that does not answer in time fails with the deadline; a closed port fails at once", async () => {
    const slow = new HttpPlugin({ url: await serve(() => {}), timeoutSeconds: 1 });
    const started = Date.now();
    assert.match(await failure(slow.init()), /did not answer within 1 s/);
    assert.ok(Date.now() - started < 5_000);
    const closed = new HttpPlugin({ url: "http://127.0.0.1:1" });
    assert.match(await failure(closed.init()), /ECONNREFUSED/);
  });

  it("https with the plugin's own CA bundle", async () => {
    const ca = await createCertificateAuthority("plugin-ca");
    const cert = await issueCertificate(ca, {
      commonName: "plugin",
      ipAddresses: ["127.0.0.1"],
      usage: "server",
    });
    const server = createHttpsServer(
      { cert: cert.certPem, key: cert.keyPem },
      json({ capabilities: ["deploy-service"] }),
    );
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    assert.deepEqual(await new HttpPlugin({ url, caBundle: ca.certPem }).init(), {
      capabilities: ["deploy-service"],
    });
    assert.match(await failure(new HttpPlugin({ url }).init()), /certificate/);
  });
});
