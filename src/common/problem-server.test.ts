import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { Type } from "@sinclair/typebox";
import Fastify, { type FastifyInstance } from "fastify";
import { assertProblem, exchange, firstAnswer, parseAnswers } from "../../test/support/raw-http.js";
import { answerClientError, ProblemError } from "./problem.js";
import { problemServerOptions, serveProblems } from "./problem-server.js";

const LIMIT = 1024;

async function server(discardMs?: number): Promise<FastifyInstance> {
  const app = Fastify(problemServerOptions({ bodyLimit: LIMIT, maxParamLength: 64 }));
  serveProblems(app, { bodyLimit: LIMIT, ...(discardMs ? { discard: { ms: discardMs } } : {}) });
  app.post("/echo", async (request) => ({ got: request.body }));
  app.get(
    "/things/:name",
    { schema: { params: Type.Object({ name: Type.String({ maxLength: 8 }) }) } },
    async () => ({}),
  );
  app.get("/refused", async () => {
    throw new ProblemError(409, "conflict", "it is in the way", { field: "name" }, { "retry-after": "2" });
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return app;
}

const portOf = (s: Server) => (s.address() as AddressInfo).port;

function post(bytes: number, extraHeaders = ""): string {
  return `POST /echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${bytes}\r\n${extraHeaders}\r\n`;
}

describe("problem+json for every refusal of a Fastify server (real sockets)", () => {
  let app: FastifyInstance;
  let port: number;
  before(async () => {
    app = await server();
    port = portOf(app.server);
  });
  after(() => app.close());

  for (const [band, bytes] of [
    ["just over the limit", LIMIT + 1],
    ["600 KiB", 600 * 1024],
    ["20 MB", 20 * 1000 * 1000],
    ["100 MB", 100 * 1000 * 1000],
  ] as const) {
    it(`a body ${band}, sent whole before reading, gets its 413 naming the limit`, async () => {
      const answer = firstAnswer(await exchange(port, post(bytes), bytes));
      assert.equal(answer.status, 413, JSON.stringify(answer));
      assertProblem(answer);
      assert.deepEqual(answer.json, {
        type: "about:blank",
        title: "body too large",
        status: 413,
        detail: `the body is larger than ${LIMIT} bytes`,
        field: "body",
        limit: LIMIT,
      });
    });
  }

  it("a chunked body over the limit gets its 413", async () => {
    const head =
      "POST /echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    const chunk = `${(64 * 1024).toString(16)}\r\n${"a".repeat(64 * 1024)}\r\n`;
    const answer = firstAnswer(await exchange(port, `${head}${chunk.repeat(40)}0\r\n\r\n`));
    assert.equal(answer.status, 413);
    assert.equal(answer.json.limit, LIMIT);
  });

  it("a path segment over the router's limit is a 414 naming the limit", async () => {
    const answer = firstAnswer(
      await exchange(port, `GET /things/${"a".repeat(65)} HTTP/1.1\r\nhost: x\r\n\r\n`),
    );
    assert.equal(answer.status, 414);
    assertProblem(answer);
    assert.equal(answer.json.field, "path");
    assert.equal(answer.json.limit, 64);
  });

  it("a segment over the schema's limit is a 400 naming the field and the limit", async () => {
    const answer = firstAnswer(
      await exchange(port, `GET /things/${"a".repeat(9)} HTTP/1.1\r\nhost: x\r\n\r\n`),
    );
    assert.equal(answer.status, 400);
    assert.equal(answer.json.field, "name");
    assert.equal(answer.json.limit, 8);
  });

  it("a malformed URL is a 400 naming the path", async () => {
    const answer = firstAnswer(await exchange(port, "GET /things/%zz HTTP/1.1\r\nhost: x\r\n\r\n"));
    assert.equal(answer.status, 400);
    assertProblem(answer);
    assert.equal(answer.json.field, "path");
  });

  it("bytes past the Content-Length are a malformed next request: a 400 problem after the first answer", async () => {
    const answers = parseAnswers(await exchange(port, `${post(2)}{}garbage\r\n\r\n`, 0, { answers: 2 }));
    // The parser reads the garbage before the first request's answer is written: node answers
    // only the refusal then (its own default does the same), now as a problem.
    const refusal = answers.at(-1);
    assert.equal(refusal?.status, 400, JSON.stringify(answers));
    assertProblem(refusal);
    assert.equal(refusal.json.title, "malformed request");
  });

  it("both Content-Length and Transfer-Encoding: a 400 problem", async () => {
    const answer = firstAnswer(
      await exchange(port, `${post(2, "transfer-encoding: chunked\r\n")}2\r\n{}\r\n0\r\n\r\n`),
    );
    assert.equal(answer.status, 400);
    assertProblem(answer);
  });

  it("headers over the server's limit: a 431 naming the limit", async () => {
    const answer = firstAnswer(
      await exchange(port, `GET /things/a HTTP/1.1\r\nhost: x\r\nx-big: ${"b".repeat(20_000)}\r\n\r\n`),
    );
    assert.equal(answer.status, 431);
    assert.equal(answer.json.field, "headers");
    assert.equal(answer.json.limit, 16384);
  });

  it("invalid JSON, an unknown route and a handler's refusal are problems too", async () => {
    const badJson = firstAnswer(await exchange(port, `${post(5)}{nope`));
    assert.equal(badJson.status, 400);
    assertProblem(badJson);
    assert.equal(badJson.json.field, "body");
    const missing = firstAnswer(await exchange(port, "GET /nowhere HTTP/1.1\r\nhost: x\r\n\r\n"));
    assert.equal(missing.status, 404);
    assertProblem(missing);
    const refused = firstAnswer(await exchange(port, "GET /refused HTTP/1.1\r\nhost: x\r\n\r\n"));
    assert.equal(refused.status, 409);
    assertProblem(refused);
    assert.equal(refused.headers["retry-after"], "2");
    assert.equal(refused.json.field, "name");
  });
});

describe("an oversized body that stops arriving", () => {
  it("gets its 413 once the discard bound passes, and the connection closes", async () => {
    const app = await server(300);
    try {
      // Says 10 MB, sends 100 KB, then waits for the answer.
      const raw = await exchange(portOf(app.server), post(10_000_000), 100_000);
      const answer = firstAnswer(raw);
      assert.equal(answer.status, 413);
      assert.equal(answer.headers.connection, "close");
    } finally {
      await app.close();
    }
  });
});

describe("a raw node:http server with answerClientError", () => {
  it("answers a malformed request with a problem", async () => {
    const raw = createServer((_req, res) => res.end("ok"));
    raw.on("clientError", (err, socket) => answerClientError(err, socket));
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    try {
      const answer = firstAnswer(await exchange(portOf(raw), "NOT HTTP AT ALL\r\n\r\n"));
      assert.equal(answer.status, 400);
      assertProblem(answer);
      assert.equal(answer.json.status, 400);
    } finally {
      raw.closeAllConnections();
      await new Promise((resolve) => raw.close(resolve));
    }
  });
});
