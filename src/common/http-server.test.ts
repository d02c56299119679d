import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { request as httpsRequest } from "node:https";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { TLSSocket } from "node:tls";
import { createCertificateAuthority, issueCertificate } from "../pki/index.js";
import { HttpServer } from "./http-server.js";
import { PROBLEM_CONTENT_TYPE } from "./problem.js";

describe("the HTTP server shell", () => {
  it("listens on a free port, tells its URL, and answers with a request id (the caller's, else a new one)", async () => {
    const shell = HttpServer.fastify({ what: "test API", bodyLimit: 1024 });
    shell.app.get("/hello", async (request) => ({ id: request.id }));
    assert.throws(() => shell.url, /test API is not listening/);
    const url = await shell.listen();
    try {
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const given = await fetch(`${url}/hello`, { headers: { "x-request-id": "abc-1" } });
      assert.equal(given.headers.get("x-request-id"), "abc-1");
      assert.deepEqual(await given.json(), { id: "abc-1" });
      const made = await fetch(`${url}/hello`);
      assert.match(made.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
    } finally {
      await shell.close();
    }
  });

  it("answers errors and unknown routes as problems naming the server's limits", async () => {
    const shell = HttpServer.fastify({ what: "test API", bodyLimit: 16 });
    shell.app.post("/echo", async (request) => request.body);
    const url = await shell.listen();
    try {
      const missing = await fetch(`${url}/nowhere`);
      assert.equal(missing.status, 404);
      assert.ok(missing.headers.get("content-type")?.startsWith(PROBLEM_CONTENT_TYPE));
      const large = await fetch(`${url}/echo`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text: "x".repeat(64) }),
      });
      assert.equal(large.status, 413);
      assert.equal(((await large.json()) as { limit?: number }).limit, 16);
    } finally {
      await shell.close();
    }
  });

  it("draining asks clients to close their connection after each answer", async () => {
    const shell = HttpServer.fastify({ what: "test API", bodyLimit: 1024, inFlight: "answer" });
    shell.app.get("/hello", async () => "hi");
    const url = await shell.listen();
    try {
      assert.notEqual((await fetch(`${url}/hello`)).headers.get("connection"), "close");
      shell.drain();
      assert.equal((await fetch(`${url}/hello`)).headers.get("connection"), "close");
    } finally {
      await shell.close();
    }
  });

  it("stopping answers a request already received (answer), or cuts it at once (cut)", async () => {
    for (const inFlight of ["answer", "cut"] as const) {
      const shell = HttpServer.fastify({ what: "test API", bodyLimit: 1024, inFlight });
      shell.app.get("/slow", async () => {
        await sleep(300);
        return "done";
      });
      const url = await shell.listen();
      const answer = fetch(`${url}/slow`).then(
        async (res) => res.text(),
        (err: Error) => `failed: ${err.message}`,
      );
      await sleep(50);
      assert.equal(shell.pending, 1);
      await shell.close();
      const got = await answer;
      if (inFlight === "answer") assert.equal(got, "done");
      else assert.match(got, /^failed/);
    }
  });

  it("a plain handler gets request ids and drain too, and stopping ends what it owns", async () => {
    let ended = false;
    const shell = HttpServer.plain(
      { what: "test proxy" },
      {},
      (req, res) => {
        res.end(req.headers["x-request-id"]);
      },
      () => {
        ended = true;
      },
    );
    const url = await shell.listen();
    const first = await fetch(url, { headers: { "x-request-id": "r-1" } });
    assert.equal(first.headers.get("x-request-id"), "r-1");
    assert.equal(await first.text(), "r-1", "the handler sees the id");
    shell.drain();
    assert.equal((await fetch(url)).headers.get("connection"), "close");
    await shell.close();
    assert.ok(ended);
  });

  it("serves TLS and replaces its certificate without a restart (new connections get the new one)", async () => {
    const ca = await createCertificateAuthority("shell test CA");
    const names = { commonName: "localhost", ipAddresses: ["127.0.0.1"], usage: "server" as const };
    const first = await issueCertificate(ca, names);
    const second = await issueCertificate(ca, names);
    const shell = HttpServer.fastify({ what: "test API", bodyLimit: 1024, tls: first });
    shell.app.get("/hello", async () => "hi");
    const url = await shell.listen();
    try {
      assert.match(url, /^https:/);
      const served = () =>
        new Promise<string>((resolve, reject) => {
          const req = httpsRequest(`${url}/hello`, { ca: ca.certPem, agent: false }, (res) => {
            const peer = (res.socket as TLSSocket).getPeerCertificate();
            res.resume();
            resolve(peer.serialNumber);
          });
          req.on("error", reject).end();
        });
      const serialOf = (pem: string) => new X509Certificate(pem).serialNumber;
      assert.equal(await served(), serialOf(first.certPem));
      shell.replaceCertificate(second);
      assert.equal(await served(), serialOf(second.certPem));
    } finally {
      await shell.close();
    }
  });
});
