/**
 * Requests no client library would send, to every HTTP server of the tenantry serving the home
 * cluster, over real sockets: bodies over each server's limit (sizes drawn from bands: just over,
 * and between 600 KiB and 20 MB) sent whole before the answer is read, path segments past the
 * router's limit, malformed URLs, request lines and headers. Each gets an RFC 9457 problem naming
 * the limit where one applies — never a cut connection, a bare status line or a framework's own
 * JSON. The gateway, a Kubernetes API, answers Kubernetes' Status instead. The seed is printed;
 * TENANTRY_FUZZ_SEED replays a run.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { startTestGateway, type TestGateway } from "../gateway/support.js";
import { testEnvironment, testKubeConfig, webhookClientOf } from "../support/clusters.js";
import { assertProblem, exchange, firstAnswer, type RawTarget } from "../support/raw-http.js";
import { seeded } from "../support/seeded.js";

const SEED = process.env.TENANTRY_FUZZ_SEED ? Number(process.env.TENANTRY_FUZZ_SEED) : Date.now() % 2 ** 31;
/** Sizes and lengths drawn again from the seed. */
const draw = seeded(SEED);
const between = (low: number, high: number) => low + Math.floor(draw() * (high - low + 1));

const NODE_MAX_HEADER_SIZE = 16 * 1024;
const MAX_PARAM_LENGTH = 1024;

interface Server {
  name: string;
  target: () => Promise<RawTarget | undefined>;
  /** A route that reads a body, and the largest body it takes. */
  post: string;
  bodyLimit: number;
  /** A route with a path parameter ({} is where the parameter goes), if the server has one. */
  param?: string;
  /** What a segment over the router's limit gets, when not its 414 (a catch-all route takes it). */
  longSegment?: number;
  /** A path no route serves, and what it gets (default 404). */
  missing?: { path: string; status: number };
}

const env = () => testEnvironment();
function plain(url: string | undefined): RawTarget | undefined {
  if (!url) return undefined;
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port) };
}
function secure(url: string | undefined, ca: string | undefined): RawTarget | undefined {
  const target = plain(url);
  return target && ca ? { ...target, tls: { ca } } : undefined;
}
async function webhookCa(): Promise<string> {
  const secret = await testKubeConfig("home")
    .makeApiClient(CoreV1Api)
    .readNamespacedSecret({ name: "tenantry-webhook-tls", namespace: "tenantry-system" });
  return Buffer.from(secret.data!["ca.crt"]!, "base64").toString();
}

const SERVERS: Server[] = [
  {
    name: "runtimes Admin API",
    target: async () => plain(env().tenantry.runtimesAdminUrl),
    post: "/services/fuzz/fuzz/one",
    bodyLimit: 64 * 1024,
    param: "/services/{}",
  },
  {
    name: "runtimes Admin API through the runtimes proxy",
    target: async () => plain(env().tenantry.runtimesProxyUrl),
    post: "/services/fuzz/fuzz/one",
    bodyLimit: 64 * 1024,
    param: "/services/{}",
  },
  {
    name: "logical-clouds API (DCM)",
    target: async () => secure(env().tenantry.logicalCloudsUrl, env().tenantry.logicalCloudsCaPem),
    post: "/v2/projects",
    bodyLimit: 256 * 1024,
    param: "/v2/projects/{}",
  },
  {
    name: "identity and access",
    target: async () => secure(env().tenantry.accessUrl, env().tenantry.accessCaPem),
    post: "/identity/v1/login",
    bodyLimit: 1024 * 1024,
  },
  {
    name: "admission webhooks",
    // As kube-apiserver, the one caller the webhook server reads a body from (others get a 401 first).
    target: async () => {
      const target = secure(env().tenantry.webhookUrl, await webhookCa());
      const client = webhookClientOf("home");
      return (
        target && {
          ...target,
          tls: {
            ...target.tls!,
            cert: readFileSync(client.certFile, "utf8"),
            key: readFileSync(client.keyFile, "utf8"),
          },
        }
      );
    },
    post: "/validate/cluster",
    bodyLimit: 8 * 1024 * 1024,
  },
  {
    name: "dashboard",
    target: async () => plain(env().tenantry.dashboardUrl),
    post: "/api/login",
    bodyLimit: 64 * 1024,
    param: "/api/tenants/{}",
    // The catch-all /api/* takes what /api/tenants/:name cannot: the session check answers first.
    longSegment: 401,
    // Every other path is a page of the client; the API wants a session first.
    missing: { path: "/api/no/such/route", status: 401 },
  },
];

const head = (method: string, path: string, more = "") =>
  `${method} ${path} HTTP/1.1\r\nhost: tenantry\r\n${more}\r\n`;
const postHead = (path: string, bytes: number) =>
  head("POST", path, `content-type: application/json\r\ncontent-length: ${bytes}\r\n`);

