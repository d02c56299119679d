import { createReadStream, existsSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { type CertificateAuthority, issueCertificate } from "../../pki/index.js";
import type { PodRuntime } from "./pod-runtime.js";

/**
 * The part of the kubelet API that kube-apiserver calls for `kubectl logs` (pods/log):
 * `/containerLogs/{namespace}/{pod}/{container}` with follow, previous, tailLines and limitBytes.
 * Served over TLS on the node's address with a certificate of the cluster's CA; kube-apiserver of a local
 * cluster sends no client certificate to kubelets, so nothing else is asked of the caller.
 */
export async function serveKubeletApi(options: {
  /** The node's InternalIP, where kube-apiserver dials it. */
  address: string;
  port: number;
  ca: CertificateAuthority;
  nodeName: string;
  runtime(namespace: string, name: string): PodRuntime | undefined;
  logger: Logger;
}): Promise<Server> {
  const serving = await issueCertificate(options.ca, {
    commonName: `system:node:${options.nodeName}`,
    dnsNames: [options.nodeName, "localhost"],
    ipAddresses: [...new Set([options.address, "127.0.0.1"])],
    usage: "server",
    validDays: 3650,
  });
  const server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    const url = new URL(req.url ?? "/", "https://kubelet");
    if (url.pathname === "/healthz") {
      res.end("ok");
      return;
    }
    const match = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (req.method !== "GET" || !match) {
      fail(
        res,
        404,
        `the process node's kubelet serves container logs only, not ${req.method} ${url.pathname}`,
      );
      return;
    }
    const [namespace, name, container] = match.slice(1).map(decodeURIComponent) as [string, string, string];
    const runtime = options.runtime(namespace, name);
    const previous = url.searchParams.get("previous") === "true";
    const log = runtime?.logFile(container, previous);
    if (!runtime || !log || !existsSync(log.file)) {
      fail(
        res,
        404,
        previous
          ? `previous terminated container "${container}" in pod "${name}" not found`
          : `container "${container}" in pod "${name}" has no log (it has not started, or is not on this node)`,
      );
      return;
    }
    const tail = url.searchParams.has("tailLines") ? Number(url.searchParams.get("tailLines")) : undefined;
    const limit = url.searchParams.has("limitBytes") ? Number(url.searchParams.get("limitBytes")) : undefined;
    const follow = url.searchParams.get("follow") === "true" && log.running;
    res.writeHead(200, { "Content-Type": "text/plain" });
    void streamLog(log.file, {
      tail,
      limit,
      follow,
      alive: () => runtime.logFile(container, false)?.running === true,
      res,
    }).catch((err) => {
      options.logger.debug({ error: String(err) }, "log stream ended");
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.address, () => resolve());
  });
  return server;
}

function fail(res: ServerResponse, code: number, message: string): void {
  res.writeHead(code, { "Content-Type": "text/plain" });
  res.end(message);
}

/** Where the last `lines` lines of the file begin. */
export async function tailOffset(file: string, lines: number): Promise<number> {
  const size = statSync(file).size;
  if (lines <= 0) return size;
  const handle = await open(file, "r");
  try {
    let position = size;
    let found = 0;
    const chunk = Buffer.alloc(64 * 1024);
    // A final newline ends the last line; it does not start another.
    let skipFinal = true;
    while (position > 0) {
      const length = Math.min(chunk.length, position);
      position -= length;
      await handle.read(chunk, 0, length, position);
      for (let i = length - 1; i >= 0; i--) {
        if (chunk[i] !== 0x0a) {
          skipFinal = false;
          continue;
        }
        if (skipFinal) {
          skipFinal = false;
          continue;
        }
        found++;
        if (found === lines) return position + i + 1;
      }
    }
    return 0;
  } finally {
    await handle.close();
  }
}

async function streamLog(
  file: string,
  options: { tail?: number; limit?: number; follow: boolean; alive(): boolean; res: ServerResponse },
): Promise<void> {
  const { res } = options;
  let position = options.tail !== undefined ? await tailOffset(file, options.tail) : 0;
  let remaining = options.limit ?? Number.POSITIVE_INFINITY;
  let closed = false;
  res.on("close", () => {
    closed = true;
  });
  for (;;) {
    const size = statSync(file).size;
    if (size > position && remaining > 0) {
      const end = Math.min(size, position + remaining);
      await new Promise<void>((resolve, reject) => {
        const stream = createReadStream(file, { start: position, end: end - 1 });
        stream.on("error", reject);
        stream.on("end", resolve);
        stream.pipe(res, { end: false });
      });
      remaining -= end - position;
      position = end;
    }
    if (!options.follow || closed || remaining <= 0 || (!options.alive() && statSync(file).size <= position))
      break;
    await sleep(250);
  }
  res.end();
}
