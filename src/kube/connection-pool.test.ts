import assert from "node:assert/strict";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { TLSSocket } from "node:tls";
import { KubeConfig } from "@kubernetes/client-node";
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from "../pki/index.js";
import { ClusterClient } from "./clients.js";

/**
 * A stand-in API server over mutual TLS that answers every path with a Namespace and records, per
 * request, the TLS connection it came on, the client certificate's common name and the
 * Authorization header.
 */
interface Seen {
  connection: number;
  commonName: string;
  authorization: string | undefined;
}

let server: Server;
let url: string;
let caPem: string;
let clientCerts: KeyPairPem[];
const seen: Seen[] = [];

before(async () => {
  const ca = await createCertificateAuthority("pool-test-ca");
  caPem = ca.certPem;
  const serving = await issueCertificate(ca, {
    commonName: "api",
    ipAddresses: ["127.0.0.1"],
    usage: "server",
  });
  clientCerts = await Promise.all(
    ["first", "rotated"].map((commonName) => issueCertificate(ca, { commonName, usage: "client" })),
  );
  const connections = new WeakMap<object, number>();
  let next = 0;
  server = createServer(
    {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const socket = req.socket as TLSSocket;
      if (!connections.has(socket)) connections.set(socket, next++);
      seen.push({
        connection: connections.get(socket)!,
        commonName: String(socket.getPeerCertificate().subject.CN),
        authorization: req.headers.authorization,
      });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } }));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function kubeConfig(cert: KeyPairPem, token?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      { name: "c", server: url, caData: Buffer.from(caPem).toString("base64"), skipTLSVerify: false },
    ],
    users: [
      {
        name: "admin",
        certData: Buffer.from(cert.certPem).toString("base64"),
        keyData: Buffer.from(cert.keyPem).toString("base64"),
        ...(token ? { token } : {}),
      },
    ],
    contexts: [{ name: "ctx", cluster: "c", user: "admin" }],
    currentContext: "ctx",
  });
  return kc;
}

/** What the server saw during `work`. */
async function observe(work: () => Promise<unknown>): Promise<Seen[]> {
  const from = seen.length;
  await work();
  return seen.slice(from);
}

describe("PooledKubeConfig", () => {
  test("a cluster client's requests share keep-alive connections and carry the user's credentials", async () => {
    const client = new ClusterClient("home", kubeConfig(clientCerts[0]!, "secret-token"));
    try {
      const requests = await observe(async () => {
        for (let i = 0; i < 10; i++) await client.core.readNamespace({ name: "default" });
        await client.objects.getText("/version");
      });
      assert.equal(requests.length, 11);
      // undici may open a second connection when the next request comes before the last answer's
      // connection was handed back; client-node's own dispatchers open one per request.
      const connections = new Set(requests.map((r) => r.connection)).size;
      assert.ok(connections <= 2, `${connections} TLS connections for 11 requests`);
      for (const request of requests) {
        assert.equal(request.commonName, "first");
        assert.equal(request.authorization, "Bearer secret-token");
      }
    } finally {
      await client.close();
    }
  });

  test("a rotated client certificate gets connections of its own", async () => {
    const client = new ClusterClient("home", kubeConfig(clientCerts[0]!));
    try {
      const requests = await observe(async () => {
        await client.core.readNamespace({ name: "default" });
        const user = client.kubeConfig.getCurrentUser()!;
        // Users are plain objects client-node reads per request, as after a renewal rewrote them.
        Object.assign(user, {
          certData: Buffer.from(clientCerts[1]!.certPem).toString("base64"),
          keyData: Buffer.from(clientCerts[1]!.keyPem).toString("base64"),
        });
        await client.core.readNamespace({ name: "default" });
      });
      assert.deepEqual(
        requests.map((r) => r.commonName),
        ["first", "rotated"],
      );
      assert.notEqual(requests[0]!.connection, requests[1]!.connection);
    } finally {
      await client.close();
    }
  });

  test("watches go through the pool's credentials too", async () => {
    const client = new ClusterClient("home", kubeConfig(clientCerts[0]!, "watch-token"));
    try {
      const requests = await observe(
        () =>
          new Promise<void>((resolve, reject) => {
            // The stand-in answers with one object and ends the stream: the watch is done.
            client.watch
              .watch(
                "/api/v1/namespaces",
                {},
                () => {},
                (err) => (err ? reject(err) : resolve()),
              )
              .catch(reject);
          }),
      );
      assert.equal(requests.length, 1);
      assert.equal(requests[0]!.authorization, "Bearer watch-token");
      assert.equal(requests[0]!.commonName, "first");
    } finally {
      await client.close();
    }
  });
});
