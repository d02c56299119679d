import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import {
  applicationCredentialAuth,
  KeystoneUnreachable,
  keystoneFetch,
  keystoneMessage,
  passwordAuth,
  subjectTokenOf,
} from "./index.js";

/** A server answering with `answer`, counting the requests it got. */
async function serve(
  answer: (
    n: number,
    req: import("node:http").IncomingMessage,
    res: import("node:http").ServerResponse,
  ) => void,
) {
  let n = 0;
  const server = createServer((req, res) => answer(++n, req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => n,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("the Keystone client pieces", () => {
  it("send JSON, read the issued token and Keystone's own refusal message", async () => {
    const server = await serve((_n, req, res) => {
      let body = "";
      req
        .on("data", (c) => (body += c))
        .on("end", () => {
          const auth = JSON.parse(body) as { auth: { identity: { methods: string[] } } };
          if (auth.auth.identity.methods[0] === "password") {
            res.writeHead(201, { "x-subject-token": "tok", "content-type": "application/json" });
            res.end(JSON.stringify({ token: {} }));
          } else {
            res.writeHead(401, { "content-type": "application/json" });
            res.end(
              JSON.stringify({
                error: { code: 401, message: "The request you have made requires authentication." },
              }),
            );
          }
        });
    });
    try {
      const issued = await keystoneFetch(`${server.url}/v3/auth/tokens`, {
        method: "POST",
        body: passwordAuth(
          { name: "u", domain: "Default", password: "p" },
          { name: "proj", domain: "Default" },
        ),
        timeoutMs: 5000,
      });
      assert.equal(issued.status, 201);
      assert.equal(subjectTokenOf(issued), "tok");
      const refused = await keystoneFetch(`${server.url}/v3/auth/tokens`, {
        method: "POST",
        body: applicationCredentialAuth({ id: "i", secret: "s" }),
        timeoutMs: 5000,
      });
      assert.equal(refused.status, 401);
      assert.equal(subjectTokenOf(refused), undefined);
      assert.equal(await keystoneMessage(refused), "The request you have made requires authentication.");
    } finally {
      await server.close();
    }
  });

  it("a connection reset is retried once on a new connection; a timeout is not", async () => {
    const resets = await serve((n, req, res) => {
      if (n === 1) req.socket.destroy();
      else res.end("{}");
    });
    try {
      const answer = await keystoneFetch(resets.url, { method: "GET", timeoutMs: 5000 });
      assert.equal(answer.status, 200);
      assert.equal(resets.requests(), 2);
    } finally {
      await resets.close();
    }
    const silent = await serve(() => {});
    try {
      await assert.rejects(
        keystoneFetch(silent.url, { method: "GET", timeoutMs: 200 }),
        (err: Error) => err instanceof KeystoneUnreachable && /no answer within 200 ms/.test(err.message),
      );
      assert.equal(silent.requests(), 1);
    } finally {
      await silent.close();
    }
  });

  it("a port nobody listens on is unreachable, naming the socket's error", async () => {
    const gone = await serve(() => {});
    const { url } = gone;
    await gone.close();
    await assert.rejects(
      keystoneFetch(url, { method: "GET", timeoutMs: 2000 }),
      (err: Error) => err instanceof KeystoneUnreachable && /ECONNREFUSED/.test(err.message),
    );
  });
});
