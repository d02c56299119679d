import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";

/**
 * Minimal stand-in for a Kubernetes API server on loopback, for unit tests of the code that
 * talks HTTP through client-node. It serves discovery for a few kinds and hands every
 * other request to the test's handler. Not exported from index.ts.
 */

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: string;
}

/** Return a reply, or take over `response` (e.g. to stream a watch) and return undefined. */
export type FakeHandler = (
  request: RecordedRequest,
  response: ServerResponse,
) => { status: number; body: unknown } | undefined | Promise<{ status: number; body: unknown } | undefined>;

const DISCOVERY: Record<string, unknown> = {
  "/api/v1": {
    kind: "APIResourceList",
    groupVersion: "v1",
    resources: [
      { name: "configmaps", namespaced: true, kind: "ConfigMap", verbs: [] },
      { name: "secrets", namespaced: true, kind: "Secret", verbs: [] },
      { name: "namespaces", namespaced: false, kind: "Namespace", verbs: [] },
      { name: "namespaces/status", namespaced: false, kind: "Namespace", verbs: [] },
    ],
  },
  "/apis/example.tenantry.dev/v1": {
    kind: "APIResourceList",
    groupVersion: "example.tenantry.dev/v1",
    resources: [
      { name: "widgets", namespaced: true, kind: "Widget", verbs: [] },
      { name: "widgets/status", namespaced: true, kind: "Widget", verbs: [] },
    ],
  },
};

export function kubeStatus(code: number, reason: string, message = reason): unknown {
  return { kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message };
}

export class FakeApiServer {
  readonly requests: RecordedRequest[] = [];
  handler: FakeHandler = () => ({ status: 404, body: kubeStatus(404, "NotFound") });
  private readonly server: Server;
  private readonly openResponses = new Set<ServerResponse>();

  private constructor() {
    this.server = createServer((req, res) => {
      void this.serve(req, res);
    });
  }

  static async start(): Promise<FakeApiServer> {
    const fake = new FakeApiServer();
    await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** A kubeconfig for this server (plain HTTP needs skipTLSVerify in client-node). */
  kubeConfig(userName = "admin"): KubeConfig {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "fake", server: this.url, skipTLSVerify: true }],
      users: [{ name: userName, token: "test-token" }],
      contexts: [{ name: "fake", cluster: "fake", user: userName }],
      currentContext: "fake",
    });
    return kubeConfig;
  }

  /** Requests other than discovery. */
  apiRequests(): RecordedRequest[] {
    return this.requests.filter((request) => !(request.path in DISCOVERY));
  }

  async close(): Promise<void> {
    for (const response of this.openResponses) response.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? "/", "http://fake");
    const request: RecordedRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body: Buffer.concat(chunks).toString("utf8"),
    };
    this.requests.push(request);
    this.openResponses.add(res);
    res.on("close", () => this.openResponses.delete(res));
    const discovery = DISCOVERY[request.path];
    const reply = discovery ? { status: 200, body: discovery } : await this.handler(request, res);
    if (!reply) return;
    res.writeHead(reply.status, { "content-type": "application/json" });
    res.end(JSON.stringify(reply.body));
  }
}

/** Starts a chunked watch response; write events with {@link writeWatchEvent}. */
export function beginWatchStream(response: ServerResponse): void {
  response.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
  response.flushHeaders();
}

export function writeWatchEvent(response: ServerResponse, type: string, object: unknown): void {
  response.write(`${JSON.stringify({ type, object })}\n`);
}