/** Request lines, headers and bodies node's parser refuses (the body's to a route that reads it). */
const malformed = (post: string) => [
  "GET /healthz HTTP/9.9\r\nhost: x\r\n\r\n",
  "G\u0000T / HTTP/1.1\r\nhost: x\r\n\r\n",
  "GET / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nabc",
  `POST ${post} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n`,
  "GET / HTTP/1.1\r\nbad header without colon\r\n\r\n",
  "\u0016\u0003\u0001 not http at all\r\n\r\n",
];

describe(`bad requests to every server get problems (seed ${SEED})`, () => {
  before(() => {
    process.stdout.write(`bad-requests seed ${SEED} (replay with TENANTRY_FUZZ_SEED=${SEED})\n`);
  });

  for (const server of SERVERS) {
    describe(server.name, () => {
      const bands = [
        ["just over the limit", between(server.bodyLimit + 1, 2 * server.bodyLimit)],
        ["between 600 KiB and 20 MB", between(Math.max(600 * 1024, server.bodyLimit + 1), 20 * 1000 * 1000)],
        ["20 MB", 20 * 1000 * 1000],
      ] as const;
      for (const [band, bytes] of bands) {
        it(`a body ${band} (${bytes} bytes), sent whole before reading: 413 naming the limit`, async (t) => {
          const target = await server.target();
          if (!target) return t.skip("not served in this run");
          const answer = firstAnswer(await exchange(target, postHead(server.post, bytes), bytes));
          assert.equal(answer.status, 413, answer.body);
          assertProblem(answer);
          assert.equal(answer.json.field, "body");
          assert.equal(answer.json.limit, server.bodyLimit);
        });
      }

      it("a malformed URL, an unknown route: problems", async (t) => {
        const target = await server.target();
        if (!target) return t.skip("not served in this run");
        const missing = server.missing ?? { path: "/no/such/route", status: 404 };
        const unknown = firstAnswer(await exchange(target, head("GET", missing.path)));
        assert.equal(unknown.status, missing.status, unknown.body);
        assertProblem(unknown);
        if (!server.param) return;
        const bad = firstAnswer(await exchange(target, head("GET", server.param.replace("{}", "%zz%"))));
        assert.equal(bad.status, 400, bad.body);
        assertProblem(bad);
        assert.equal(bad.json.field, "path");
      });

      if (server.param) {
        it(`a path segment over ${MAX_PARAM_LENGTH} characters: 414 naming the limit`, async (t) => {
          const target = await server.target();
          if (!target) return t.skip("not served in this run");
          const segment = "a".repeat(between(MAX_PARAM_LENGTH + 1, 4 * MAX_PARAM_LENGTH));
          const answer = firstAnswer(
            await exchange(target, head("GET", server.param!.replace("{}", segment))),
          );
          assertProblem(answer);
          if (server.longSegment) {
            assert.equal(answer.status, server.longSegment, answer.body);
            return;
          }
          assert.equal(answer.status, 414, answer.body);
          assert.equal(answer.json.field, "path");
          assert.equal(answer.json.limit, MAX_PARAM_LENGTH);
        });
      }

      it("headers over node's limit: 431 naming the limit", async (t) => {
        const target = await server.target();
        if (!target) return t.skip("not served in this run");
        const filler = "h".repeat(between(NODE_MAX_HEADER_SIZE, 4 * NODE_MAX_HEADER_SIZE));
        const answer = firstAnswer(await exchange(target, head("GET", "/", `x-filler: ${filler}\r\n`)));
        assert.equal(answer.status, 431, answer.body);
        assertProblem(answer);
        assert.equal(answer.json.limit, NODE_MAX_HEADER_SIZE);
      });

      it("malformed requests: 400 problems", async (t) => {
        const target = await server.target();
        if (!target) return t.skip("not served in this run");
        for (const request of malformed(server.post)) {
          const answer = firstAnswer(await exchange(target, request));
          assert.equal(answer.status, 400, `${JSON.stringify(request)}: ${answer.body}`);
          assertProblem(answer);
        }
      });
    });
  }

  describe("tenant gateway (a Kubernetes API: Status, as kube-apiserver answers)", () => {
    let gateway: TestGateway;
    let target: RawTarget;
    before(async () => {
      gateway = await startTestGateway();
      const { hostname, port } = new URL(gateway.gateway.url);
      target = { host: hostname, port: Number(port), tls: { ca: gateway.gateway.caPem } };
    });
    after(() => gateway.stop());

    it("malformed requests and headers over the limit: a Status with the code", async () => {
      for (const [request, code] of [
        // A bad chunk is left out: the gateway streams bodies on, and may refuse the request first.
        ...malformed("/")
          .filter((r) => !r.includes("chunked"))
          .map((r) => [r, 400] as const),
        [head("GET", "/api", `x-filler: ${"h".repeat(2 * NODE_MAX_HEADER_SIZE)}\r\n`), 431] as const,
      ]) {
        const answer = firstAnswer(await exchange(target, request));
        assert.equal(answer.status, code, `${JSON.stringify(request)}: ${answer.body}`);
        assert.equal(answer.json?.kind, "Status", answer.body);
        assert.equal(answer.json.code, code);
        assert.equal(typeof answer.json.message, "string");
      }
    });
  });
});
